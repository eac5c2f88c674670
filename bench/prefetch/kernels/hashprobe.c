/* Hash-join probe: look every key up in an open-addressing hash table
 * (linear probing, multiplicative hash, key 0 = empty slot). Returns the sum
 * of the payloads of the keys found; *matches gets their count. */
#include <stdint.h>

typedef struct {
  uint64_t key;
  uint64_t payload;
} Slot;

uint64_t hash_probe(const Slot *table, int64_t log2_slots, const uint64_t *keys,
                    int64_t n, int64_t *matches) {
  const uint64_t mask = (UINT64_C(1) << log2_slots) - 1;
  uint64_t sum = 0;
  int64_t found = 0;
  for (int64_t i = 0; i < n; i++) {
#ifdef HAND_PREFETCH
    int64_t ahead = i + PF_DIST < n ? i + PF_DIST : n - 1;
    __builtin_prefetch(&table[(keys[ahead] * 0x9E3779B97F4A7C15ull) >> (64 - log2_slots)]);
#endif
    uint64_t k = keys[i];
    uint64_t h = (k * 0x9E3779B97F4A7C15ull) >> (64 - log2_slots);
    while (table[h].key != 0) {
      if (table[h].key == k) {
        sum += table[h].payload;
        found++;
        break;
      }
      h = (h + 1) & mask;
    }
  }
  *matches = found;
  return sum;
}
