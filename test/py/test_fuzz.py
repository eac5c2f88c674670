"""The kernel generator, llvmaccel fuzz, reduction and cross-target runs."""

from __future__ import annotations

import random
import subprocess
import sys
import time
from pathlib import Path

import pytest

import llvmaccel
from conftest import AXPY_IR, GATHER_IR
from llvmaccel import kernelgen
from llvmaccel.check import check
from llvmaccel.crosstarget import (
    _address_spaces,
    available_targets,
    check_targets,
    to_global_address_space,
)
from llvmaccel.fuzz import fuzz
from llvmaccel.irinfo import describe
from llvmaccel.reduce import reduce

HERE = Path(__file__).resolve().parent
PLANTED = f"sh {HERE / 'planted_miscompile.sh'}"


@pytest.mark.parametrize("shape", sorted(kernelgen.SHAPES))
def test_every_shape_is_valid_ir_with_specs_for_its_parameters(shape):
    features = set()
    for seed in range(30 if shape in kernelgen.LOOP_SHAPES else 6):
        if shape not in kernelgen.available_shapes():
            pytest.skip(f"{shape} needs mlir-opt and clang of llvmaccel's LLVM release")
        k = kernelgen.generate(seed, shape)
        assert k.shape == shape
        llvmaccel.parse_ir(k.ir).verify()
        names = {p.name for p in describe(k.ir, k.function).params}
        assert set(k.args) <= names
        features.update(k.features)
    assert kernelgen.generate(5, shape).ir == kernelgen.generate(5, shape).ir
    assert len(features) > 5  # types, sizes and variants really vary


TASK_SHAPES = [s for s in kernelgen.SHAPES if s not in kernelgen.LOOP_SHAPES]
needs_task_tools = pytest.mark.skipif(
    not set(TASK_SHAPES) <= set(kernelgen.available_shapes()),
    reason="the task shapes need mlir-opt/mlir-translate, the MLIR async runtime and clang")


@needs_task_tools
def test_task_shapes_run_and_accel_async_fusion_transforms_a_third_of_them():
    """MLIR async graphs against the real runtime and launch loops against the
    recording runtime: before and after agree, and the pass really acts."""
    transformed = total = 0
    for shape in TASK_SHAPES:
        for seed in range(4):
            k = kernelgen.generate(seed, shape)
            r = check(k.ir, k.function, "accel-async-fusion", args=k.args, cases=6,
                      target="host", compile_pipeline=k.compile_pipeline,
                      libraries=k.libraries)
            assert r.ok, (shape, seed, [str(f) for f in r.findings])
            assert r.agreed >= 3, (shape, seed, r.summary())
            total += 1
            transformed += bool(r.fired.get("accel-async-fusion"))
    assert 3 * transformed >= total, (transformed, total)


def test_task_generators_cover_what_the_pass_acts_on_and_declines():
    """The programs before lowering (pure Python): every feature shows up."""
    import random

    from llvmaccel import taskgen
    features = set()
    for seed in range(60):
        for shape in taskgen.ASYNC_SHAPES:
            g = taskgen._AsyncGen(random.Random(f"{shape}:{seed}"), shape)
            text, _, _ = g.build()
            assert text.count("{") == text.count("}")
            features.update(g.features)
        for dialect in ("cuda", "hip"):
            lg = taskgen._LaunchGen(random.Random(seed), dialect)
            lg.build(256, 256)
            features.update(lg.features)
        features.update(taskgen._ze_program(random.Random(seed), 256, 256)[1])
    for needed in ("chain", "fan-out/fan-in", "value", "error-path", "group", "group-loop",
                   "await_all in a task", "task-loop", "work-loop", "caller-await",
                   "joined by a group", "loop=plain", "loop=sync", "loop=varying",
                   "loop=default", "loop=two-streams", "loop=cond", "loop=nested",
                   "loop=host-work", "loop=nowait", "loop=no-reset", "loop=indexed"):
        assert needed in features, needed


