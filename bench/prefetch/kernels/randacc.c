/* Random-access table updates in blocks (the shape of HPCC RandomAccess):
 * 128 pseudo-random streams, started from seeds[], advance in place once per
 * block, each value XORed into the table entry it selects. Returns the XOR
 * of the streams' final values (the table is updated in place: two calls
 * cancel out). */
#include <stdint.h>

#define RA_POLY UINT64_C(0x0000000000000007)

static inline uint64_t ra_step(uint64_t v) {
  return (v << 1) ^ ((int64_t)v < 0 ? RA_POLY : 0);
}

uint64_t randacc(uint64_t *table, uint64_t mask, const uint64_t *seeds,
                 int64_t nblocks) {
  uint64_t ran[128];
  for (int j = 0; j < 128; j++)
    ran[j] = seeds[j];
  for (int64_t b = 0; b < nblocks; b++) {
    for (int64_t j = 0; j < 128; j++) {
#ifdef HAND_PREFETCH
      /* Entry (j + d) mod 128 holds the value the block that uses it next
       * advances: this block's for j + d < 128, else the next block's. */
      __builtin_prefetch(&table[ra_step(ran[(j + PF_DIST) & 127]) & mask]);
#endif
      ran[j] = ra_step(ran[j]);
      table[ran[j] & mask] ^= ran[j];
    }
  }
  uint64_t check = 0;
  for (int j = 0; j < 128; j++)
    check ^= ran[j];
  return check;
}
