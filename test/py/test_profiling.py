"""Profiles in the model's terms (llvmaccel.profiling): the perf map, perf
report, torch.profiler ranges and llvmaccel.profile's table."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import llvmaccel
from llvmaccel import profiling

torch = pytest.importorskip("torch")


@pytest.fixture(autouse=True)
def _cache_dir(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("LLVMACCEL_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "cache"))


class _Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(16, 8)

    def forward(self, x):
        h = torch.relu(self.fc(x))  # the line the profiles must name
        return h.sum(-1)


LINE = next(i for i, text in enumerate(open(__file__), 1) if "the line the profiles" in text)
SOURCE = f"test_profiling.py:{LINE} (forward)"


def _compiled():
    torch._dynamo.reset()
    model = torch.compile(_Net().eval(), backend="llvmaccel")
    x = torch.randn(4, 16)
    with torch.no_grad():
        model(x)
    return model, x


def test_profile_table_names_kernels_by_source_line():
    model, x = _compiled()
    with torch.no_grad():
        prof = llvmaccel.profile(model, x, repeat=7)
    assert len(prof.kernels) == 1
    k = prof.kernels[0]
    assert k.calls == 7 and k.total_ns > 0 and k.mean_ns == k.total_ns / 7
    assert (("relu", SOURCE) in k.sources) and any(op.startswith("addmm") for op, _ in k.sources)
    assert k.label.startswith("llvmaccel_main[") and f"relu@{SOURCE}" in k.label
    assert 0 < prof.kernel_ns <= prof.wall_ns
    table = str(prof)
    assert f"{SOURCE}: " in table and "relu" in table and re.search(r"\b7\b", table)
    torch.testing.assert_close(prof.result, model(x).detach())


def test_profile_of_a_jax_function_and_misuse():
    jax = pytest.importorskip("jax")
    import llvmaccel.jax as lj

    f = lj.jit(lambda x: jax.numpy.tanh(x).sum(0))  # jax line
    x = np.ones((8, 4), np.float32)
    f(x)
    prof = profiling.profile(f, x, repeat=3)
    assert prof.kernels[0].calls == 3
    assert any(src.startswith("test_profiling.py:") for _, src in prof.kernels[0].sources)
    with pytest.raises(ValueError, match="repeat"):
        profiling.profile(f, x, repeat=0)
    with pytest.raises(RuntimeError, match="another profile run"):
        profiling.profile(lambda: profiling.profile(f, x))
    # Outside a profile run nothing is timed.
    assert not profiling.instrumented()


def test_torch_profiler_shows_named_kernel_ranges():
    model, x = _compiled()
    with torch.no_grad(), torch.profiler.profile() as prof:
        model(x)
    names = [e.key for e in prof.key_averages()]
    ours = [n for n in names if n.startswith("llvmaccel_main[")]
    assert ours and f"relu@{SOURCE}" in ours[0]


def test_perf_map_lists_compiled_kernels(tmp_path):
    # A child process: the map is per process, and enabling it must come
    # before the first compilation.
    script = tmp_path / "run.py"
    script.write_text(textwrap.dedent("""
        import numpy as np, llvmaccel.jax as lj, jax.numpy as jnp
        from llvmaccel import profiling
        profiling.enable_perf_map()
        f = lj.jit(lambda x: jnp.exp(x) * 2.0)
        f(np.ones(16, np.float32))
        print(profiling.perf_map_path())
        print(open("/proc/self/maps").read())
    """))
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         check=True, timeout=300, env={**os.environ, "LLVMACCEL_PERF_MAP": "0"})
    path, maps = out.stdout.split("\n", 1)
    try:
        lines = open(path).read().splitlines()
    finally:
        os.unlink(path)
    ours = [ln for ln in lines if " llvmaccel:llvmaccel_main [" in ln]
    assert len(ours) == 1, lines
    start, size, _ = ours[0].split(" ", 2)
    assert re.search(r"exp@run\.py:\d+ \(<lambda>\)", ours[0])
    start, size = int(start, 16), int(size, 16)
    assert size > 0
    # The address is inside an executable mapping of that process.
    spans = [tuple(int(a, 16) for a in m.split()[0].split("-"))
             for m in maps.splitlines() if len(m.split()) > 1 and "x" in m.split()[1]]
    assert any(lo <= start and start + size <= hi for lo, hi in spans)


def test_perf_map_off_by_default(tmp_path):
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent("""
            import os, llvmaccel.jit as j
            from llvmaccel import profiling
            m = j.compile("define i32 @f() {\\n  ret i32 1\\n}\\n")
            print(profiling.perf_map_enabled(), os.path.exists(profiling.perf_map_path()))
        """)], capture_output=True, text=True, check=True, timeout=120,
        env={k: v for k, v in os.environ.items() if k != "LLVMACCEL_PERF_MAP"})
    assert out.stdout.split() == ["False", "False"]


def _perf_record_works(tmp_path) -> str | None:
    if shutil.which("perf") is None:
        return "perf is not installed"
    probe = subprocess.run(["perf", "record", "-q", "-o", str(tmp_path / "probe.data"),
                            "--", "true"], capture_output=True, text=True, timeout=60)
    if probe.returncode != 0:
        return f"perf record is not allowed here: {probe.stderr.strip()[:200]}"
    return None


def test_perf_report_names_the_kernel(tmp_path):
    reason = _perf_record_works(tmp_path)
    if reason:
        pytest.skip(reason)
    script = tmp_path / "hot.py"
    script.write_text(textwrap.dedent("""
        import numpy as np, llvmaccel.jax as lj, jax.numpy as jnp
        f = lj.jit(lambda x: (x * 1.5 + 0.5).sum(0))
        x = np.ones((4096, 1024), np.float32)
        for _ in range(60):
            f(x)
    """))
    data = tmp_path / "perf.data"
    subprocess.run(["perf", "record", "-q", "-o", str(data), "--", sys.executable, str(script)],
                   check=True, timeout=600, capture_output=True,
                   env={**os.environ, "LLVMACCEL_PERF_MAP": "1"})
    report = subprocess.run(["perf", "report", "-i", str(data), "--stdio"], check=True,
                            capture_output=True, text=True, timeout=300).stdout
    assert re.search(r"llvmaccel:llvmaccel_main \[mul@hot\.py:\d+", report), report[:3000]


class _TwoLayers(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = torch.nn.Linear(64, 64)
        self.b = torch.nn.Linear(64, 16)

    def forward(self, x):
        h = torch.relu(self.a(x))  # first layer
        return torch.softmax(self.b(h), -1)  # second layer


def test_loop_timing_names_each_loop_nest_after_its_op():
    lines: dict[str, int] = {}
    for i, text in enumerate(open(__file__), 1):
        for k in ("# first layer", "# second layer"):
            if k in text:
                lines.setdefault(k, i)
    profiling.enable_loop_timing()
    try:
        torch._dynamo.reset()
        model = torch.compile(_TwoLayers().eval(), backend="llvmaccel")
        x = torch.randn(128, 64)
        with torch.no_grad():
            torch.testing.assert_close(model(x), _TwoLayers.forward(model._orig_mod, x))
            prof = llvmaccel.profile(model, x, repeat=5)
    finally:
        profiling.enable_loop_timing(False)
        torch._dynamo.reset()
    (k,) = prof.kernels
    assert k.loops and all(lp.entries % 5 == 0 and lp.cycles > 0 for lp in k.loops)
    assert "accel-loop-profile" not in k.passes
    ops = {lp.op for lp in k.loops}
    # (The second layer's bias add is computed in its matmul's kernel, whose
    # loops the vectorizer renamed: the layer is named by its softmax.)
    assert {"addmm", "_softmax"} <= ops
    srcs = {lp.source for lp in k.loops}
    assert f"test_profiling.py:{lines['# first layer']} (forward)" in srcs
    assert f"test_profiling.py:{lines['# second layer']} (forward)" in srcs
    assert sum(lp.seconds for lp in k.loops) <= k.total_ns / 1e9 * 1.05
    assert "  loop n" in str(prof)


def test_loop_timing_is_off_by_default_and_costs_nothing():
    assert not profiling.loop_timing_enabled()
    assert profiling.with_loop_timing("default<O3>") == "default<O3>"
    model, x = _compiled()
    with torch.no_grad():
        prof = llvmaccel.profile(model, x)
    assert prof.kernels[0].loops == []