def _drop_calls(ir: str, callee: str) -> str:
    """The module with every call of ``callee`` removed (its result 0)."""
    import re
    lines = ir.splitlines()
    dropped = 0
    for i, line in enumerate(lines):
        m = re.match(r"\s*(%[\w.]+ = )?(tail )?call [^@]*@" + callee + r"\(", line)
        if m:
            lines[i] = f"  {m.group(1)}add i32 0, 0" if m.group(1) else ""
            dropped += 1
    assert dropped, f"no call of {callee}"
    return "\n".join(lines) + "\n"


@needs_task_tools
def test_a_dropped_kernel_launch_and_a_lost_task_error_are_found():
    """The harness can fail: the recorder's log shows a launch that is gone,
    the awaited token's error state shows an error that was lost."""
    k = kernelgen.generate(0, "launch-cuda")
    after = _drop_calls(k.ir, "cudaLaunchKernel")
    r = check(k.ir, "kernel", after=after, args=k.args, cases=16, libraries=k.libraries)
    assert [f.kind for f in r.findings] == ["mismatch"], r.summary()
    # the number of streams that ran kernels (returned) or the log (parameter 0)
    assert r.findings[0].detail.startswith(("return value", "buffer %0")), r.findings[0]
    for seed in range(20):
        k = kernelgen.generate(seed, "async-chain")
        if "error-path" in k.features:
            break
    after = k.ir.replace("i64 1, i32 %fail)", "i64 1, i32 -1)")
    assert after != k.ir
    r = check(k.ir, "kernel", after=after, args=k.args, cases=32)
    assert [f.kind for f in r.findings] == ["mismatch"], r.summary()


def test_generator_covers_the_passes_targets():
    features = set()
    for seed in range(300):
        k = kernelgen.generate(seed, kernelgen.LOOP_SHAPES[seed % len(kernelgen.LOOP_SHAPES)])
        features.update(f.split("=")[0] for f in k.features)
        features.update(k.features)
    for needed in ("stride=negative", "stride=zero", "stride=strided", "early-exit",
                   "struct-phi", "guard=bounds", "guard=mask-store", "map=row"):
        assert needed in features, needed
    assert any(f.startswith("vector-phi") for f in features)


def test_generated_kernels_run_without_undefined_behaviour_mostly():
    agreed = undefined = 0
    for seed in range(6):
        k = kernelgen.generate(seed, kernelgen.LOOP_SHAPES[seed % len(kernelgen.LOOP_SHAPES)])
        r = check(k.ir, k.function, "verify", args=k.args, cases=8)
        assert r.ok, (k.shape, [str(f) for f in r.findings])
        agreed += r.agreed
        undefined += r.undefined
    assert agreed > 3 * undefined


def test_fuzz_prefetch_counts_and_transforms(tmp_path):
    report = fuzz("accel-prefetch", kernels=16, cases=8, seed=100, out_dir=str(tmp_path),
                  shapes=list(kernelgen.LOOP_SHAPES))
    assert report.ok, report.table()
    assert report.kernels == 16 and report.stress_modules >= 1
    assert report.kernels_transformed >= 16 // 3, report.table()
    assert "0 mismatches, 0 crashes" in report.table()
    with pytest.raises(ValueError, match="unknown llvmaccel pass"):
        fuzz("frobnicate", kernels=1)


