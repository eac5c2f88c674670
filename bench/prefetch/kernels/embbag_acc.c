/* Embedding-bag sum as embbag.c, but summing each bag in a local array (which
 * the compiler keeps in vector registers) before storing it:
 * out[b, :] = sum over j in [offsets[b], offsets[b+1]) of table[indices[j], :]
 * with rows of EMB_DIM floats. Returns the sum of out[:, 0] as a checksum. */
#include <stdint.h>

#define EMB_DIM 64

double embbag_sum_acc(const float *table, const int64_t *indices,
                  const int64_t *offsets, int64_t num_bags, float *out) {
  double check = 0.0;
#ifdef HAND_PREFETCH
  const int64_t total = offsets[num_bags];
#endif
  for (int64_t b = 0; b < num_bags; b++) {
    float acc[EMB_DIM] = {0};
    for (int64_t j = offsets[b]; j < offsets[b + 1]; j++) {
#ifdef HAND_PREFETCH
      int64_t ahead = j + PF_DIST < total ? j + PF_DIST : total - 1;
      const char *next = (const char *)(table + indices[ahead] * EMB_DIM);
      for (int l = 0; l < EMB_DIM * (int)sizeof(float); l += 64)
        __builtin_prefetch(next + l);
#endif
      const float *row = table + indices[j] * EMB_DIM;
      for (int k = 0; k < EMB_DIM; k++)
        acc[k] += row[k];
    }
    for (int k = 0; k < EMB_DIM; k++)
      out[b * EMB_DIM + k] = acc[k];
    check += acc[0];
  }
  return check;
}
