"""The wheel users get from PyPI works without any system LLVM (slow).

Builds the sdist and the manylinux wheel on the PyPI LLVM
(scripts/build-wheel.sh; LLVMACCEL_WHEELHOUSE=<dir> uses wheels built
before), installs the wheel with its `tools` extra in a fresh venv, and runs
test/py/wheel/smoke.py there with every /usr/lib/llvm-* hidden by empty
directories bound over them in a private mount namespace (``unshare -m``, as
root). torch and jax are not downloaded again: the venv sees the test
environment's copies through a .pth file (with its own llvmaccel left out).
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow


def _sh(cmd: list[str], timeout: float = 3600, **kw: object) -> subprocess.CompletedProcess:
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)
    assert out.returncode == 0, f"{cmd}:\n{out.stdout[-4000:]}\n{out.stderr[-4000:]}"
    return out


@pytest.fixture(scope="module")
def wheelhouse(tmp_path_factory) -> Path:
    given = os.environ.get("LLVMACCEL_WHEELHOUSE")
    if given:
        return Path(given)
    out = tmp_path_factory.mktemp("dist")
    _sh(["bash", str(ROOT / "scripts" / "build-wheel.sh"), str(out)])
    return out


def _wheel(wheelhouse: Path) -> Path:
    wheels = sorted(wheelhouse.glob("llvmaccel-*manylinux*.whl"))
    assert wheels, f"no manylinux wheel in {wheelhouse}: {os.listdir(wheelhouse)}"
    return wheels[-1]


def test_wheel_is_manylinux_without_llvm_inside(wheelhouse):
    wheel = _wheel(wheelhouse)
    assert "manylinux_2_" in wheel.name and wheel.name.endswith("_x86_64.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "llvmaccel/_core" in " ".join(names) and "llvmaccel/LLVMAccel.so" in names
    assert not [n for n in names if "libLLVM" in n or "libc++" in n], names
    meta = next(n for n in names if n.endswith(".dist-info/METADATA"))
    text = zipfile.ZipFile(wheel).read(meta).decode()
    assert "Requires-Dist: karellen-llvm-core" in text
    assert sorted(wheelhouse.glob("llvmaccel-*.tar.gz")), "no sdist"


def test_fresh_venv_without_system_llvm(wheelhouse, tmp_path):
    if os.geteuid() != 0 or not shutil.which("unshare"):
        pytest.skip("needs root and unshare(1) to hide the system LLVM")
    probe = subprocess.run(["unshare", "-m", "sh", "-c", f'mount --bind "{tmp_path}" "{tmp_path}"'],
                           capture_output=True, text=True, timeout=60)
    if probe.returncode != 0:
        pytest.skip(f"mount namespaces are not permitted here: {probe.stderr.strip()}")
    venv = tmp_path / "venv"
    _sh([sys.executable, "-m", "venv", str(venv)])
    py = venv / "bin" / "python"
    import numpy

    _sh([str(py), "-m", "pip", "install", "-q", f"{_wheel(wheelhouse)}[tools]",
         f"numpy=={numpy.__version__}"])
    # torch, jax and their dependencies from this environment, not llvmaccel.
    borrowed = tmp_path / "borrowed"
    borrowed.mkdir()
    here = Path(numpy.__file__).resolve().parents[1]
    for entry in here.iterdir():
        if entry.name.startswith(("llvmaccel", "numpy", "karellen", "_distutils", "pip")):
            continue
        if entry.suffix == ".pth":
            continue
        (borrowed / entry.name).symlink_to(entry)
    site = next((venv / "lib").glob("python3*/site-packages"))
    (site / "zz-borrowed.pth").write_text(f"{borrowed}\n")

    hide = " && ".join(f'mount --bind "$EMPTY" "{d}"' for d in glob.glob("/usr/lib/llvm-*"))
    hide += "".join(f' && mount --bind /dev/null "{f}"'
                    for f in glob.glob("/usr/lib/x86_64-linux-gnu/libLLVM*"))
    empty = tmp_path / "empty"
    empty.mkdir()
    script = f"{hide or 'true'} && cd / && exec \"$@\""
    smoke = ROOT / "test" / "py" / "wheel" / "smoke.py"
    in_ll = tmp_path / "in.ll"
    shutil.copy(ROOT / "examples" / "in.ll", in_ll)
    # JAX_PLATFORMS=cpu: without it jax probes for a TPU plugin, whose loader
    # crashed the process here (a borrowed libtpu; no TPU on these machines).
    env = {"PATH": f"{venv / 'bin'}:/usr/bin:/bin", "HOME": str(tmp_path), "EMPTY": str(empty),
           "LLVMACCEL_CACHE_DIR": "off", "JAX_PLATFORMS": "cpu"}
    out = _sh(["unshare", "-m", "sh", "-c", script, "sh", str(py), str(smoke), str(in_ll)],
              env=env, timeout=1800)
    print(out.stdout)
    assert "smoke: ok" in out.stdout
    assert "torch.compile and llvmaccel.jax.jit: ok" in out.stdout
