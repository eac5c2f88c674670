// Calls the loop of launch-conditional.cu on a pretend stream.
#include <stdio.h>
#include <string.h>

void every_other(float *x, int n, int iters, void *s);
void recorder_buffer(const char *Name, const void *Base, size_t Size);

const char *recorder_arg_sizes(const char *Stub) {
  return strstr(Stub, "scale") ? "8,4,4" : "";
}

int main(void) {
  static float X[1024];
  recorder_buffer("X", X, sizeof X);
  printf("== every_other 3\n");
  every_other(X, 1024, 3, (void *)0x5700);
  return 0;
}
