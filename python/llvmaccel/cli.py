"""The ``llvmaccel`` command line (also ``python -m llvmaccel``)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import IRParseError, LLVMAccelError

if TYPE_CHECKING:
    from .ir import Module
    from .pipeline import PassInfo

__all__ = ["main"]


# The native extension (and with it libLLVM) is imported by the commands, not
# here: `llvmaccel --help` works without it, and a command run without it is
# one LLVMNotFoundError message (what to install), not a traceback.
def _pipeline() -> Any:
    from . import pipeline

    return pipeline


def _load_module(path: str) -> Module:
    from .ir import load_module as load

    return load(path)


class _VersionAction(argparse.Action):
    """``--version``, with the LLVM release (which needs the extension)."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS,
                 default: str = argparse.SUPPRESS, help: str | None = None) -> None:
        super().__init__(option_strings, dest, nargs=0, default=default, help=help)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: object, option_string: str | None = None) -> None:
        try:
            llvm = f"LLVM {_pipeline().llvm_version()}"
        except LLVMAccelError as err:
            llvm = f"LLVM not loaded: {str(err).splitlines()[0]}"
        print(f"llvmaccel 0.1.0 ({llvm})")  # on stdout, as argparse's own version action
        parser.exit()


def _cmd_plugin_path(args: argparse.Namespace) -> int:
    print(_pipeline().plugin_path())
    return 0


def _cmd_passes(args: argparse.Namespace) -> int:
    catalog = _pipeline().passes()
    if args.json:
        print(json.dumps([_pass_dict(p) for p in catalog], indent=2))
        return 0
    for info in catalog:
        print(f"{info.name}  ({info.kind} pass, default pipelines at {info.extension_point})")
        print(f"  {info.summary}")
        width = max((len(p.name) for p in info.parameters), default=0)
        for param in info.parameters:
            print(f"    {param.name.ljust(width)}  {param.help} [default: {param.default}]")
    return 0


def _pass_dict(info: PassInfo) -> dict:
    return {
        "name": info.name,
        "kind": info.kind,
        "extension_point": info.extension_point,
        "summary": info.summary,
        "parameters": [dataclasses.asdict(p) for p in info.parameters],
    }


def _cmd_opt(args: argparse.Namespace) -> int:
    try:
        module = _load_module(args.input)
    except IRParseError as err:
        print(f"{args.input}:{err.line}:{err.column}: error: {err.message}", file=sys.stderr)
        return 1
    report = _pipeline().run_passes(
        module,
        args.passes,
        verify_each=args.verify_each,
        remarks=args.remark_filter,
        target=args.target,
        auto=args.auto,
    )
    if args.output and args.output != "-":
        out = Path(args.output)
        if out.suffix == ".bc" and not args.S:
            out.write_bytes(module.to_bitcode())
        else:
            out.write_text(str(module))
    elif not args.disable_output:
        sys.stdout.write(str(module))
    if args.remarks:
        print(report.table(), file=sys.stderr)
    if args.stats:
        for name, value in sorted(report.statistics.items()):
            print(f"{value:>8}  {name}", file=sys.stderr)
    return 0


def _cmd_check(args: argparse.Namespace) -> int:
    from .check import check, cli_args, defined_functions, reproduce_command
    from .crosstarget import check_targets

    text = str(_load_module(args.input))
    functions = [args.function] if args.function else defined_functions(text)
    modes = sum(x is not None for x in (args.passes, args.after, args.transform))
    if modes != 1:
        print("llvmaccel: error: give one of --passes, --after or --transform", file=sys.stderr)
        return 1
    specs = cli_args(args.arg)
    status = 0
    for fn in functions:
        result = check(args.input, fn, args.passes, after=args.after, transform=args.transform,
                       cases=args.cases, seed=args.seed, args=specs, timeout=args.timeout,
                       ulps=args.ulps, case_numbers=[args.case] if args.case is not None else None,
                       target=args.target, compile_pipeline=args.compile_pipeline,
                       libraries=args.load)
        print(result.summary())
        if args.verbose and result.layout:
            print(f"  inputs: {result.layout}")
        for finding in result.findings:
            status = 1
            print("  " + str(finding).replace("\n", "\n  "))
            print("  reproduce: " + reproduce_command(
                args.input, fn, pipeline=args.passes, after=args.after, transform=args.transform,
                seed=finding.seed or 0, case=finding.case, args=args.arg, target=args.target,
                libraries=args.load))
            if args.reduce and finding.kind != "error":
                status = max(status, _reduce_finding(args, fn, finding))
        if args.targets and result.ok:
            report = check_targets(text, result.after_ir, fn, args.targets.split(","),
                                   cases=min(args.cases, 16), seed=args.seed, args=specs,
                                   pipeline=args.passes)
            print(report.table())
            if not report.ok:
                status = 1
    return status


