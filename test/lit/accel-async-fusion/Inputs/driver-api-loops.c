// Host loops of the CUDA driver API (HIP's module API with -DUSE_HIP), as a
// decode-style step loop writes them: the kernel handles and the stream are
// parameters, the arguments live on the stack (`&n` makes clang spill `n` at
// the function's entry) and are passed through kernelParams.
typedef struct CUstream_st *CUstream;
typedef struct CUfunc_st *CUfunction;
#ifdef USE_HIP
#define cuLaunchKernel hipModuleLaunchKernel
#define cuStreamSynchronize hipStreamSynchronize
#endif
int cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                   unsigned bx, unsigned by, unsigned bz, unsigned shmem,
                   CUstream s, void **params, void **extra);
int cuStreamSynchronize(CUstream s);

// The same two kernels every step: captured once, kept for the next call.
void decode(CUfunction attn, CUfunction mlp, float *state, float *w, int n,
            int steps, CUstream s) {
  for (int i = 0; i < steps; ++i) {
    void *a[] = {&state, &w, &n};
    cuLaunchKernel(attn, n / 128, 1, 1, 128, 1, 1, 0, s, a, 0);
    void *b[] = {&state, &n};
    cuLaunchKernel(mlp, n / 128, 1, 1, 128, 1, 1, 4096, s, b, 0);
  }
}

int pick_size(int n);

// Captured, but built once per call: the argument slot is written on one
// path to the loop only.
void decode_maybe_scaled(CUfunction mlp, float *state, int n, int scale,
                         int steps, CUstream s) {
  int m = n;
  void *b[] = {&state, &m};
  if (scale)
    m = pick_size(n);
  for (int i = 0; i < steps; ++i)
    cuLaunchKernel(mlp, n / 128, 1, 1, 128, 1, 1, 0, s, b, 0);
}

// Declined: the host waits for the stream every step.
void decode_sync(CUfunction mlp, float *state, int n, int steps, CUstream s) {
  for (int i = 0; i < steps; ++i) {
    void *b[] = {&state, &n};
    cuLaunchKernel(mlp, n / 128, 1, 1, 128, 1, 1, 0, s, b, 0);
    cuStreamSynchronize(s);
  }
}

// Declined: CU_STREAM_LEGACY cannot be captured.
void decode_legacy(CUfunction mlp, float *state, int n, int steps) {
  for (int i = 0; i < steps; ++i) {
    void *b[] = {&state, &n};
    cuLaunchKernel(mlp, n / 128, 1, 1, 128, 1, 1, 0, (CUstream)0x1, b, 0);
  }
}
