// Execution: embedding bags with the row width an argument (rows of run-time
// length, prefetched up to max-lines lines with a branch per line past the
// first) compute the same sums with and without the pass, for widths below,
// at and above one cache line and past max-lines lines. The index array and
// the table end right before a PROT_NONE page, so a look-ahead load past the
// last index the program reads faults.
// REQUIRES: clang, host-x86_64
// RUN: %clang -O2 -S -emit-llvm %s -o %t.ll
// RUN: %clang -O2 %t.ll -o %t.o2 && %t.o2 > %t.before
// RUN: opt %loadaccel -passes='accel-prefetch<distance=4>' %t.ll -o %t.d4.bc
// RUN: %clang -O2 %t.d4.bc -o %t.d4 && %t.d4 > %t.after4
// RUN: diff %t.before %t.after4
// RUN: opt %loadaccel -passes='accel-prefetch<distance=300>' %t.ll -o %t.d300.bc
// RUN: %clang -O2 %t.d300.bc -o %t.d300 && %t.d300 > %t.after300
// RUN: diff %t.before %t.after300
// RUN: opt %loadaccel -passes='accel-prefetch<distance=4>' -pass-remarks=accel-prefetch \
// RUN:   -disable-output %t.ll 2>&1 | FileCheck %s --check-prefix=REMARK
// RUN: FileCheck %s --input-file=%t.before

// REMARK: lines at most (a row of run-time length)
// CHECK: dim=1 
// CHECK: dim=200 

#include <stdint.h>
#include <stdio.h>
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

__attribute__((noinline)) void bags(const float *restrict table,
                                    const int32_t *restrict idx, long n,
                                    long dim, float *restrict out) {
  for (long k = 0; k < dim; k++)
    out[k] = 0;
  for (long j = 0; j < n; j++) {
    const float *row = table + idx[j] * dim;
    for (long k = 0; k < dim; k++)
      out[k] += row[k];
  }
}

int main(void) {
  enum { ROWS = 97, N = 250, MAXDIM = 200 };
  float *table = guarded(ROWS * MAXDIM * sizeof(float));
  int32_t *idx = guarded(N * sizeof(int32_t));
  static float out[MAXDIM];
  if (!table || !idx)
    return 1;
  for (long i = 0; i < ROWS * MAXDIM; i++)
    table[i] = (float)((i * 37) % 101) / 8;
  for (long j = 0; j < N; j++)
    idx[j] = (int32_t)((j * 61 + 7) % ROWS);
  const long dims[] = {1, 5, 16, 17, 64, 100, 200};
  for (unsigned d = 0; d < sizeof dims / sizeof *dims; d++) {
    long dim = dims[d];
    // The last row used ends at the table's guard page.
    bags(table + (MAXDIM - dim) * ROWS, idx, N, dim, out);
    double sum = 0;
    for (long k = 0; k < dim; k++)
      sum += out[k] * (k + 1);
    printf("dim=%ld %.3f\n", dim, sum);
  }
  return 0;
}
