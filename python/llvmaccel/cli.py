"""The ``llvmaccel`` command line (also ``python -m llvmaccel``)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from . import pipeline as _passes
from .errors import IRParseError, LLVMAccelError
from .ir import load_module

__all__ = ["main"]


def _cmd_plugin_path(args: argparse.Namespace) -> int:
    print(_passes.plugin_path())
    return 0


def _cmd_passes(args: argparse.Namespace) -> int:
    catalog = _passes.passes()
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


def _pass_dict(info: _passes.PassInfo) -> dict:
    return {
        "name": info.name,
        "kind": info.kind,
        "extension_point": info.extension_point,
        "summary": info.summary,
        "parameters": [dataclasses.asdict(p) for p in info.parameters],
    }


def _cmd_opt(args: argparse.Namespace) -> int:
    try:
        module = load_module(args.input)
    except IRParseError as err:
        print(f"{args.input}:{err.line}:{err.column}: error: {err.message}", file=sys.stderr)
        return 1
    report = _passes.run_passes(
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


def _cmd_demo(args: argparse.Namespace) -> int:
    from .demo import run_demo

    return run_demo(quick=args.quick, runs=args.runs, kernels=args.kernel)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="llvmaccel",
        description="LLVM IR optimizations for AI workloads.",
    )
    parser.add_argument("--version", action="version",
                        version=f"llvmaccel 0.1.0 (LLVM {_passes.llvm_version()})")
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


if __name__ == "__main__":
    sys.exit(main())