def _reduce_finding(args: argparse.Namespace, fn: str, finding: object) -> int:
    from .reduce import reduce

    try:
        red = reduce(args.input, fn, finding.kind, pipeline=args.passes, after=args.after,
                     transform=args.transform,
                     args={a.split("=", 1)[0]: a.split("=", 1)[1] for a in args.arg or []},
                     seed=finding.seed or 0, case=finding.case, output=args.reduce_output,
                     target=args.target)
    except (RuntimeError, FileNotFoundError) as err:
        print(f"  not reduced: {err}", file=sys.stderr)
        return 1
    print(f"  reduced by llvm-reduce in {red.seconds:.1f} s ({red.lines[0]} -> {red.lines[1]} "
          f"lines): {red.path}")
    print("  reproduce the reduced case: " + red.command)
    print("  " + red.ir.strip().replace("\n", "\n  "))
    return 1


def _cmd_fuzz(args: argparse.Namespace) -> int:
    from .fuzz import fuzz

    names = args.pass_name or [p.name for p in _pipeline().passes()]
    status = 0
    for name in names:
        report = fuzz(name, seconds=args.seconds, kernels=args.kernels, seed=args.seed,
                      cases=args.cases, out_dir=args.out, reduce_findings=not args.no_reduce,
                      reduce_seconds=args.reduce_seconds or None, params=args.params or "",
                      shapes=args.shape, progress=args.progress, jobs=args.jobs,
                      group=args.group)
        print(report.table(), flush=True)
        if args.profile:
            print(report.stage_table(), flush=True)
        if args.json:
            _append_json(args.json, report)
        if not report.ok:
            status = 1
    return status


def _append_json(path: str, report: object) -> None:
    data = {"pass": report.pass_name, "pipeline": report.pipeline, "seed": report.seed,
            "seconds": round(report.seconds, 1), "kernels": report.kernels,
            "kernels_transformed": report.kernels_transformed,
                     "kernels_unchanged": report.kernels_unchanged, "cases": report.cases,
            "stress_modules": report.stress_modules,
            "stress_transformed": report.stress_transformed,
            "findings": dict(report.findings), "generator_errors": report.generator_errors,
            "next_seed": report.next_seed,
            "by_shape": {k: {c: round(n, 3) if isinstance(n, float) else n
                             for c, n in v.items()} for k, v in report.by_shape.items()},
            "times": {k: round(v, 3) for k, v in report.times.items()}}
    with open(path, "a") as f:
        f.write(json.dumps(data) + "\n")


def _cmd_gen(args: argparse.Namespace) -> int:
    from .kernelgen import generate

    kernel = generate(args.seed, args.shape)
    sys.stdout.write(kernel.ir)
    specs = " ".join(f"--arg {a}={s.to_text()}" for a, s in kernel.args.items())
    extra = "".join(f" --load {lib}" for lib in kernel.libraries)
    if kernel.compile_pipeline != "verify":
        extra += f" --compile-pipeline '{kernel.compile_pipeline}'"
    print(f"; inputs: {specs}{extra}", file=sys.stderr)
    return 0


def _cmd_profile(args: argparse.Namespace) -> int:
    from .check import cli_args, defined_functions
    from .irprofile import profile_ir

    module = _load_module(args.input)
    functions = [args.function] if args.function else defined_functions(str(module))
    if not functions:
        print(f"llvmaccel: error: {args.input} defines no function", file=sys.stderr)
        return 1
    specs = cli_args(args.arg)
    results = []
    for fn in functions:
        prof = profile_ir(module, fn, args.passes, compare=args.compare,
                          loops=not args.no_loops, args=specs, rounds=args.rounds,
                          seed=args.seed, timeout=args.timeout)
        results.append(prof)
        if not args.json:
            print(prof.table())
    if args.json:
        print(json.dumps([p.to_dict() for p in results], indent=2))
    return 0


def _cmd_blas(args: argparse.Namespace) -> int:
    from . import blas

    if args.library:
        os.environ["LLVMACCEL_BLAS_LIBRARY"] = args.library
    if args.threads is not None:
        blas.set_num_threads(args.threads)
    info: dict[str, Any] = {"library": blas.library(), "mode": blas.mode(),
                            "status": blas.status(), "threads": blas.num_threads()}
    if blas.load() is not None and blas.mode() == "auto":
        if args.measure:
            blas.calibrate(4, force=True)
        info["min_flops"], info["source"] = blas.threshold(4)
        info["text"] = blas.threshold_text(4)
        cal = blas.measured(4)
        if cal is not None:
            info.update(date=cal.date, key=cal.key, cached=cal.cached,
                        shapes=[dict(zip(("m", "n", "k", "own_us", "library_us"), row,
                                         strict=True)) for row in cal.shapes])
    if args.json:
        print(json.dumps(info, indent=2))
        return 0
    print(f"library: {info['library']} ({info['status']})")
    print(f"mode: {info['mode']}; threads: {info['threads'] or 'the library default'}")
    if "min_flops" in info:
        print(f"f32 matmuls call the library {info['text']}"
              + (f" on {info['date']}" if "date" in info else ""))
        for row in info.get("shapes", []):
            print(f"  {row['m']}x{row['n']}x{row['k']}: llvmaccel {row['own_us']} us, "
                  f"library {row['library_us']} us")
    return 0


