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

if(LLVMACCEL_LLVM_VERSION LESS LLVMACCEL_LLVM_MIN OR
   LLVMACCEL_LLVM_VERSION GREATER LLVMACCEL_LLVM_MAX)
  message(FATAL_ERROR
    "llvmaccel: LLVMACCEL_LLVM_VERSION=${LLVMACCEL_LLVM_VERSION} is outside the "
    "supported range ${LLVMACCEL_LLVM_MIN}..${LLVMACCEL_LLVM_MAX}.")
endif()

# A build tree reconfigured for another release forgets the LLVM it found.
if(DEFINED LLVMACCEL_RESOLVED_VERSION AND
   NOT LLVMACCEL_RESOLVED_VERSION STREQUAL LLVMACCEL_LLVM_VERSION)
  unset(LLVM_DIR CACHE)
  unset(LLVM_DIR)
endif()

if(LLVM_DIR)
  # An explicit LLVM_DIR wins; its release is checked below.
  find_package(LLVM CONFIG QUIET NO_DEFAULT_PATH PATHS "${LLVM_DIR}")
else()
  # Debian and Ubuntu install each release under /usr/lib/llvm-NN.
  find_package(LLVM CONFIG QUIET NO_DEFAULT_PATH
    PATHS "/usr/lib/llvm-${LLVMACCEL_LLVM_VERSION}/lib/cmake/llvm")
  if(LLVM_FOUND AND NOT LLVM_VERSION_MAJOR EQUAL LLVMACCEL_LLVM_VERSION)
    set(LLVM_FOUND FALSE)
  endif()
endif()
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

set(LLVMACCEL_RESOLVED_VERSION "${LLVMACCEL_LLVM_VERSION}" CACHE INTERNAL
    "LLVMACCEL_LLVM_VERSION of the last configuration")

message(STATUS "llvmaccel: using LLVM ${LLVM_PACKAGE_VERSION} from ${LLVM_DIR}")
