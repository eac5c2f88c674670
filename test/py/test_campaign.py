"""bench/verify/campaign.py: the cumulative fuzz campaign's record and totals."""

from __future__ import annotations

import importlib.util
import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench" / "verify" / "campaign.py"


def _campaign():
    spec = importlib.util.spec_from_file_location("campaign", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _line(pass_name: str, seed: int, kernels: int, **extra: object) -> dict:
    return {"pass": pass_name, "seed": seed, "next_seed": seed + kernels, "kernels": kernels,
            "kernels_transformed": kernels // 2, "stress_modules": kernels // 4,
            "cases": 16 * kernels, "seconds": 60.0, "jobs": 1, "findings": {},
            "by_shape": {"csr": {"checked": kernels, "transformed": kernels // 2,
                                 "seconds": 1.5}},
            "cpu": {"model": "Test CPU", "vendor": "V", "family": "6", "model_number": "1",
                    "cpus": "2"}, **extra}


def test_seed_blocks_are_never_reused():
    c = _campaign()
    rng = random.Random(1)
    lines = [_line("p", c.SEED_BASE + b * c.BLOCK, 10) for b in range(c.BLOCKS) if b != 77]
    assert c.free_block(lines, rng) == c.SEED_BASE + 77 * c.BLOCK
    # a line spanning two blocks takes both
    lines = [_line("p", c.SEED_BASE + b * c.BLOCK, 10) for b in range(c.BLOCKS - 3)]
    lines.append(_line("p", c.SEED_BASE + (c.BLOCKS - 3) * c.BLOCK + 5, c.BLOCK))
    assert c.free_block(lines, rng) == c.SEED_BASE + (c.BLOCKS - 1) * c.BLOCK
    lines.append(_line("p", c.SEED_BASE + (c.BLOCKS - 1) * c.BLOCK, 1))
    with pytest.raises(RuntimeError, match="every seed block"):
        c.free_block(lines, rng)
    # llvm-stress takes 32-bit seeds: every block fits
    assert c.SEED_BASE + c.BLOCKS * c.BLOCK == 1 << 32


def test_totals_sum_runs_and_hosts_and_report_overlaps(tmp_path):
    c = _campaign()
    lines = [_line("accel-prefetch", c.SEED_BASE, 100),
             _line("accel-prefetch", c.SEED_BASE + c.BLOCK, 300, jobs=2),
             _line("accel-prefetch", c.SEED_BASE + 50, 10),  # overlaps the first
             _line("accel-masked-load", c.SEED_BASE + 2 * c.BLOCK, 40,
                   findings={"mismatch": 1})]
    lines[1]["cpu"] = {"model": "Other CPU"}
    t = c.totals(lines)
    assert t["accel-prefetch"]["kernels"] == 410 and t["accel-prefetch"]["runs"] == 3
    assert t["accel-prefetch"]["overlaps"] == 1 and t["accel-masked-load"]["overlaps"] == 0
    hosts = t["accel-prefetch"]["hosts"]
    assert len(hosts) == 2
    other = next(h for name, h in hosts.items() if name.startswith("Other CPU"))
    assert other["process_seconds"] == 120.0  # 60 s with two worker processes
    md = c.markdown(t)
    assert "| `accel-prefetch` | 3 | 410 | 205 (50%) |" in md
    assert "mismatch 1" in md and f"{100_000 - 410:,}" in md
    assert "csr 410/205" in md
    record = tmp_path / "r.jsonl"
    record.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    assert len(c.read_records([record, tmp_path / "missing.jsonl"])) == 4
    record.write_text("{not json\n")
    with pytest.raises(ValueError, match="r.jsonl:1"):
        c.read_records([record])
    prior = c.prior_of(lines, "accel-prefetch")
    assert prior["csr"]["checked"] == 410


def test_campaign_runs_append_lines_with_fresh_seeds_and_add_up(tmp_path):
    record = tmp_path / "campaign.jsonl"
    cmd = [sys.executable, str(SCRIPT), "run", "--seconds", "6", "--pass", "accel-prefetch",
           "--record", str(record), "--out", str(tmp_path / "findings"),
           "--shape", "csr", "--shape", "gather"]
    for _ in range(2):
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=ROOT)
        assert out.returncode == 0, out.stdout + out.stderr
    lines = [json.loads(x) for x in record.read_text().splitlines()]
    assert len(lines) == 2
    (a0, a1), (b0, b1) = [(x["seed"], x["next_seed"]) for x in lines]
    assert a1 > a0 and b1 > b0 and (a1 <= b0 or b1 <= a0)  # disjoint seeds
    for x in lines:
        assert x["kernels"] > 0 and x["cpu"]["model"] and x["commit"]
        assert set(x["by_shape"]) <= {"csr", "gather"}
        assert x["seed"] >= 1 << 31 and x["next_seed"] < 1 << 32
    out = subprocess.run([sys.executable, str(SCRIPT), "totals", "--record", str(record),
                          "--markdown"], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    total = sum(x["kernels"] for x in lines)
    assert f"| `accel-prefetch` | 2 | {total:,} |" in out.stdout
