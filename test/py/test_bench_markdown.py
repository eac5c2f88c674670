"""The benchmarks' results files are edited by hand between runs (notes
under the tables, earlier runs kept as sections): a run replaces only the
section it measured, keeps the replaced one after it as an earlier run, and
leaves every other line as it was (bench/mdsections.py, and the writers of
bench/frontends/run.py and models.py on the recorded results)."""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "bench" / "frontends"))

import mdsections  # noqa: E402

DOC = """# Title

Intro.

## host-a (1 thread)

2026-12-01T10:00:00+00:00, table A1

A hand-written note on host a.

## host-a (1 thread), earlier run 2026-11-30 09:00

older table

## host-b (2 threads)

### Set one

2026-12-02T11:30:00+00:00, table B1

Note on set one.

### Set two

table B2

<!-- jax-control:begin -->
jax part
<!-- jax-control:end -->
"""


def test_a_section_is_replaced_and_the_old_one_kept():
    out = mdsections.splice(DOC, "## host-a (1 thread)\n\n2026-12-05T08:00:00+00:00, new A\n")
    assert out.index("new A") < out.index("## host-a (1 thread), earlier run 2026-12-01 10:00")
    # The replaced section, hand-written note included, follows as an earlier run.
    old = out[out.index("earlier run 2026-12-01 10:00"):]
    assert old.index("table A1") < old.index("A hand-written note") < old.index("2026-11-30")
    assert out.count("## host-a (1 thread)\n") == 1
    # Everything else is untouched.
    rest = DOC[DOC.index("## host-a (1 thread), earlier run"):]
    assert rest in out
    assert out.startswith("# Title\n\nIntro.\n\n## host-a (1 thread)\n")


def test_a_subsection_is_replaced_within_its_host():
    new = "### Set one\n\n2026-12-06T12:00:00+00:00, new B1\n"
    out = mdsections.splice(DOC, new, within="## host-b (2 threads)")
    host_b = out[out.index("## host-b"):]
    assert host_b.index("new B1") < host_b.index("### Set one, earlier run 2026-12-02 11:30")
    assert host_b.index("Note on set one.") < host_b.index("### Set two")
    assert "table B2" in host_b and "jax part" in out
    # Another host's subsection of that title would not be touched: host a has none.
    assert out.count("### Set one\n") == 1


def test_new_sections_go_at_the_end_or_before_a_marker():
    out = mdsections.splice(DOC, "## host-c (1 thread)\n\nnew C\n",
                            before="<!-- jax-control:begin -->")
    assert out.index("table B2") < out.index("## host-c") < out.index("<!-- jax-control:begin")
    out = mdsections.splice(DOC, "### Set one\n\nfirst\n", within="## host-c (1 thread)")
    assert out.rstrip().endswith("## host-c (1 thread)\n\n### Set one\n\nfirst")
    out = mdsections.splice(DOC, "### Set three\n\nnew\n", within="## host-b (2 threads)")
    assert out.index("table B2") < out.index("### Set three") < out.index("<!-- jax-control")


def _frontends_hosts() -> dict:
    path = ROOT / "bench/results/frontends.json"
    if not path.exists():
        pytest.skip("no recorded frontends results")
    return json.loads(path.read_text())["hosts"]


def test_frontends_writer_keeps_hand_text(tmp_path, monkeypatch):
    """bench/frontends/run.py's writer on the recorded results: the host's
    section is regenerated, a note written under it and the section before
    it survive, as do the JAX section and other hosts."""
    pytest.importorskip("torch")
    import run

    hosts = _frontends_hosts()
    key = next(iter(hosts))
    path = tmp_path / "frontends.md"
    run.write_markdown(path, hosts, key)
    text = path.read_text()
    heading = f"## {key}\n"
    at = text.index(heading)
    nxt = text.find("\n## ", at + len(heading))
    text = text[:nxt] + "\n\nA NOTE BY HAND.\n" + text[nxt:] + \
        "\n<!-- jax-control:begin -->\nJAX\n<!-- jax-control:end -->\n"
    path.write_text(text)
    again = copy.deepcopy(hosts)
    again[key]["meta"]["date"] = "2027-01-01T00:00:00+00:00"
    run.write_markdown(path, again, key)
    out = path.read_text()
    assert out.count(heading) == 1
    assert out.index("2027-01-01T00:00:00") < out.index(f"## {key}, earlier run") < \
        out.index("A NOTE BY HAND.") < out.index("<!-- jax-control:begin -->")
    for other in list(hosts)[1:]:
        assert f"## {other}\n" in out


def test_models_writer_replaces_only_the_sets_run(tmp_path):
    pytest.importorskip("torch")
    import models

    path = ROOT / "bench/results/frontends-models.json"
    if not path.exists():
        pytest.skip("no recorded models results")
    hosts = json.loads(path.read_text())["hosts"]
    key = next(k for k, v in hosts.items() if {"grad", "cnn"} <= set(v))
    md = tmp_path / "frontends-models.md"
    models.write_markdown(md, hosts, key, ["grad", "cnn"])
    text = md.read_text() + "\nTRAILING NOTE.\n"
    cnn = f"### {models.TITLES['cnn']}\n"
    host_at = text.index(f"## {key}\n")
    at = text.index(cnn, host_at)
    text = text[:at] + "GRAD NOTE.\n\n" + text[at:]
    md.write_text(text)
    again = copy.deepcopy(hosts)
    again[key]["cnn"]["meta"]["date"] = "2027-01-01T00:00:00+00:00"
    models.write_markdown(md, again, key, ["cnn"])
    out = md.read_text()
    assert "GRAD NOTE." in out and "TRAILING NOTE." in out
    section = out[out.index(f"## {key}\n"):]
    assert section.index("2027-01-01T00:00:00") < \
        section.index(f"### {models.TITLES['cnn']}, earlier run")
    assert out.count(f"### {models.TITLES['grad']}\n") == sum(
        "grad" in v for v in hosts.values())


def test_gemm_writer_keeps_earlier_runs(tmp_path):
    """bench/gemm/run.py's writer on the recorded results: its host's
    section replaced, the replaced one and a note under it kept."""
    pytest.importorskip("torch")
    import importlib.util

    path = ROOT / "bench/results/gemm.json"
    if not path.exists():
        pytest.skip("no recorded GEMM results")
    spec = importlib.util.spec_from_file_location("gemm_run", ROOT / "bench/gemm/run.py")
    gemm = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gemm)
    hosts = json.loads(path.read_text())["hosts"]
    key = next(iter(hosts))
    md = tmp_path / "gemm.md"
    gemm.write_markdown(md, hosts, key)
    md.write_text(md.read_text() + "\nNOTE AT THE END.\n")
    again = copy.deepcopy(hosts)
    again[key]["meta"]["date"] = "2027-01-01T00:00:00+00:00"
    gemm.write_markdown(md, again, key)
    out = md.read_text()
    assert out.index("2027-01-01T00:00:00") < out.index(f"## {key}, earlier run")
    assert "NOTE AT THE END." in out and out.count(f"## {key}\n") == 1
