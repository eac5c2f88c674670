/* Single-probe hash lookup (a direct-mapped table of (key, payload) slots,
 * as a cache or a perfect-hash join): the vectorizer turns it into gathers
 * where the target has them. Returns the sum of the payloads of the keys
 * found. */
#include <stdint.h>

typedef struct {
  uint64_t key;
  uint64_t payload;
} Entry;

uint64_t hash_lookup(const Entry *table, int64_t log2_slots,
                     const uint64_t *keys, int64_t n) {
  uint64_t sum = 0;
  for (int64_t i = 0; i < n; i++) {
#ifdef HAND_PREFETCH
    int64_t ahead = i + PF_DIST < n ? i + PF_DIST : n - 1;
    __builtin_prefetch(&table[(keys[ahead] * 0x9E3779B97F4A7C15ull) >> (64 - log2_slots)]);
#endif
    uint64_t k = keys[i];
    uint64_t h = (k * 0x9E3779B97F4A7C15ull) >> (64 - log2_slots);
    if (table[h].key == k)
      sum += table[h].payload;
  }
  return sum;
}
