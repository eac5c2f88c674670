"""Loads the native extension and points it at the LLVMAccel plugin."""

from __future__ import annotations

import os
from pathlib import Path

from . import _core  # type: ignore[attr-defined]

_PACKAGE_DIR = Path(__file__).resolve().parent


def _find_plugin() -> Path:
    override = os.environ.get("LLVMACCEL_PLUGIN")
    if override:
        return Path(override).resolve()
    for name in ("LLVMAccel.so", "LLVMAccel.dylib", "LLVMAccel.dll"):
        candidate = _PACKAGE_DIR / name
        if candidate.exists():
            return candidate
    return _PACKAGE_DIR / "LLVMAccel.so"


PLUGIN_PATH = _find_plugin()
_core.set_plugin_path(str(PLUGIN_PATH))

core = _core
