// Calls the loops of launch-loops.cu on a pretend stream.
#include <math.h>
#include <stdio.h>
#include <string.h>

void solve(float *x, float *y, int n, int iters, void *s);
void solve_scaled(float *x, float a, int n, int iters, void *s);
void solve_sync(float *x, int n, int iters, void *s);
void solve_shift(float *x, int n, int iters, void *s);
void solve_default(float *x, int n, int iters);

void recorder_buffer(const char *Name, const void *Base, size_t Size);

const char *recorder_arg_sizes(const char *Stub) {
  if (strstr(Stub, "scale"))
    return "8,4,4";
  if (strstr(Stub, "axpy"))
    return "8,8,4,4";
  return "";
}

int main(void) {
  static float X[1024], Y[1024];
  void *S = (void *)0x5700;
  recorder_buffer("X", X, sizeof X);
  recorder_buffer("Y", Y, sizeof Y);
  printf("== solve 4\n");
  solve(X, Y, 1024, 4, S);
  printf("== solve 3 same\n");
  solve(X, Y, 1024, 3, S);
  printf("== solve 0\n");
  solve(X, Y, 1024, 0, S);
  printf("== solve 2 other y\n");
  solve(X, Y + 256, 1024, 2, S);
  printf("== solve_scaled 0.0\n");
  solve_scaled(X, 0.0f, 512, 2, S);
  printf("== solve_scaled -0.0\n");
  solve_scaled(X, -0.0f, 512, 2, S);
  printf("== solve_scaled nan\n");
  solve_scaled(X, NAN, 512, 1, S);
  printf("== solve_scaled nan again\n");
  solve_scaled(X, NAN, 512, 1, S);
  printf("== solve_sync 2\n");
  solve_sync(X, 512, 2, S);
  printf("== solve_shift 2\n");
  solve_shift(X, 512, 2, S);
  printf("== solve_default 2\n");
  solve_default(X, 256, 2);
  return 0;
}