def test_fuzz_cli_passes_any_catalog_name(tmp_path):
    out = subprocess.run([sys.executable, "-m", "llvmaccel", "fuzz", "--pass", "accel-prefetch",
                          "--kernels", "4", "--cases", "4", "--out", str(tmp_path)],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "generated kernels: 4 checked" in out.stdout
    gen = subprocess.run([sys.executable, "-m", "llvmaccel", "gen", "--shape", "csr", "--seed",
                          "1"], capture_output=True, text=True, timeout=60)
    assert gen.returncode == 0 and "--arg off=" in gen.stderr
    assert gen.stdout == kernelgen.generate(1, "csr").ir


def test_planted_miscompile_is_found_and_reduced(tmp_path):
    """The harness can fail: an off-by-one "pass" is caught and llvm-reduce shrinks
    the input while the miscompile remains."""
    src = tmp_path / "axpy.ll"
    src.write_text(AXPY_IR)
    planted = f"{PLANTED} off-by-one"
    result = check(src, "axpy", transform=planted, cases=16)
    assert result.findings and result.findings[0].kind == "mismatch"
    finding = result.findings[0]
    red = reduce(str(src), "axpy", "mismatch", transform=planted, seed=finding.seed,
                 case=finding.case, delta_passes="instructions,operands-zero")
    assert red.lines[1] < red.lines[0], red.ir
    assert "icmp eq i64 %i.next, %n" in red.ir  # what the planted bug rewrites is kept
    assert "llvmaccel check" in red.command and "--transform" in red.command
    again = check(red.path, "axpy", transform=planted, seed=finding.seed,
                  case_numbers=[finding.case, *range(8)])
    assert again.findings and again.findings[0].kind == "mismatch"
    assert check(red.path, "axpy", "verify", cases=8).ok  # the pipeline alone is fine


def test_reduction_past_its_time_bound_is_an_error(tmp_path):
    """A bounded fuzz run stays bounded: llvm-reduce is stopped at max_seconds
    (a CI run once spent 15 minutes reducing one finding)."""
    src = tmp_path / "axpy.ll"
    src.write_text(AXPY_IR)
    planted = f"{PLANTED} off-by-one"
    finding = check(src, "axpy", transform=planted, cases=16).findings[0]
    start = time.monotonic()
    with pytest.raises(RuntimeError, match="did not finish in 0.5 s"):
        reduce(str(src), "axpy", "mismatch", transform=planted, seed=finding.seed,
               case=finding.case, max_seconds=0.5)
    assert time.monotonic() - start < 30


@pytest.mark.slow
def test_planted_lookahead_in_a_generated_kernel_is_found_and_reduced(tmp_path):
    src = tmp_path / "csr.ll"
    k = kernelgen.generate(3, "csr")
    src.write_text(k.ir)
    specs = {a: s.to_text() for a, s in k.args.items()}
    planted = f"{PLANTED} lookahead"
    result = check(src, k.function, transform=planted, args=specs, cases=32)
    assert result.findings and result.findings[0].kind == "fault"
    finding = result.findings[0]
    red = reduce(str(src), k.function, "fault", transform=planted, args=specs,
                 seed=finding.seed, case=finding.case)
    assert red.lines[1] < red.lines[0]


def test_gpu_targets_compile_and_keep_address_spaces():
    k = kernelgen.generate(1, "embedding")
    moved = to_global_address_space(k.ir, "nvptx64-nvidia-cuda")
    assert _address_spaces(moved) == {1}
    generic = moved.replace("entry:\n", "entry:\n  %g = addrspacecast ptr addrspace(1) %x to ptr\n"
                            "  %gv = load i8, ptr %g\n", 1)
    assert _address_spaces(generic) == {0, 1}
    gpus = [t for t in ("nvptx", "amdgpu", "spirv") if not available_targets()[t]]
    assert "nvptx" in gpus and "amdgpu" in gpus  # SPIR-V: llc 20 and later
    rep = check_targets(k.ir, k.ir, k.function, gpus, pipeline="accel-prefetch", args=k.args)
    assert rep.ok, rep.table()
    assert all(s.startswith("compiled by llc") for s in rep.status.values()), rep.table()


@pytest.mark.slow
def test_cross_target_equivalence_and_a_planted_fault():
    avail = available_targets()
    targets = [t for t in ("x86_64", "aarch64", "riscv64", "nvptx", "amdgpu", "spirv")
               if not avail[t]]
    if "aarch64" not in targets:
        pytest.skip(f"cross tools missing: {avail}")
    k = kernelgen.generate(3, "csr")
    r = check(k.ir, k.function, "accel-prefetch", args=k.args, cases=4)
    rep = check_targets(k.ir, r.after_ir, k.function, targets, cases=6, args=k.args,
                        pipeline="accel-prefetch")
    assert rep.ok, rep.table()
    assert rep.status["aarch64"].startswith("executed")
    bad = check(k.ir, k.function, transform=f"{PLANTED} lookahead", args=k.args,
                cases=2).after_ir
    rep = check_targets(k.ir, bad, k.function, ["x86_64", "aarch64"], cases=6, args=k.args)
    assert not rep.ok and any(f.startswith("aarch64") for f in rep.findings), rep.table()


def test_cli_check_targets_runs_x86_and_compiles_for_a_gpu(tmp_path):
    k = kernelgen.generate(2, "gather")
    src = tmp_path / "k.ll"
    src.write_text(k.ir)
    specs = [a for name, s in k.args.items() for a in ("--arg", f"{name}={s.to_text()}")]
    out = subprocess.run([sys.executable, "-m", "llvmaccel", "check", str(src), "--passes",
                          "accel-prefetch", "--cases", "4", *specs, "--targets", "x86_64,nvptx"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "x86_64: executed" in out.stdout and "nvptx: compiled by llc" in out.stdout


# --- Several kernels' cases in one forked child, worker processes kept -------

def _group_jobs(planted: dict[int, tuple[str, str, int]], count: int = 8) -> list[dict]:
    """``count`` generated loop kernels through "verify" (before == after), with
    the ones in ``planted`` replaced by a planted (original, after, cases)."""
    from llvmaccel.check import make_job
    jobs = []
    for i in range(count):
        if i in planted:
            before, after, cases = planted[i]
            fn = "axpy" if "@axpy" in before else "f"
            jobs.append(make_job(before, fn, after=after, cases=cases, timeout=0.5))
            continue
        k = kernelgen.generate(700 + i, kernelgen.LOOP_SHAPES[i % len(kernelgen.LOOP_SHAPES)])
        jobs.append(make_job(k.ir, k.function, "verify", args=k.args, cases=16, timeout=0.5,
                             target="host"))
    return jobs


OFF_BY_ONE = AXPY_IR.replace("icmp eq i64 %i.next, %n", "icmp ugt i64 %i.next, %n")
SCALAR = "define i64 @f(i64 %x) {\n  %r = add i64 %x, 1\n  ret i64 %r\n}\n"
TRAP = ("define i64 @f(i64 %x) {\n  call void @llvm.trap()\n  ret i64 0\n}\n"
        "declare void @llvm.trap()\n")
HANG = "define i64 @f(i64 %x) {\nentry:\n  br label %l\nl:\n  br label %l\n}\n"


@pytest.mark.parametrize("group", [1, 8])
def test_planted_bugs_are_found_and_named_when_kernels_share_a_child(group):
    """A miscompile, a crash and a hang among generated kernels whose cases run
    in one shared child: each is the finding of its own job and case, the same
    as with a child per kernel, and the kernels around them agree."""
    from llvmaccel.check import CheckWorkers
    planted = {1: (AXPY_IR, OFF_BY_ONE, 16), 4: (SCALAR, TRAP, 4), 6: (SCALAR, HANG, 2)}
    jobs = _group_jobs(planted)
    with CheckWorkers(group=group) as workers:
        results = workers.run(jobs)
        again = workers.run(jobs[:2])  # the same worker serves a second call
        assert workers.restarts == 0
    kinds = {i: [f.kind for f in r.findings] for i, r in enumerate(results)}
    assert kinds == {0: [], 1: ["mismatch"], 2: [], 3: [], 4: ["crash"], 5: [],
                     6: ["timeout"], 7: []}, kinds
    mismatch = results[1].findings[0]
    assert "buffer %y" in mismatch.detail and "%n = " in mismatch.inputs
    assert "shared with" not in mismatch.detail  # the case alone shows it too
    alone = check(AXPY_IR, "axpy", after=OFF_BY_ONE, cases=16)
    assert (mismatch.case, mismatch.inputs) == (alone.findings[0].case, alone.findings[0].inputs)
    for i in (0, 2, 3, 5, 7):
        assert results[i].agreed + results[i].undefined == 16, results[i].summary()
        assert results[i].times.get("execute", 0) > 0 and results[i].times.get("jit", 0) > 0
    assert [f.kind for f in again[1].findings] == ["mismatch"] and again[0].ok


def test_a_worker_killed_by_a_job_is_restarted_and_the_rest_still_run(tmp_path):
    """A library whose constructor aborts kills the worker at the compile stage
    of its job while grouped kernels wait: that job gets the crash finding and
    the others run in a new worker, in groups again."""
    import shutil

    from llvmaccel.check import CheckWorkers, make_job
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        pytest.skip("needs a C compiler")
    src = tmp_path / "abort.c"
    src.write_text("#include <stdlib.h>\n__attribute__((constructor)) static void die(void)"
                   " { abort(); }\n")
    lib = tmp_path / "libabort.so"
    subprocess.run([cc, "-shared", "-fPIC", "-o", str(lib), str(src)], check=True)
    jobs = _group_jobs({}, 6)
    jobs.insert(3, make_job(SCALAR, "f", after=SCALAR, cases=4, libraries=[str(lib)]))
    with CheckWorkers(group=4) as workers:
        results = workers.run(jobs)
        assert workers.restarts == 1
    assert [f.kind for f in results[3].findings] == ["crash"]
    assert results[3].findings[0].stage == "compile"
    for i in (0, 1, 2, 4, 5, 6):
        assert results[i].ok and results[i].cases == 16, (i, results[i].summary())


def test_fuzz_with_groups_and_two_workers_counts_every_kernel(tmp_path):
    report = fuzz("accel-prefetch", kernels=12, cases=8, seed=4000, out_dir=str(tmp_path),
                  shapes=list(kernelgen.LOOP_SHAPES), jobs=2, batch=6)
    assert report.ok, report.table()
    assert report.kernels == 12 and report.next_seed == 4012
    assert report.stress_modules >= 2
    assert report.cases == (12 - report.kernels_unchanged) * 8
    assert report.times["worker:execute"] > 0 and report.times["generate"] > 0
    assert "jit" in report.stage_table()


def test_shape_weights_follow_what_the_pass_transforms_and_keep_exploring():
    from collections import Counter

    from llvmaccel.fuzz import EXPLORE, shape_weights
    names = ["a", "b", "c", "d", "slow"]
    uniform = shape_weights(names, {})
    assert uniform == pytest.approx([0.2] * 5)
    seen = {n: Counter(checked=10, transformed=0, seconds=1.0) for n in names}
    seen["b"]["transformed"] = 7
    seen["slow"]["seconds"] = 30.0  # 3 s a kernel against 0.1 s
    w = dict(zip(names, shape_weights(names, seen), strict=True))
    assert sum(w.values()) == pytest.approx(1.0)
    assert w["b"] > 0.7  # most draws go where the pass acts
    assert all(w[n] > 0 for n in names)  # and none is dropped
    assert w["a"] == pytest.approx(EXPLORE / 5)
    assert w["slow"] == pytest.approx(EXPLORE / 5 * 0.1 / 3.0)  # by time, not count
    # A prior steers a run that has seen nothing, and weighs at most 50 kernels.
    prior = {"c": Counter(checked=5000, transformed=5000, seconds=500.0)}
    wp = dict(zip(names, shape_weights(names, {}, prior), strict=True))
    assert wp["c"] > max(wp[n] for n in names if n != "c")
    seen["c"] = Counter(checked=200, transformed=0, seconds=20.0)
    wc = dict(zip(names, shape_weights(names, seen, prior), strict=True))
    assert wc["c"] < wc["b"]  # the run's own 200 kernels outweigh it


LOAD_AT = """
define i64 @f(ptr dereferenceable(16) %p, i64 %i) {
  %q = getelementptr i64, ptr %p, i64 %i
  %v = load i64, ptr %q
  ret i64 %v
}
"""
# Wrong for %i == 1 only.
LOAD_AT_WRONG = LOAD_AT.replace("  ret i64 %v", "  %c = icmp eq i64 %i, 1\n"
                                "  %d = zext i1 %c to i64\n  %r = add i64 %v, %d\n  ret i64 %r")


def _results(jobs: list[dict], guard: bool, monkeypatch) -> list:
    from llvmaccel.check import CheckWorkers
    monkeypatch.setenv("LLVMACCEL_CHECK_GUARD", "1" if guard else "0")
    with CheckWorkers(group=1) as workers:
        return workers.run(jobs)


def test_guarded_calls_survive_faults_and_give_the_same_results(monkeypatch):
    """A fault ends the call, not the child (llvmaccel._guard), and every
    result is what a child per faulting call gives: the same findings with
    the same cases, the same agreed and undefined counts, fewer children."""
    from llvmaccel.check import make_job
    gathers = [kernelgen.generate(s, "gather") for s in range(40, 46)]
    jobs = [make_job(k.ir, k.function, "verify", args=k.args, cases=32, timeout=0.5,
                     target="host") for k in gathers]
    jobs.append(make_job(GATHER_IR, "gather", transform=f"{PLANTED} lookahead", cases=32))
    jobs.append(make_job(LOAD_AT, "f", after=LOAD_AT_WRONG, cases=64,
                         args={"i": "values:-1/0/1/2/7"}))
    on, off = _results(jobs, True, monkeypatch), _results(jobs, False, monkeypatch)
    for a, b in zip(on, off, strict=True):
        assert [(f.kind, f.case) for f in a.findings] == [(f.kind, f.case) for f in b.findings]
        assert (a.agreed, a.undefined, a.cases) == (b.agreed, b.undefined, b.cases)
    assert [f.kind for f in on[-2].findings] == ["fault"]
    assert "SIGSEGV" in on[-2].findings[0].detail
    assert [f.kind for f in on[-1].findings] == ["mismatch"]
    assert "%i = 1" in on[-1].findings[0].inputs
    assert sum(r.undefined for r in on[:-2]) > 0  # the generated gathers faulted sometimes
    children_on = sum(r.times["children"] for r in on[:-2])
    children_off = sum(r.times["children"] for r in off[:-2])
    assert children_on == 4 * len(gathers) < children_off  # 2 batches of 16, 2 versions


def test_variants_are_the_seeds_kernel_with_one_choice_made():
    """guarded:window is the seed's guarded kernel with the window guard; the
    plain shape is unchanged; fuzz weights the variants apart."""
    plain = kernelgen.generate(11, "guarded")
    for variant in kernelgen.VARIANTS["guarded"]:
        k = kernelgen.generate(11, f"guarded:{variant}")
        assert k.shape == f"guarded:{variant}" and f"guard={variant}" in k.features
        llvmaccel.parse_ir(k.ir).verify()
        assert k.args.keys() == plain.args.keys()
    kind = next(f for f in plain.features if f.startswith("guard="))[len("guard="):]
    assert kernelgen.generate(11, f"guarded:{kind}").ir == plain.ir
    with pytest.raises(ValueError, match="no variant"):
        kernelgen.generate(1, "guarded:sideways")
    with pytest.raises(ValueError, match="no variant"):
        kernelgen.generate(1, "csr:window")
    units = kernelgen.units(["csr", "guarded", "guarded:both"])
    assert units == ["csr", "guarded:both", "guarded:bounds", "guarded:mask-store",
                     "guarded:window"]


def test_a_case_the_original_runs_differently_each_time_is_not_a_finding():
    """Before and after the same program, whose result is the cycle counter:
    every case differs, and the original differs from itself on each, so none
    is a finding (as for the MLIR async programs' flaky error paths); a
    deterministic miscompile next to it is still found."""
    clock = ("define i64 @f(i64 %x) {\n  %t = call i64 @llvm.readcyclecounter()\n"
             "  %r = add i64 %t, %x\n  ret i64 %r\n}\ndeclare i64 @llvm.readcyclecounter()\n")
    r = check(clock, "f", after=clock, cases=4)
    assert r.ok and r.undefined == 4 and r.agreed == 0, r.summary()
    wrong = check(SCALAR, "f", after=SCALAR.replace("add i64 %x, 1", "add i64 %x, 2"), cases=4)
    assert [f.kind for f in wrong.findings] == ["mismatch"]


#: Reads outside its buffer on one placement of %p in 16 or so (a hash of
#: its page number and %x says which): as a gather with an index out of range
#: reads some 16 GiB past its table, mapped or not by where the table is
#: (fuzz seed 3677356252).
PLACED = """define i64 @f(ptr %p, i64 %x) {
entry:
  %a = ptrtoint ptr %p to i64
  %page = lshr i64 %a, 12
  %key = xor i64 %page, %x
  %mix = mul i64 %key, -7046029254386353131
  %top = lshr i64 %mix, 60
  %wild = icmp eq i64 %top, 0
  br i1 %wild, label %far, label %near
far:
  %v = load volatile i64, ptr inttoptr (i64 16 to ptr)
  ret i64 %v
near:
  ret i64 0
}
"""


@pytest.mark.parametrize("group", [1, 8])
def test_an_original_that_runs_by_where_its_buffers_are_is_undefined_not_a_finding(group):
    """The same program before and after: each version runs on buffers of its
    own, so on some cases the original runs and the copy faults. The original
    run again on the very buffers the copy faulted on faults too: those cases
    are undefined in the original, none a finding (before, the original ran
    again only on buffers of its own, and a case in 16 or so was reported as
    a fault of the pass). A pass's own fault is still found. ``group``: each
    job's cases in children of their own, or several jobs' in one child."""
    from llvmaccel.check import CheckWorkers, make_job
    args = {"p": "bytes:64,elem:i64", "x": "range:0..1000"}
    past = PLACED.replace("near:\n  ret i64 0", "near:\n  %q = getelementptr i8, ptr %p, i64 64\n"
                          "  %w = load volatile i64, ptr %q\n  ret i64 %w")
    jobs = [make_job(PLACED, "f", after=PLACED, cases=64, seed=s, args=args) for s in range(4)]
    jobs.append(make_job(PLACED, "f", after=past, cases=64, args=args))
    with CheckWorkers(group=group) as workers:
        results = workers.run(jobs, raise_errors=False)
    for r in results[:-1]:
        assert r.ok and r.cases == 64, r.summary()
    assert sum(r.undefined for r in results[:-1]) > 0, [r.summary() for r in results]
    assert [f.kind for f in results[-1].findings] == ["fault"], results[-1].summary()


def test_kernels_a_pass_leaves_unchanged_are_verified_not_executed(tmp_path):
    """accel-phi-decompose acts on aggregate phis only: the gathers it leaves
    as they were are counted but not executed (running the same IR twice
    would test the original's determinism, not the pass); the aggregate-phi
    kernels it splits are executed, every case."""
    report = fuzz("accel-phi-decompose", kernels=12, cases=4, seed=100, out_dir=str(tmp_path),
                  shapes=["gather", "aggphi"], stress=0)
    assert report.ok, report.table()
    by = report.by_shape
    assert by["gather"]["checked"] >= 1 and by["gather"]["transformed"] == 0, by
    assert report.kernels_unchanged >= by["gather"]["checked"], report.table()
    assert report.kernels_unchanged < report.kernels, report.table()
    assert report.cases == (report.kernels - report.kernels_unchanged) * 4, report.table()
    assert "left unchanged (not executed)" in report.table()
    # check itself executes an unchanged module unless told not to, and says
    # it is unchanged though the pipeline set the host's triple and CPU.
    for target in (None, "host"):
        r = check(GATHER_IR, "gather", pipeline="accel-phi-decompose", cases=4, target=target)
        assert r.cases == 4 and not r.changed and "transformed: no" in r.summary(), r.summary()
    assert check(GATHER_IR, "gather", pipeline="accel-prefetch", cases=4, target="host").changed


def test_a_task_awaits_its_operands_in_an_order_mlir_runs_without_races_or_deadlocks():
    """MLIR's lowering stops a task at its first operand in error (the ones
    after it may still run when its token is set, racing with the caller's
    comparison) and drops the token twice when that operand is the first: of
    several operands, the first is error-free and only the last task may fail.
    Its ref counting frees the token of a task with a value operand on a
    shared error path: a value in error is a task's only operand. MLIR's
    runtime resumes awaiters under the awaited object's lock: nothing is
    awaited after an operand that waits for it (the original program hung
    one run in a few hundred)."""
    from llvmaccel.taskgen import _operands_in_order, _Task

    def task(i: int, risky: bool, closure: tuple[int, ...] = ()) -> _Task:
        return _Task(i, f"%t{i}", f"%v{i}", may_error=risky, closure=set(closure))

    a, b, c, r1, r2 = task(0, False), task(1, False), task(2, False), task(3, True), task(4, True)
    assert _operands_in_order([r1, a], []) == ([a, r1], [])          # error-free first
    assert _operands_in_order([a, r1, r2], []) == ([a, r2], [])      # one in error, last
    assert _operands_in_order([r1, r2], []) == ([r2], [])
    assert _operands_in_order([r1], []) == ([r1], [])
    assert _operands_in_order([a, r1], [b]) == ([a], [b])            # values: none in error
    assert _operands_in_order([a], [b, r2]) == ([], [r2])            # or it alone
    assert _operands_in_order([a, r1], [r1]) == ([], [r1])
    assert _operands_in_order([b, a], [c]) == ([a, b], [c])          # in the order made
    waits_for_b = task(5, False, (1,))
    assert _operands_in_order([waits_for_b, a], [b]) == ([a], [b])  # b after its waiter
    assert _operands_in_order([waits_for_b, b], []) == ([b, waits_for_b], [])


@needs_task_tools
def test_generate_many_makes_the_kernels_generate_makes():
    """One run of the MLIR tools for many programs: the same kernels (up to the
    numbering of the assertion messages' globals), and a program the tools
    reject is that program's error, not the batch's."""
    import re

    from llvmaccel import taskgen
    requests = [(s, ("async-chain", "async-dag", "async-group", "async-loop", "gather",
                     "launch-ze")[s % 6]) for s in range(24)]
    many = kernelgen.generate_many(requests)
    def norm(ir: str) -> str:
        return re.sub(r"@assert_msg(_\d+)?\b", "@assert_msg", ir)
    for (seed, shape), k in zip(requests, many, strict=True):
        one = kernelgen.generate(seed, shape)
        assert isinstance(k, kernelgen.GeneratedKernel), k
        assert (k.shape, k.args, k.features) == (one.shape, one.args, one.features)
        assert norm(k.ir) == norm(one.ir), (seed, shape)
        assert k.seconds > 0
    good = taskgen.draft_async(random.Random(1), "async-chain").program.source
    out = taskgen.lower_mlir_many([good, "func.func @graph( {", good])
    assert isinstance(out[1], RuntimeError) and "mlir-opt rejected" in str(out[1])
    assert [norm(x) for x in (out[0], out[2])] == [norm(taskgen.lower_mlir(good))] * 2


def test_a_crashing_llvm_reduce_hands_over_to_another(tmp_path, monkeypatch):
    """LLVM 22's llvm-reduce crashed on an llvm-stress module that LLVM 19's
    reduced: a tool that dies by a signal is followed by the next release's."""
    from llvmaccel import reduce as reduce_module
    crashing = tmp_path / "llvm-reduce"
    crashing.write_text("#!/bin/bash\nkill -SEGV $$\n")
    crashing.chmod(0o755)
    real = reduce_module.find_llvm_tool("llvm-reduce")
    monkeypatch.setattr(reduce_module, "_reduce_tools", lambda: [str(crashing), real])
    src = tmp_path / "axpy.ll"
    src.write_text(AXPY_IR)
    planted = f"{PLANTED} off-by-one"
    finding = check(src, "axpy", transform=planted, cases=16).findings[0]
    red = reduce(str(src), "axpy", "mismatch", transform=planted, seed=finding.seed,
                 case=finding.case, delta_passes="instructions")
    assert red.tool == real and red.crashed == [f"{crashing} (signal 11)"]
    assert red.lines[1] < red.lines[0]
    monkeypatch.setattr(reduce_module, "_reduce_tools", lambda: [str(crashing)])
    with pytest.raises(RuntimeError, match="signal|-11"):
        reduce(str(src), "axpy", "mismatch", transform=planted, seed=finding.seed,
               case=finding.case)
