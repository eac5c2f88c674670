/* Data generation for the prefetch benchmarks (not a benchmark kernel).
 *
 * Compiled once at -O3 without any prefetch pass. The harness allocates every
 * buffer with numpy (so PyTorch can share it) and fills it here, which is much
 * faster than numpy for the hash table build and fully deterministic
 * (splitmix64, seeded by the harness). */
#include <stdint.h>
#include <string.h>

static inline uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

/* Uniform floats in [-1, 1). */
void fill_f32(float *a, int64_t n, uint64_t seed) {
  for (int64_t i = 0; i < n; i++)
    a[i] = (float)((int64_t)(splitmix64(seed + (uint64_t)i) >> 40) - (1 << 23)) /
           (float)(1 << 23);
}

void fill_f64(double *a, int64_t n, uint64_t seed) {
  for (int64_t i = 0; i < n; i++)
    a[i] = (double)((int64_t)(splitmix64(seed + (uint64_t)i) >> 11) -
                    (INT64_C(1) << 52)) / (double)(INT64_C(1) << 52);
}

void fill_u64(uint64_t *a, int64_t n, uint64_t seed) {
  for (int64_t i = 0; i < n; i++)
    a[i] = splitmix64(seed + (uint64_t)i);
}

/* Uniform random indices in [0, range). */
void fill_idx_i64(int64_t *a, int64_t n, int64_t range, uint64_t seed) {
  for (int64_t i = 0; i < n; i++)
    a[i] = (int64_t)(splitmix64(seed + (uint64_t)i) % (uint64_t)range);
}

void fill_idx_i32(int32_t *a, int64_t n, int64_t range, uint64_t seed) {
  for (int64_t i = 0; i < n; i++)
    a[i] = (int32_t)(splitmix64(seed + (uint64_t)i) % (uint64_t)range);
}

/* a[i] = i * step (CSR row pointers, bag offsets). */
void fill_arange_i64(int64_t *a, int64_t n, int64_t step) {
  for (int64_t i = 0; i < n; i++)
    a[i] = i * step;
}

/* ---- hash table: must match hashprobe.c ---- */
typedef struct {
  uint64_t key; /* 0 = empty */
  uint64_t payload;
} Slot;

static inline uint64_t table_key(uint64_t seed, int64_t i) {
  uint64_t k = splitmix64(seed ^ 0xA5A5A5A5A5A5A5A5ull) + (uint64_t)i * 0x9E3779B97F4A7C15ull;
  k = splitmix64(k);
  return k ? k : 1;
}

/* Inserts keys table_key(seed, 0..nkeys-1) with payload i+1 by linear
 * probing into a table of 2^log2_slots slots. Returns the longest probe. */
int64_t hash_build(Slot *table, int64_t log2_slots, int64_t nkeys, uint64_t seed) {
  uint64_t mask = (UINT64_C(1) << log2_slots) - 1;
  int64_t longest = 0;
  memset(table, 0, sizeof(Slot) << log2_slots);
  for (int64_t i = 0; i < nkeys; i++) {
    uint64_t k = table_key(seed, i);
    uint64_t h = (k * 0x9E3779B97F4A7C15ull) >> (64 - log2_slots);
    int64_t steps = 0;
    while (table[h].key != 0 && table[h].key != k) {
      h = (h + 1) & mask;
      steps++;
    }
    table[h].key = k;
    table[h].payload = (uint64_t)i + 1;
    if (steps > longest)
      longest = steps;
  }
  return longest;
}

/* Probe keys: a fraction hit_permille/1000 are keys in the table, the rest
 * (almost surely) are not. */
void hash_probe_keys(uint64_t *keys, int64_t n, int64_t nkeys, uint64_t seed,
                     int64_t hit_permille) {
  for (int64_t i = 0; i < n; i++) {
    uint64_t r = splitmix64(seed * 31 + (uint64_t)i);
    int64_t which = (int64_t)(r % (uint64_t)nkeys);
    if ((int64_t)((r >> 40) % 1000) < hit_permille)
      keys[i] = table_key(seed, which);
    else
      keys[i] = table_key(seed, nkeys + which);
  }
}

/* ---- chained bucket table: must match hashjoin_chain.c ---- */
typedef struct {
  uint32_t key, payload;
} Tuple;

typedef struct Bucket {
  uint32_t count;
  uint32_t pad;
  Tuple tuples[2];
  struct Bucket *next;
} Bucket;

/* Inserts nbuild tuples with keys (uint32) splitmix64(seed, i) and payload
 * i + 1 into 2^log2_buckets buckets (key & mask), full buckets chained to
 * fresh ones from overflow[0..max_overflow). Fills probe[0..nprobe) with
 * keys of random build tuples. Returns the overflow buckets used, or -1 if
 * max_overflow was too small. */
int64_t hj_chain_build(Bucket *buckets, int64_t log2_buckets, Bucket *overflow,
                       int64_t max_overflow, int64_t nbuild, uint32_t *probe,
                       int64_t nprobe, uint64_t seed) {
  uint64_t mask = (UINT64_C(1) << log2_buckets) - 1;
  int64_t used = 0;
  memset(buckets, 0, sizeof(Bucket) << log2_buckets);
  for (int64_t i = 0; i < nbuild; i++) {
    uint32_t k = (uint32_t)splitmix64(seed * 0x100000001B3ull + (uint64_t)i);
    Bucket *b = &buckets[k & mask];
    if (b->count == 2) {
      /* The new bucket goes right after the head: its tuples move there. */
      if (used == max_overflow)
        return -1;
      Bucket *o = &overflow[used++];
      *o = *b;
      b->count = 0;
      b->next = o;
    }
    b->tuples[b->count].key = k;
    b->tuples[b->count].payload = (uint32_t)i + 1;
    b->count++;
  }
  for (int64_t i = 0; i < nprobe; i++) {
    uint64_t which = splitmix64(seed + 77 + (uint64_t)i) % (uint64_t)nbuild;
    probe[i] = (uint32_t)splitmix64(seed * 0x100000001B3ull + which);
  }
  return used;
}

void fill_u32_range(uint32_t *a, int64_t n, uint32_t range, uint64_t seed) {
  for (int64_t i = 0; i < n; i++)
    a[i] = (uint32_t)(splitmix64(seed + (uint64_t)i) % range);
}