def _cmd_demo(args: argparse.Namespace) -> int:
    from .demo import run_demo

    return run_demo(quick=args.quick, runs=args.runs, kernels=args.kernel)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="llvmaccel",
        description="LLVM IR optimizations for AI workloads.",
    )
    parser.add_argument("--version", action=_VersionAction,
                        help="show the llvmaccel and LLVM versions and exit")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("plugin-path", help="print the LLVMAccel plugin's path")
    p.set_defaults(func=_cmd_plugin_path)

    p = sub.add_parser("passes", help="list the llvmaccel passes and their parameters")
    p.add_argument("--json", action="store_true", help="print the catalog as JSON")
    p.set_defaults(func=_cmd_passes)

    p = sub.add_parser("opt", help="run a pass pipeline over a .ll or .bc file (in-process)")
    p.add_argument("input", help="input .ll or .bc file")
    p.add_argument("-passes", "--passes", required=True, metavar="PIPELINE",
                   help="textual pipeline, as for opt -passes=")
    p.add_argument("-o", "--output", help="output file (.bc writes bitcode); default stdout")
    p.add_argument("-S", action="store_true", help="write text even to a .bc name")
    p.add_argument("--disable-output", action="store_true", help="do not print the module")
    p.add_argument("--remarks", action="store_true", help="print remarks as a table on stderr")
    p.add_argument("--remark-filter", default="accel-.*",
                   help="regex of passes whose remarks are shown (default: accel-.*)")
    p.add_argument("--stats", action="store_true", help="print statistics on stderr")
    p.add_argument("--verify-each", action="store_true", help="verify after every pass")
    p.add_argument("--target", choices=["host"], help="optimize for this machine")
    p.add_argument("--auto", help="llvmaccel passes in default<On>: all, none or a comma list")
    p.set_defaults(func=_cmd_opt)

    p = sub.add_parser("check", help="run a function before and after a transformation and "
                       "compare (differential testing)")
    p.add_argument("input", help="the original module (.ll or .bc)")
    p.add_argument("--function", "-f", help="function to run (default: every definition)")
    p.add_argument("-passes", "--passes", metavar="PIPELINE", help="pipeline to apply")
    p.add_argument("--after", help="the transformed module, made elsewhere")
    p.add_argument("--transform", metavar="CMD",
                   help="shell command turning IR on stdin into IR on stdout")
    p.add_argument("--cases", type=int, default=64, help="inputs to run (default 64)")
    p.add_argument("--seed", type=int, default=0, help="seed of the inputs (default 0)")
    p.add_argument("--case", type=int, help="run only this case (reproduce a finding)")
    p.add_argument("--arg", action="append", metavar="NAME=SPEC",
                   help="input spec, e.g. B=bytes:8192,elem:i64,bound:1024 or n=range:0..100 "
                        "(keys bytes, elem, bound, sorted, values:a/b/c, range:lo..hi)")
    p.add_argument("--timeout", type=float, default=2.0, help="seconds per run (default 2)")
    p.add_argument("--ulps", type=int, default=16,
                   help="tolerance for fast-math functions, in ULPs (default 16)")
    p.add_argument("--reduce", action="store_true", help="reduce a failure with llvm-reduce")
    p.add_argument("--reduce-output", help="where to write the reduced module")
    p.add_argument("--targets", help="also compile and run before/after for these targets "
                   "(x86_64,aarch64,riscv64 under qemu-user; nvptx,amdgpu,spirv compiled)")
    p.add_argument("--target", choices=["host"],
                   help="run the pipeline for this machine (the passes see its target facts)")
    p.add_argument("--load", action="append", metavar="LIB",
                   help="load this shared library first (the code calls it; repeatable)")
    p.add_argument("--compile-pipeline", metavar="PIPELINE",
                   help="pipeline both versions go through before the JIT (default: none, "
                        "coroutine splitting for presplit coroutines)")
    p.add_argument("-v", "--verbose", action="store_true", help="print how inputs are made")
    p.set_defaults(func=_cmd_check)

    p = sub.add_parser("fuzz", help="generated kernels and llvm-stress modules through a pass")
    p.add_argument("--pass", dest="pass_name", action="append", metavar="NAME",
                   help="llvmaccel pass (repeatable; default: every pass in the plugin)")
    p.add_argument("--params", help="pass parameters, e.g. distance=4")
    p.add_argument("--seconds", type=float, help="time budget per pass")
    p.add_argument("--kernels", type=int, help="generated kernels per pass")
    p.add_argument("--seed", type=int, default=0, help="first kernel seed (default 0)")
    p.add_argument("--cases", type=int, default=16, help="inputs per kernel (default 16)")
    p.add_argument("--shape", action="append",
                   help="generate only this shape, or variant (guarded:window; repeatable)")
    p.add_argument("--out", default="fuzz-findings", help="where failing cases are kept")
    p.add_argument("--no-reduce", action="store_true", help="keep failing cases unreduced")
    p.add_argument("--reduce-seconds", type=float, default=300.0,
                   help="keep a case unreduced when llvm-reduce takes longer (default 300; "
                        "0: no bound)")
    p.add_argument("--json", help="append the counts as a JSON line to this file")
    p.add_argument("--progress", action="store_true", help="a line per batch")
    p.add_argument("--jobs", type=int, default=1,
                   help="checking worker processes, one per core to use (default 1)")
    p.add_argument("--group", type=int, default=None,
                   help="loop kernels whose cases share a forked child (default 8; 1: a "
                        "child per kernel and version)")
    p.add_argument("--profile", action="store_true",
                   help="print the seconds spent per stage (generation, llvm-stress, the "
                        "worker's pipeline, JIT, inputs, forked runs...)")
    p.set_defaults(func=_cmd_fuzz)

    p = sub.add_parser("profile", help="time a function of an IR file on generated inputs, "
                       "per loop nest, with and without the llvmaccel passes")
    p.add_argument("input", help="a .ll or .bc file")
    p.add_argument("--function", "-f", help="function to run (default: every definition)")
    p.add_argument("-passes", "--passes", default="default<O3>", metavar="PIPELINE",
                   help="pipeline to compile with (default: default<O3>)")
    p.add_argument("--compare", action="store_true",
                   help="also time it without the llvmaccel passes (interleaved)")
    p.add_argument("--no-loops", action="store_true", help="do not time the loop nests")
    p.add_argument("--arg", action="append", metavar="NAME=SPEC",
                   help="input spec, as for check (e.g. B=bytes:65536,elem:i32,bound:1024)")
    p.add_argument("--rounds", type=int, default=7, help="timed rounds (default 7)")
    p.add_argument("--seed", type=int, default=0, help="seed of the input (default 0)")
    p.add_argument("--timeout", type=float, default=120.0,
                   help="seconds before the run is abandoned (default 120)")
    p.add_argument("--json", action="store_true", help="print the profiles as JSON")
    p.set_defaults(func=_cmd_profile)

    p = sub.add_parser("gen", help="print a generated kernel (its input specs on stderr)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--shape", help="gather, chain, csr, embedding, hash, guarded, aggphi, tasks, "
                                   "async-chain, async-dag, async-group, async-loop, "
                                   "launch-cuda, launch-hip, launch-ze; or a variant: "
                                   "guarded:bounds, guarded:window, ...")
    p.set_defaults(func=_cmd_gen)

    p = sub.add_parser("blas", help="the BLAS library matmuls may call, and from which size "
                                    "(measured on this host)")
    p.add_argument("--library", choices=["auto", "torch", "openblas"],
                   help="LLVMACCEL_BLAS_LIBRARY for this command")
    p.add_argument("--threads", type=int, help="the thread count to report for (default: "
                   "LLVMACCEL_NUM_THREADS, else PyTorch's, else the library's)")
    p.add_argument("--measure", action="store_true", help="measure again (the result replaces "
                   "the cached one)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_cmd_blas)

    p = sub.add_parser("demo", help="run the bundled kernels with and without the accel passes")
    p.add_argument("--quick", action="store_true", help="small sizes (seconds, not minutes)")
    p.add_argument("--runs", type=int, default=None, help="timed runs per variant (default 7)")
    p.add_argument("--kernel", action="append", help="run only this kernel (repeatable)")
    p.set_defaults(func=_cmd_demo)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``llvmaccel`` console script."""
    args = _parser().parse_args(argv)
    if getattr(args, "auto", None) and "," in args.auto:
        args.auto = [name.strip() for name in args.auto.split(",") if name.strip()]
    try:
        return args.func(args)
    except LLVMAccelError as err:
        print(f"llvmaccel: error: {err}", file=sys.stderr)
        return 1
    except OSError as err:
        what = f"cannot read '{err.filename}': {err.strerror}" if err.filename else str(err)
        print(f"llvmaccel: error: {what}", file=sys.stderr)
        return 1
    except (ValueError, KeyError, TypeError) as err:
        print(f"llvmaccel: error: {err}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
