# The one place that says which LLVM releases llvmaccel supports.
set(LLVMACCEL_LLVM_MIN 19)
set(LLVMACCEL_LLVM_MAX 23)
set(LLVMACCEL_LLVM_DEFAULT 22)
# The release of the PyPI LLVM wheels (karellen-llvm-*) that the Python
# package builds against by default (LLVMACCEL_LLVM_VERSION=pypi); keep in
# step with pyproject.toml.
set(LLVMACCEL_PYPI_LLVM 23.1)
set(LLVMACCEL_PYPI_LLVM_MAJOR 23)
