# Locate an LLVM release in the supported range.
#
# Inputs (cache variables):
#   LLVMACCEL_LLVM_VERSION  major release to use (default: LLVMACCEL_LLVM_DEFAULT)
#   LLVM_DIR                explicit path to LLVMConfig.cmake (overrides the above)
#
# LLVMConfigVersion.cmake only accepts an exact MAJOR.MINOR match, so the
# package is found without a version and the major release is checked here.
include(LLVMAccelVersions)

set(LLVMACCEL_LLVM_VERSION "${LLVMACCEL_LLVM_DEFAULT}" CACHE STRING
    "LLVM major release to build against (${LLVMACCEL_LLVM_MIN}..${LLVMACCEL_LLVM_MAX})")

set(_accel_install_hint
    "Install it with: apt-get install llvm-${LLVMACCEL_LLVM_VERSION}-dev llvm-${LLVMACCEL_LLVM_VERSION}-tools clang-${LLVMACCEL_LLVM_VERSION}\n  (or pass -DLLVM_DIR=<prefix>/lib/cmake/llvm for another install).")

if(NOT LLVM_DIR)
  set(_accel_hint_dir "/usr/lib/llvm-${LLVMACCEL_LLVM_VERSION}/lib/cmake/llvm")
  if(EXISTS "${_accel_hint_dir}/LLVMConfig.cmake")
    set(LLVM_DIR "${_accel_hint_dir}" CACHE PATH "Directory holding LLVMConfig.cmake" FORCE)
  endif()
endif()

find_package(LLVM CONFIG QUIET)
if(NOT LLVM_FOUND)
  message(FATAL_ERROR
    "llvmaccel: LLVM ${LLVMACCEL_LLVM_VERSION} was not found.\n  ${_accel_install_hint}")
endif()

if(LLVM_VERSION_MAJOR LESS LLVMACCEL_LLVM_MIN OR LLVM_VERSION_MAJOR GREATER LLVMACCEL_LLVM_MAX)
  message(FATAL_ERROR
    "llvmaccel: LLVM ${LLVM_PACKAGE_VERSION} (from ${LLVM_DIR}) is outside the supported "
    "range ${LLVMACCEL_LLVM_MIN}..${LLVMACCEL_LLVM_MAX}.\n"
    "  Install a supported release, e.g.: apt-get install llvm-${LLVMACCEL_LLVM_DEFAULT}-dev "
    "llvm-${LLVMACCEL_LLVM_DEFAULT}-tools clang-${LLVMACCEL_LLVM_DEFAULT}")
endif()

if(LLVM_ENABLE_RTTI)
  set(LLVMACCEL_LLVM_RTTI ON)
else()
  set(LLVMACCEL_LLVM_RTTI OFF)
endif()

message(STATUS "llvmaccel: using LLVM ${LLVM_PACKAGE_VERSION} from ${LLVM_DIR}")
