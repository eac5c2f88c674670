"""Facts of the host a benchmark runs on, for its results: the CPU's model
name and a key (vendor, family, model, LLVM's CPU name) naming the host's
sections. No framework is imported here (bench/parallel_threshold.py must
not load PyTorch's libgomp)."""

from __future__ import annotations

import platform
from pathlib import Path


def host() -> dict:
    """The CPU, as /proc/cpuinfo and LLVM name it, with a key for results."""
    info = {"vendor": "", "family": "", "model": ""}
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            key, value = key.strip(), value.strip()
            if key == "vendor_id" and not info["vendor"]:
                info["vendor"] = value
            elif key == "cpu family" and not info["family"]:
                info["family"] = value
            elif key == "model" and not info["model"]:
                info["model"] = value
    except OSError:
        pass
    from llvmaccel.target import host as llvm_host

    info["llvm_cpu"] = llvm_host().cpu
    info["key"] = "-".join(filter(None, [info["vendor"].lower(), info["family"], info["model"],
                                         info["llvm_cpu"]])) or platform.machine()
    return info


def cpu_name() -> str:
    """The CPU's model name, as lscpu and /proc/cpuinfo give it."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()
