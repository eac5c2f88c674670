/* Hash-join probe over a chained bucket table (the layout of the no-partition
 * join): 32-byte buckets of up to two (key, payload) tuples and an overflow
 * pointer. Each probe key hashes to one bucket; its chain is scanned for
 * matching keys. Returns the sum of the payloads matched. */
#include <stdint.h>

typedef struct {
  uint32_t key, payload;
} Tuple;

typedef struct Bucket {
  uint32_t count;
  uint32_t pad;
  Tuple tuples[2];
  struct Bucket *next;
} Bucket;

uint64_t hj_chain_probe(const Bucket *buckets, uint32_t mask,
                        const uint32_t *keys, int64_t n) {
  uint64_t sum = 0;
  for (int64_t i = 0; i < n; i++) {
#ifdef HAND_PREFETCH
    int64_t ahead = i + PF_DIST < n ? i + PF_DIST : n - 1;
    __builtin_prefetch(&buckets[keys[ahead] & mask]);
#endif
    uint32_t k = keys[i];
    const Bucket *b = &buckets[k & mask];
    do {
      for (uint32_t j = 0; j < b->count; j++)
        if (b->tuples[j].key == k)
          sum += b->tuples[j].payload;
      b = b->next;
    } while (b);
  }
  return sum;
}
