/* Clang's CUDA wrapper header includes this cuRAND header. PyPI's CUDA
 * packages (nvidia-cuda-nvcc, nvidia-cuda-runtime) do not carry cuRAND; the
 * device tests use none of it. Found with -idirafter, so a CUDA toolkit's
 * own header comes first. */
