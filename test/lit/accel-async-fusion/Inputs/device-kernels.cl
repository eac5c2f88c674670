// The kernels of device-ze.c, compiled by clang to SPIR-V for Level Zero.
__kernel void scale(__global float *x, float a, int n) {
  int i = get_global_id(0);
  if (i < n)
    x[i] *= a;
}

__kernel void axpy(__global float *y, __global const float *x, float a,
                   int n) {
  int i = get_global_id(0);
  if (i < n)
    y[i] += a * x[i];
}
