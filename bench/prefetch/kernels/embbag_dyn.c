/* Embedding-bag sum with the row width a run-time argument (dim floats);
 * otherwise the same as embbag.c. Returns the sum of out[:, 0]. */
#include <stdint.h>

double embbag_sum_dyn(const float *table, const int64_t *indices,
                      const int64_t *offsets, int64_t num_bags, int64_t dim,
                      float *out) {
  double check = 0.0;
#ifdef HAND_PREFETCH
  const int64_t total = offsets[num_bags];
#endif
  for (int64_t b = 0; b < num_bags; b++) {
    float *o = out + b * dim;
    for (int64_t k = 0; k < dim; k++)
      o[k] = 0.0f;
    for (int64_t j = offsets[b]; j < offsets[b + 1]; j++) {
#ifdef HAND_PREFETCH
      int64_t ahead = j + PF_DIST < total ? j + PF_DIST : total - 1;
      const char *next = (const char *)(table + indices[ahead] * dim);
      for (int64_t l = 0; l < dim * (int64_t)sizeof(float); l += 64)
        __builtin_prefetch(next + l);
#endif
      const float *row = table + indices[j] * dim;
      for (int64_t k = 0; k < dim; k++)
        o[k] += row[k];
    }
    check += o[0];
  }
  return check;
}
