/* Integer-sort key histogram (the counting pass of a bucket or radix sort):
 * count[key[i]]++ over a count array larger than the last-level cache, which
 * is cleared first. Returns a checksum of the counts of the first keys. */
#include <stdint.h>
#include <string.h>

uint64_t key_histogram(const uint32_t *keys, int64_t n, uint32_t *count,
                       int64_t nbuckets) {
  memset(count, 0, (size_t)nbuckets * sizeof(uint32_t));
  for (int64_t i = 0; i < n; i++) {
#ifdef HAND_PREFETCH
    int64_t ahead = i + PF_DIST < n ? i + PF_DIST : n - 1;
    __builtin_prefetch(&count[keys[ahead]], 1);
#endif
    count[keys[i]]++;
  }
  uint64_t check = 0;
  for (int64_t i = 0; i < n && i < 4096; i++)
    check = check * 31 + count[keys[i]];
  return check;
}
