// Runs @racy of racy.mlir a few times and waits for it.
#include <stdint.h>
typedef void *Obj;
Obj racy(int32_t *, int32_t *, int64_t, int64_t, int64_t, int64_t);
void mlirAsyncRuntimeAwaitToken(Obj);
void mlirAsyncRuntimeDropRef(Obj, int64_t);
int main(void) {
  static int32_t M[16];
  for (int R = 0; R < 20; ++R) {
    Obj T = racy(M, M, 0, 16, 1, 1000000);
    mlirAsyncRuntimeAwaitToken(T);
    mlirAsyncRuntimeDropRef(T, 1);
  }
  return 0;
}
