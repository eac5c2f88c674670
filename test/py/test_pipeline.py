"""Running pipelines: reports, remarks, statistics and errors."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import llvmaccel

KERNELS = Path(llvmaccel.__file__).parent / "kernels"


def test_passes_catalog():
    (prefetch,) = [p for p in llvmaccel.passes() if p.name == "accel-prefetch"]
    assert prefetch.kind == "function"
    assert prefetch.extension_point == "OptimizerLast"
    names = [p.name for p in prefetch.parameters]
    assert "distance=N" in names and "indirect|no-indirect" in names
    assert all(p.help and p.default for p in prefetch.parameters)


def test_plugin_path_and_version():
    import os

    assert os.path.exists(llvmaccel.plugin_path())
    major = int(llvmaccel.llvm_version().split(".")[0])
    assert 19 <= major <= 22


def test_unknown_pass_raises_pipeline_error(axpy_module):
    with pytest.raises(llvmaccel.PipelineError, match="unknown pass name 'no-such-pass'"):
        llvmaccel.run_passes(axpy_module, "no-such-pass")


@pytest.mark.parametrize(
    "pipeline, message",
    [
        ("accel-prefetch<bogus>", "invalid accel-prefetch pass parameter 'bogus'"),
        ("accel-prefetch<distance=abc>", "distance must be an integer from 1 to 65536"),
        ("accel-prefetch<cache-line=48>", "cache-line must be a power of two from 16 to 4096"),
        ("accel-prefetch<max-lines=0>", "max-lines must be an integer from 1 to 64"),
    ],
)
def test_bad_parameter_raises_pipeline_error(axpy_module, pipeline, message):
    with pytest.raises(llvmaccel.PipelineError, match=message):
        llvmaccel.run_passes(axpy_module, pipeline)
    # The failed pipeline left the module alone, and the next run is clean.
    axpy_module.verify()
    llvmaccel.run_passes(axpy_module, "accel-prefetch")


def test_malformed_pipeline_text(axpy_module):
    with pytest.raises(llvmaccel.PipelineError):
        llvmaccel.run_passes(axpy_module, "function(accel-prefetch")


def test_invalid_input_module_raises_verify_error():
    bad = llvmaccel.parse_ir("define i32 @f() {\n  %x = add i32 %x, 1\n  ret i32 %x\n}\n")
    with pytest.raises(llvmaccel.VerifyError, match="input module is invalid"):
        llvmaccel.run_passes(bad, "default<O2>")


def test_verify_each_runs_clean(axpy_module):
    report = llvmaccel.run_passes(axpy_module, "default<O2>", verify_each=True)
    assert isinstance(report, llvmaccel.Report)


def test_missed_remark_for_tight_gather(gather_module):
    report = llvmaccel.run_passes(gather_module, "accel-prefetch<distance=16>", target="host")
    missed_by_array = {r.args["Array"]: r for r in report.missed("accel-prefetch")}
    assert "stride of 8 bytes" in missed_by_array["w"].message
    missed = missed_by_array["T"]
    assert missed.function == "gather"
    assert "units of work per indirect access" in missed.message
    assert missed.args["Index"] == "B"
    assert report.statistics == {"accel-prefetch.NumAccessesDeclined": 2}
    assert not report.passed()
    assert "llvm.prefetch" not in str(gather_module)


def test_passed_remarks_and_statistics():
    module = llvmaccel.load_module(KERNELS / "embedding_bag.ll")
    report = llvmaccel.run_passes(module, "default<O3>", target="host")
    assert report.fired() == ["accel-prefetch"]
    (passed,) = report.passed()
    assert passed.function == "embedding_bag_sum"
    assert passed.message.startswith("prefetched table[...] via indices, ")
    # The distance depends on the host CPU (its accesses in flight).
    assert re.search(r"\b\d+ iterations ahead, 4 lines, across the iterations of the outer loop",
                     passed.message), passed.message
    assert passed.args["Lines"] == "4" and 4 <= int(passed.args["Distance"]) <= 256
    assert report.statistics["accel-prefetch.NumIndirectPrefetches"] == 4
    assert report.statistics["accel-prefetch.NumLoopsPrefetched"] == 1
    assert str(module).count("call void @llvm.prefetch") == 4
    table = report.table().splitlines()
    assert table[0].split()[:3] == ["pass", "kind", "function"]
    assert any("prefetched table" in line for line in table)


def test_remark_filter_selects_other_passes(axpy_module):
    report = llvmaccel.run_passes(axpy_module, "default<O3>", remarks="loop-vectorize",
                                  target="host")
    assert report.remarks
    assert {r.pass_name for r in report.remarks} == {"loop-vectorize"}


def test_auto_selection(gather_module):
    on = llvmaccel.run_passes(gather_module.clone(), "default<O3>", auto="all", target="host")
    off = llvmaccel.run_passes(gather_module.clone(), "default<O3>", auto="none", target="host")
    assert on.remarks
    assert not off.remarks
    with pytest.raises(llvmaccel.PipelineError, match="unknown llvmaccel pass"):
        llvmaccel.run_passes(gather_module, "default<O3>", auto=["accel-nothing"])


def test_unknown_target_raises(axpy_module):
    with pytest.raises(llvmaccel.PipelineError, match="unknown target"):
        llvmaccel.run_passes(axpy_module, "accel-prefetch", target="mars")


def test_invalid_remark_filter_raises(axpy_module):
    with pytest.raises(llvmaccel.PipelineError, match="invalid remark filter"):
        llvmaccel.run_passes(axpy_module, "default<O2>", remarks="(")


@pytest.mark.parametrize("kwargs,message", [
    ({"remarks": 5}, "remarks must be str or None, not int"),
    ({"target": 5}, "target must be str or None, not int"),
    ({"verify_each": "yes"}, "verify_each must be bool, not str"),
    ({"auto": 5}, "auto must be None, 'all', 'none' or a list of pass names"),
    ({"vector_library": b"libmvec"}, "vector_library must be str or None, not bytes"),
])
def test_bad_argument_types_are_type_errors(axpy_module, kwargs, message):
    with pytest.raises(TypeError, match=message):
        llvmaccel.run_passes(axpy_module, "default<O1>", **kwargs)
    with pytest.raises(TypeError, match="pipeline must be str, not int"):
        llvmaccel.run_passes(axpy_module, 5)
    with pytest.raises(TypeError, match="module must be Module, not str"):
        llvmaccel.run_passes("define void @f() { ret void }", "default<O1>")


def test_remarks_none_collects_none(gather_module):
    report = llvmaccel.run_passes(gather_module, "accel-prefetch", remarks=None)
    assert report.remarks == []


def test_unknown_pass_in_environment_is_a_pipeline_error(axpy_module, monkeypatch):
    monkeypatch.setenv("LLVMACCEL_AUTO", "accel-prefetch,bogus")
    with pytest.raises(llvmaccel.PipelineError, match=r"'bogus' in \$LLVMACCEL_AUTO"):
        llvmaccel.run_passes(axpy_module, "default<O2>")
    monkeypatch.setenv("LLVMACCEL_AUTO", "none")
    llvmaccel.run_passes(axpy_module, "default<O2>")
