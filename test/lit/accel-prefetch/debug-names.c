// With debug information (clang -g), remarks name the source variables and
// the source line of the access, not IR values such as %2 and the function's
// first line. Without it, they fall back to the IR names.
// REQUIRES: clang
// RUN: %clang -O2 -g -fpass-plugin=%plugin -Rpass=accel-prefetch -c %s -o /dev/null 2>&1 \
// RUN:   | FileCheck %s --check-prefix=DEBUG
// RUN: %clang -O2 -fpass-plugin=%plugin -Rpass=accel-prefetch -c %s -o /dev/null 2>&1 \
// RUN:   | FileCheck %s --check-prefix=NODEBUG

// DEBUG: debug-names.c:[[@LINE+10]]:{{[0-9]+}}: remark: prefetched table[...] via rows,
// NODEBUG: remark: prefetched %{{[0-9]+}}[...] via %{{[0-9]+}},

// Bags of rows of a large table: the row sum is enough work per lookup.
void bag_sums(const float *table, const long *rows, const long *offsets,
              long bags, float *out) {
  for (long b = 0; b < bags; ++b) {
    float acc[64] = {0};
    for (long j = offsets[b]; j < offsets[b + 1]; ++j)
      for (int k = 0; k < 64; ++k)
        acc[k] += table[rows[j] * 64 + k];
    for (int k = 0; k < 64; ++k)
      out[b * 64 + k] = acc[k];
  }
}
