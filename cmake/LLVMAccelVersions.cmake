# The one place that says which LLVM releases llvmaccel supports.
set(LLVMACCEL_LLVM_MIN 19)
set(LLVMACCEL_LLVM_MAX 22)
set(LLVMACCEL_LLVM_DEFAULT 22)
