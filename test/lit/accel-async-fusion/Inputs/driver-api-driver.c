// Calls the loops of driver-api-loops.c on pretend streams; the kernel
// handles are addresses of the functions below, so the recorder names them.
#include <stdio.h>
#include <string.h>

typedef void *CUfunction;
void decode(CUfunction attn, CUfunction mlp, float *state, float *w, int n,
            int steps, void *s);
void decode_maybe_scaled(CUfunction mlp, float *state, int n, int scale,
                         int steps, void *s);
void decode_sync(CUfunction mlp, float *state, int n, int steps, void *s);
void decode_legacy(CUfunction mlp, float *state, int n, int steps);

void recorder_buffer(const char *Name, const void *Base, size_t Size);

int pick_size(int n) { return 2 * n; }

void kernel_attn(void) {}
void kernel_mlp(void) {}

const char *recorder_arg_sizes(const char *Stub) {
  if (strstr(Stub, "attn"))
    return "8,8,4";
  if (strstr(Stub, "mlp"))
    return "8,4";
  return "";
}

int main(void) {
  static float State[1024], W[1024];
  void *S = (void *)0x5700, *S2 = (void *)0x5800;
  CUfunction A = (CUfunction)kernel_attn, M = (CUfunction)kernel_mlp;
  recorder_buffer("State", State, sizeof State);
  recorder_buffer("W", W, sizeof W);
  printf("== decode 3\n");
  decode(A, M, State, W, 1024, 3, S);
  printf("== decode 2 same\n");
  decode(A, M, State, W, 1024, 2, S);
  printf("== decode 2 n=512\n");
  decode(A, M, State, W, 512, 2, S);
  printf("== decode 1 other stream\n");
  decode(A, M, State, W, 512, 1, S2);
  printf("== decode_maybe_scaled 2\n");
  decode_maybe_scaled(M, State, 256, 1, 2, S);
  printf("== decode_maybe_scaled 2 again\n");
  decode_maybe_scaled(M, State, 256, 0, 2, S);
  printf("== decode_sync 2\n");
  decode_sync(M, State, 256, 2, S);
  printf("== decode_legacy 2\n");
  decode_legacy(M, State, 256, 2);
  printf("== end\n");
  return 0;
}
