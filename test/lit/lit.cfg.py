"""lit configuration for llvmaccel's FileCheck tests."""

import os
import platform
import subprocess
import sys

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
for tool in ("opt", "FileCheck", "not", "count", "llc", "llvm-as", "llvm-dis"):
    # Whole words only: `not` must not rewrite `--implicit-check-not=`.
    config.substitutions.append((rf"(?<![-\w]){tool}\b(?![-.=])", os.path.join(tools, tool)))
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
for gpu in filter(None, lit_config.params.get("gpu", "").split(",")):
    config.available_features.add(f"gpu-{gpu}")

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
