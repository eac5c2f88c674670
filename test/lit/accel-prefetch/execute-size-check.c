// Execution: loops copied for small objects (the work gate's size check)
// compute the same results with and without the pass, over objects below
// and above resident-bytes, so both the prefetching loop and its copy run:
// a key histogram whose counters a memset clears, in-place updates of a
// table indexed by `v & mask`, and a branch-free hash lookup into 2^bits
// slots (`h >> (64 - bits)`). Keys and tables end right before a PROT_NONE
// page, so a look-ahead load past the last index the program reads faults.
// REQUIRES: clang, host-x86_64
// RUN: %clang -O2 -g -S -emit-llvm %s -o %t.ll
// RUN: %clang -O2 %t.ll -o %t.o2 && %t.o2 > %t.before
// RUN: opt %loadaccel -passes='accel-prefetch<min-work=16;distance=16>' %t.ll -o %t.d16.bc
// RUN: %clang -O2 %t.d16.bc -o %t.d16 && %t.d16 > %t.after16
// RUN: diff %t.before %t.after16
// RUN: opt %loadaccel -passes='accel-prefetch<min-work=16;distance=5000>' %t.ll -o %t.d5000.bc
// RUN: %clang -O2 %t.d5000.bc -o %t.d5000 && %t.d5000 > %t.after5000
// RUN: diff %t.before %t.after5000
// RUN: opt %loadaccel -passes='accel-prefetch<min-work=16;distance=16>' -pass-remarks=accel-prefetch \
// RUN:   -disable-output %t.ll 2>&1 | FileCheck %s --check-prefix=REMARK
// RUN: FileCheck %s --input-file=%t.before
// (-g: the remarks name the source's variables and expressions.)

// REMARK-DAG: prefetched count[...] via keys, {{.*}}from a memset of nb * 4 bytes, is compared with resident-bytes (1048576) at run time
// REMARK-DAG: prefetched table[...] via vals, {{.*}}from its index range [0, mask] of 8-byte elements, is compared
// REMARK-DAG: prefetched slots[...] via keys, {{.*}}from its index range [0, 2^(64 - (64 - bits))) of 16-byte elements, is compared
// CHECK: histogram 1000
// CHECK: histogram 1000000
// CHECK: updates 1024
// CHECK: updates 1048576
// CHECK: lookup 10
// CHECK: lookup 20

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
  mprotect(p + span, PAGE, PROT_NONE);
  return p + span - n;
}

static uint64_t state = 88172645463325252ull;
static uint64_t next(void) {
  state ^= state << 13;
  state ^= state >> 7;
  state ^= state << 17;
  return state;
}

__attribute__((noinline)) uint64_t histogram(const uint32_t *keys, int64_t n,
                                             uint32_t *count, int64_t nb) {
  memset(count, 0, (size_t)nb * sizeof(uint32_t));
  for (int64_t i = 0; i < n; i++)
    count[keys[i]]++;
  uint64_t check = 0;
  for (int64_t i = 0; i < nb; i++)
    check = check * 31 + count[i];
  return check;
}

__attribute__((noinline)) void updates(uint64_t *table, uint64_t mask,
                                       const uint64_t *vals, int64_t n) {
  for (int64_t i = 0; i < n; i++)
    table[vals[i] & mask] ^= vals[i];
}

typedef struct {
  uint64_t key, payload;
} Slot;

__attribute__((noinline)) uint64_t lookup(const Slot *slots, int bits,
                                          const uint64_t *keys, int64_t n) {
  uint64_t sum = 0;
  for (int64_t i = 0; i < n; i++) {
    uint64_t h = (keys[i] * 0x9E3779B97F4A7C15ull) >> (64 - bits);
    uint64_t p = slots[h].payload;
    sum += slots[h].key == keys[i] ? p : 0;
  }
  return sum;
}

int main(void) {
  const int64_t n = 5000;
  // Counters of 4 KB and of 4 MB: below and above resident-bytes.
  for (int64_t nb = 1000; nb <= 1000000; nb *= 1000) {
    uint32_t *keys = guarded(n * sizeof(uint32_t));
    for (int64_t i = 0; i < n; i++)
      keys[i] = next() % nb;
    uint32_t *count = guarded(nb * sizeof(uint32_t));
    printf("histogram %lld %llu\n", (long long)nb,
           (unsigned long long)histogram(keys, n, count, nb));
  }
  // Tables of 8 KB and of 8 MB.
  for (uint64_t size = 1024; size <= 1048576; size *= 1024) {
    uint64_t *vals = guarded(n * sizeof(uint64_t));
    for (int64_t i = 0; i < n; i++)
      vals[i] = next();
    uint64_t *table = guarded(size * sizeof(uint64_t));
    for (uint64_t i = 0; i < size; i++)
      table[i] = i;
    updates(table, size - 1, vals, n);
    uint64_t check = 0;
    for (uint64_t i = 0; i < size; i++)
      check = check * 31 + table[i];
    printf("updates %llu %llu\n", (unsigned long long)size,
           (unsigned long long)check);
  }
  // 2^10 and 2^20 slots (16 KB and 16 MB).
  for (int bits = 10; bits <= 20; bits += 10) {
    int64_t slots_n = (int64_t)1 << bits;
    Slot *slots = guarded(slots_n * sizeof(Slot));
    uint64_t *keys = guarded(n * sizeof(uint64_t));
    for (int64_t i = 0; i < n; i++)
      keys[i] = next();
    for (int64_t i = 0; i < n; i += 2) {
      uint64_t h = (keys[i] * 0x9E3779B97F4A7C15ull) >> (64 - bits);
      slots[h].key = keys[i];
      slots[h].payload = i;
    }
    printf("lookup %d %llu\n", bits,
           (unsigned long long)lookup(slots, bits, keys, n));
  }
  return 0;
}
