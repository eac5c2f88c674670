// Execution: the nests this pass now looks ahead in compute the same results
// with and without it, at distances below, at and above the inner trip
// count: random-access updates in blocks whose streams are advanced in place
// (the look-ahead wraps around to the next block), updates walking one
// stream in blocks (it continues into the next blocks, up to the nest's
// end), and a hash join over bucket chains (the bucket prefetched from the
// probe loop). Every array the look-ahead loads from ends right before a
// PROT_NONE page, so a look-ahead load past the last index the program
// reads faults.
// REQUIRES: clang, host-x86_64
// RUN: %clang -O2 -S -emit-llvm %s -o %t.ll
// RUN: %clang -O2 %t.ll -o %t.o2 && %t.o2 > %t.before
// RUN: opt %loadaccel -passes='accel-prefetch<distance=4>' %t.ll -o %t.d4.bc
// RUN: %clang -O2 %t.d4.bc -o %t.d4 && %t.d4 > %t.after4
// RUN: diff %t.before %t.after4
// RUN: opt %loadaccel -passes='accel-prefetch<distance=200>' %t.ll -o %t.d200.bc
// RUN: %clang -O2 %t.d200.bc -o %t.d200 && %t.d200 > %t.after200
// RUN: diff %t.before %t.after200
// RUN: opt %loadaccel -passes='accel-prefetch<distance=4>' -pass-remarks=accel-prefetch \
// RUN:   -disable-output %t.ll 2>&1 | FileCheck %s --check-prefix=REMARK
// RUN: FileCheck %s --input-file=%t.before

// REMARK-DAG: across the iterations of the outer loop
// REMARK-DAG: prefetched {{.*}}, 4 iterations ahead, 1 line{{$}}
// CHECK: in_place
// CHECK: blocks
// CHECK: chains

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#define PAGE 4096

// n bytes ending right before an inaccessible page.
static void *guarded(size_t n) {
  size_t span = (n + PAGE - 1) / PAGE * PAGE;
  char *p = mmap(0, span + PAGE, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    return 0;
  mprotect(p + span, PAGE, PROT_NONE);
  return p + span - n;
}

static uint64_t step(uint64_t v) {
  return (v << 1) ^ ((int64_t)v < 0 ? 7 : 0);
}

__attribute__((noinline)) void in_place(uint64_t *restrict t, uint64_t mask,
                                        uint64_t *restrict ran, long nb) {
  for (long b = 0; b < nb; b++)
    for (long j = 0; j < 128; j++) {
      ran[j] = step(ran[j]);
      t[ran[j] & mask] ^= ran[j];
    }
}

__attribute__((noinline)) void blocks(uint64_t *restrict t, uint64_t mask,
                                      const uint64_t *restrict ran, long nb) {
  for (long b = 0; b < nb; b++)
    for (long j = 0; j < 64; j++) {
      uint64_t v = ran[b * 64 + j];
      t[v & mask] ^= v;
    }
}

typedef struct Bucket {
  uint32_t count, pad;
  struct {
    uint32_t key, payload;
  } tuples[2];
  struct Bucket *next;
} Bucket;

__attribute__((noinline)) uint64_t chains(const Bucket *restrict buckets,
                                          uint32_t mask,
                                          const uint32_t *restrict keys,
                                          long n) {
  uint64_t sum = 0;
  for (long i = 0; i < n; i++) {
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

static uint64_t digest(const uint64_t *a, long n) {
  uint64_t h = 0;
  for (long i = 0; i < n; i++)
    h = h * 1000003 + a[i];
  return h;
}

int main(void) {
  enum { TABLE = 1 << 12, MAXB = 9 };
  uint64_t *t = guarded(TABLE * sizeof(uint64_t));
  uint64_t *ran = guarded(128 * sizeof(uint64_t));
  uint64_t *stream = guarded(MAXB * 64 * sizeof(uint64_t));
  if (!t || !ran || !stream)
    return 1;
  for (long nb = 1; nb <= MAXB; nb += 4) {
    memset(t, 0, TABLE * sizeof(uint64_t));
    for (int j = 0; j < 128; j++)
      ran[j] = 0x9E3779B97F4A7C15ull * (j + 1);
    in_place(t, TABLE - 1, ran, nb);
    printf("in_place nb=%ld %llu\n", nb, (unsigned long long)digest(t, TABLE));
  }
  for (long i = 0; i < MAXB * 64; i++)
    stream[i] = 0xD1B54A32D192ED03ull * (i + 3);
  for (long nb = 1; nb <= MAXB; nb += 4) {
    memset(t, 0, TABLE * sizeof(uint64_t));
    blocks(t, TABLE - 1, stream + (MAXB - nb) * 64, nb);
    printf("blocks nb=%ld %llu\n", nb, (unsigned long long)digest(t, TABLE));
  }
  enum { NB = 256, NBUILD = 700 };
  Bucket *buckets = guarded(NB * sizeof(Bucket));
  static Bucket overflow[NBUILD];
  memset(buckets, 0, NB * sizeof(Bucket));
  int used = 0;
  for (int i = 0; i < NBUILD; i++) {
    uint32_t k = (uint32_t)(0x9E3779B9u * (i + 1));
    Bucket *b = &buckets[k & (NB - 1)];
    if (b->count == 2) {
      overflow[used] = *b;
      b->count = 0;
      b->next = &overflow[used++];
    }
    b->tuples[b->count].key = k;
    b->tuples[b->count].payload = i + 1;
    b->count++;
  }
  enum { NPROBE = 1000 };
  uint32_t *keys = guarded(NPROBE * sizeof(uint32_t));
  for (int i = 0; i < NPROBE; i++)
    keys[i] = (uint32_t)(0x9E3779B9u * ((i * 7) % (NBUILD + 100) + 1));
  for (long n = 1; n <= NPROBE; n += 333)
    printf("chains n=%ld %llu\n", n,
           (unsigned long long)chains(buckets, NB - 1, keys + NPROBE - n, n));
  return 0;
}
