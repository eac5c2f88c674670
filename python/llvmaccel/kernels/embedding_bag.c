/* Embedding-bag sum, as torch.nn.functional.embedding_bag(mode="sum"):
 * out[b, :] = sum of table[indices[j], :] for j in [offsets[b], offsets[b+1]).
 * Rows of 64 floats (256 bytes: four cache lines). */
#include <stdint.h>

#define DIM 64

void embedding_bag_sum(const float *table, const int64_t *indices,
                       const int64_t *offsets, int64_t num_bags, float *out) {
  for (int64_t b = 0; b < num_bags; b++) {
    float *o = out + b * DIM;
    for (int k = 0; k < DIM; k++)
      o[k] = 0.0f;
    for (int64_t j = offsets[b]; j < offsets[b + 1]; j++) {
      const float *row = table + indices[j] * DIM;
      for (int k = 0; k < DIM; k++)
        o[k] += row[k];
    }
  }
}
