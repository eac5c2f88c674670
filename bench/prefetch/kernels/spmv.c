/* CSR sparse matrix-vector product y = A x (columns random over a large x).
 * Returns the sum of y. */
#include <stdint.h>

double spmv_csr(int64_t nrows, const int64_t *rowptr, const int32_t *cols,
                const double *vals, const double *x, double *y) {
  double check = 0.0;
#ifdef HAND_PREFETCH
  const int64_t nnz = rowptr[nrows];
#endif
  for (int64_t r = 0; r < nrows; r++) {
    double s = 0.0;
    for (int64_t j = rowptr[r]; j < rowptr[r + 1]; j++) {
#ifdef HAND_PREFETCH
      int64_t ahead = j + PF_DIST < nnz ? j + PF_DIST : nnz - 1;
      __builtin_prefetch(&x[cols[ahead]]);
#endif
      s += vals[j] * x[cols[j]];
    }
    y[r] = s;
    check += s;
  }
  return check;
}
