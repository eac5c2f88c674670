/* CSR sparse matrix-vector product y = A x, with the columns of A scattered
 * over a large x. */
#include <stdint.h>

void spmv_csr(const int64_t *row_ptr, const int32_t *cols, const double *vals,
              const double *x, int64_t num_rows, double *y) {
  for (int64_t r = 0; r < num_rows; r++) {
    double sum = 0.0;
    for (int64_t j = row_ptr[r]; j < row_ptr[r + 1]; j++)
      sum += vals[j] * x[cols[j]];
    y[r] = sum;
  }
}
