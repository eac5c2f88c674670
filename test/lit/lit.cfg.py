"""lit configuration for llvmaccel's FileCheck tests."""

import glob
import os
import platform
import subprocess
import sys
import sysconfig

import lit.formats

config.name = "llvmaccel"
# The internal shell: the same behaviour on every platform and lit release.
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".ll", ".c", ".test", ".mlir"]
config.excludes = ["Inputs", "CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.llvmaccel_obj_root, "out")

tools = config.llvm_tools_dir
config.environment["PATH"] = os.pathsep.join([tools, config.environment.get("PATH", "")])
# Pipelines in these tests are explicit: nothing is added behind their back.
config.environment["LLVMACCEL_AUTO"] = "all"

plugin = config.llvmaccel_plugin
config.substitutions.append(("%shlibext", os.path.splitext(plugin)[1]))
config.substitutions.append(("%plugin", plugin))
config.substitutions.append(("%loadaccel", f"-load-pass-plugin={plugin}"))
# FileCheck, not and count may come from another LLVM (test/lit/CMakeLists.txt).
utils = getattr(config, "llvmaccel_lit_utils_dir", "") or tools
for tool in ("opt", "FileCheck", "not", "count", "llc", "llvm-as", "llvm-dis"):
    where = utils if tool in ("FileCheck", "not", "count") else tools
    # Whole words only: `not` must not rewrite `--implicit-check-not=`.
    config.substitutions.append((rf"(?<![-\w]){tool}\b(?![-.=])", os.path.join(where, tool)))
if config.llvmaccel_clang:
    config.substitutions.append(("%clang", config.llvmaccel_clang))
    config.available_features.add("clang")
if config.llvmaccel_lli:
    config.substitutions.append(("%lli", config.llvmaccel_lli))
    config.available_features.add("lli")
# MLIR's tools of the same release (Debian's mlir-NN-tools), for tests that
# lower MLIR to LLVM IR themselves (complex dot, memref descriptors, async
# tasks); the async runtime (libmlir-NN-dev, or the runtime library of any installed
# release: its C entry points are the same) runs them.
_mlir_opt = os.path.join(tools, "mlir-opt")
_mlir_translate = os.path.join(tools, "mlir-translate")
if os.path.exists(_mlir_opt) and os.path.exists(_mlir_translate):
    config.available_features.add("mlir-tools")
    config.substitutions.append(("%mlir-opt", _mlir_opt))
    config.substitutions.append(("%mlir-translate", _mlir_translate))
    # The lowering of llvm-versions.md, with scf for loops of tasks.
    config.substitutions.append(("%mlir-async-lower", " ".join([
        "--async-to-async-runtime", "--async-runtime-ref-counting",
        "--async-runtime-ref-counting-opt", "--convert-scf-to-cf",
        "--convert-async-to-llvm", "--convert-vector-to-llvm",
        "--finalize-memref-to-llvm", "--convert-arith-to-llvm",
        "--convert-func-to-llvm", "--convert-cf-to-llvm",
        "--reconcile-unrealized-casts"])))
_libdirs = [os.path.join(os.path.dirname(tools), "lib")] + [
    f"/usr/lib/llvm-{v}/lib" for v in range(30, 18, -1)]
for _libdir in _libdirs:
    _rt = sorted(n for n in (os.listdir(_libdir) if os.path.isdir(_libdir) else [])
                 if n.startswith("libmlir_async_runtime.so"))
    if _rt:
        config.available_features.add("mlir-async-runtime")
        config.substitutions.append(
            ("%mlir-async-runtime", f"{os.path.join(_libdir, _rt[0])} -Wl,-rpath,{_libdir}"))
        break
# The interpreter running lit (the venv's, where llvmaccel is installed) unless
# --param python=... says otherwise.
config.substitutions.append(("%python", lit_config.params.get("python", sys.executable)))

config.available_features.add(f"llvm{config.llvm_version_major}")
if config.llvm_version_major >= 21:
    config.available_features.add("llvm-ge-21")
if config.llvm_version_major >= 22:
    config.available_features.add("llvm-ge-22")
if config.llvm_version_major >= 23:
    config.available_features.add("llvm-ge-23")
if platform.machine() in ("x86_64", "AMD64"):
    config.available_features.add("host-x86_64")

# Targets compiled into this LLVM, as LLVM's own tests name them.
_llc = subprocess.run([os.path.join(tools, "llc"), "--version"], capture_output=True, text=True)
_registered = _llc.stdout.split("Registered Targets:")[-1]
for _target, _names in {
    "x86": ("x86-64",),
    "aarch64": ("aarch64",),
    "nvptx": ("nvptx64",),
    "amdgpu": ("amdgcn",),
    "spirv": ("spirv64",),
}.items():
    if any(f" {name} " in _registered for name in _names):
        config.available_features.add(f"{_target}-registered-target")

# GPU runtimes are enabled explicitly on GPU runners (lit --param gpu=cuda,...).
# Every pass's lit inputs on every target (test/lit/verify/cross-target-suite-*):
# minutes per pass under qemu, so only when asked (`--param cross_suite=1`, the
# nightly job; LIT_ARGS="--param cross_suite=1" make test).
if lit_config.params.get("cross_suite", "") not in ("", "0"):
    config.available_features.add("cross-suite")

for gpu in filter(None, lit_config.params.get("gpu", "").split(",")):
    config.available_features.add(f"gpu-{gpu}")

# SDKs the device tests build with (the build is checked wherever the SDK is
# found; running needs the gpu-* feature as well).
# CUDA: --param cuda_path=DIR (a toolkit), else PyPI's nvidia-cuda-nvcc and
# nvidia-cuda-runtime in this Python's site-packages, else /usr/local/cuda.
# --param cuda_arch=sm_NN (default sm_80) names the device's architecture.
_cuda_candidates = [lit_config.params.get("cuda_path", "")] + sorted(
    glob.glob(os.path.join(sysconfig.get_paths()["purelib"], "nvidia", "cu*")),
    reverse=True) + ["/usr/local/cuda"]
for _cuda in filter(None, _cuda_candidates):
    _cudart = sorted(glob.glob(os.path.join(_cuda, "lib*", "libcudart.so*")))
    if os.path.exists(os.path.join(_cuda, "include", "cuda_runtime.h")) and \
            os.path.exists(os.path.join(_cuda, "include", "crt", "host_defines.h")) and \
            os.access(os.path.join(_cuda, "bin", "fatbinary"), os.X_OK) and _cudart:
        _arch = lit_config.params.get("cuda_arch", "sm_80")
        _flags = [f"--cuda-path={_cuda}", f"--cuda-gpu-arch={_arch}", "--no-offload-new-driver",
                  "-Wno-unknown-cuda-version", "-idirafter",
                  os.path.join(config.test_source_root, "accel-async-fusion", "Inputs",
                               "cuda-shim")]
        # This clang must know the SDK's headers (clang 19 does not know CUDA
        # 13's): a device and a host compile of a kernel, checked once.
        _probe = "#include <cuda_runtime.h>\n__global__ void k(float *x) { *x = 1; }\n"
        if not config.llvmaccel_clang or any(
                subprocess.run([config.llvmaccel_clang, "-x", "cuda", *_flags, side,
                                "-fsyntax-only", "-"], input=_probe, capture_output=True,
                               text=True).returncode != 0
                for side in ("--cuda-device-only", "--cuda-host-only")):
            break
        config.available_features.add("cuda-sdk")
        config.substitutions.append(("%cuda-flags", " ".join(_flags)))
        config.substitutions.append(("%cuda-fatbinary", os.path.join(_cuda, "bin",
                                                                     "fatbinary")))
        config.substitutions.append(("%cuda-sm", _arch.removeprefix("sm_")))
        config.substitutions.append(("%cuda-include", os.path.join(_cuda, "include")))
        config.substitutions.append(
            ("%cudart", f"{_cudart[0]} -Wl,-rpath,{os.path.dirname(_cudart[0])}"))
        break
# ROCm (HIP): --param rocm_path=DIR (default /opt/rocm), --param rocm_arch=gfxNNN.
_rocm = lit_config.params.get("rocm_path", "/opt/rocm")
config.substitutions.append(("%rocm-flags", " ".join([
    f"--rocm-path={_rocm}", f"--offload-arch={lit_config.params.get('rocm_arch', 'gfx90a')}",
    "--no-offload-new-driver"])))
config.substitutions.append(("%rocm-root", _rocm))
if os.path.exists(os.path.join(_rocm, "include", "hip", "hip_runtime.h")):
    config.available_features.add("rocm-sdk")
# Level Zero: the loader and ze_api.h (Debian's libze-dev).
if os.path.exists("/usr/include/level_zero/ze_api.h") and \
        glob.glob("/usr/lib/*/libze_loader.so"):
    config.available_features.add("level-zero-sdk")

# Cross-target execution (scripts/setup.sh --cross installs qemu-user and the
# cross C compilers): `%cross-run aarch64 prog.ll` compiles an IR program with
# main() for AArch64 with SVE (or riscv64 with V) and runs it under qemu-user.
if config.llvmaccel_clang:
    import shutil

    for _arch in ("aarch64", "riscv64"):
        if shutil.which(f"{_arch}-linux-gnu-gcc") and shutil.which(f"qemu-{_arch}"):
            config.available_features.add(f"qemu-{_arch}")
    _cross = os.path.join(config.test_source_root, "verify", "cross_run.py")
    config.substitutions.append(
        ("%cross-run", f"{lit_config.params.get('python', sys.executable)} {_cross} "
                       f"--clang {config.llvmaccel_clang}"))
