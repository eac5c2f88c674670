"""Running pass pipelines, and the catalog of llvmaccel passes."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from functools import lru_cache

from ._native import PLUGIN_PATH, core
from .errors import PipelineError
from .ir import Module

#: Which llvmaccel passes join the default pipelines: "all", "none" or names.
AutoPasses = str | list[str] | tuple[str, ...]

__all__ = [
    "PassInfo",
    "PassParameter",
    "Remark",
    "Report",
    "passes",
    "plugin_path",
    "llvm_version",
    "run_passes",
]


@dataclass(frozen=True)
class Remark:
    """One optimization remark.

    Attributes:
        pass_name: The pass that emitted it, e.g. ``"accel-prefetch"``.
        kind: ``"passed"``, ``"missed"`` or ``"analysis"``.
        function: The function it is about.
        message: The remark's text.
        file, line, column: Source location from debug info ("" / 0 when absent).
        args: The remark's structured arguments (name -> value text).
    """

    pass_name: str
    kind: str
    function: str
    message: str
    file: str = ""
    line: int = 0
    column: int = 0
    args: dict[str, str] = field(default_factory=dict)

    @property
    def location(self) -> str:
        """``file:line:column``, or ``""`` without debug info."""
        return f"{self.file}:{self.line}:{self.column}" if self.file else ""


@dataclass
class Report:
    """What a pipeline run did: remarks and statistics.

    Attributes:
        remarks: Remarks from the passes selected by the run's filter.
        statistics: ``"pass.Counter"`` -> how much it grew during the run.
    """

    remarks: list[Remark] = field(default_factory=list)
    statistics: dict[str, int] = field(default_factory=dict)

    @classmethod
    def _from_native(cls, raw: dict) -> Report:
        return cls(
            remarks=[Remark(**r) for r in raw["remarks"]],
            statistics=dict(raw["statistics"]),
        )

    def passed(self, pass_name: str | None = None) -> list[Remark]:
        """Remarks of transformations made (optionally of one pass)."""
        return [r for r in self.remarks if r.kind == "passed" and _matches(r, pass_name)]

    def missed(self, pass_name: str | None = None) -> list[Remark]:
        """Remarks of transformations declined, with the reason."""
        return [r for r in self.remarks if r.kind == "missed" and _matches(r, pass_name)]

    def fired(self) -> list[str]:
        """Names of the passes that transformed something, in first-seen order."""
        return list(dict.fromkeys(r.pass_name for r in self.remarks if r.kind == "passed"))

    def table(self) -> str:
        """The remarks as a readable table."""
        if not self.remarks:
            return "(no remarks)"
        rows = [("pass", "kind", "function", "message")]
        rows += [(r.pass_name, r.kind, r.function, r.message) for r in self.remarks]
        widths = [max(len(row[i]) for row in rows) for i in range(3)]
        lines = []
        for row in rows:
            cells = [row[i].ljust(widths[i]) for i in range(3)]
            lines.append("  ".join([*cells, row[3]]).rstrip())
        lines.insert(1, "  ".join("-" * w for w in widths) + "  -------")
        return "\n".join(lines)


def _matches(remark: Remark, pass_name: str | None) -> bool:
    return pass_name is None or remark.pass_name == pass_name


def run_passes(
    module: Module,
    pipeline: str,
    verify_each: bool = False,
    *,
    remarks: str | None = "accel-.*",
    target: str | None = None,
    auto: AutoPasses | None = None,
    vector_library: str | None = None,
) -> Report:
    """Runs a new-pass-manager pipeline over ``module``, changing it in place.

    Args:
        module: The module to optimize.
        pipeline: A textual pipeline as ``opt -passes=`` takes it, e.g.
            ``"accel-prefetch<distance=16>"`` or ``"default<O3>"`` (the default
            pipelines include the llvmaccel passes at their extension points).
        verify_each: Verify the module after every pass; raise VerifyError
            naming the first pass that broke it.
        remarks: Regular expression of the pass names whose remarks are
            collected (``".*"`` for every pass; ``None`` for none).
        target: ``None`` to use the module's own triple, or ``"host"`` to
            optimize for this machine (sets the module's triple and layout).
        auto: Which llvmaccel passes join the default pipelines
            (``default<O2>``, ``default<O3>``): ``"all"``, ``"none"`` or a list
            of pass names. ``None`` leaves it to ``$LLVMACCEL_AUTO`` (default all).
        vector_library: ``"libmvec"`` lets the vectorizer call glibc's vector
            math variants that LLVM's tables know (clang's
            ``-fveclib=libmvec``); ``None``: no vector library.

    Raises:
        TypeError: an argument of the wrong type.
        PipelineError: unknown pass or bad parameter.
        VerifyError: the input, or with ``verify_each`` an intermediate
            result, fails the verifier.
    """
    _check_types(module=(module, Module), pipeline=(pipeline, str),
                 verify_each=(verify_each, bool), remarks=(remarks, (str, type(None))),
                 target=(target, (str, type(None))),
                 vector_library=(vector_library, (str, type(None))))
    raw = core.run_passes(
        module._ref, pipeline, verify_each, _NO_REMARKS if remarks is None else remarks,
        target or "", _auto_selection(auto), vector_library or "",
    )
    return Report._from_native(raw)


# A remark filter no pass name matches (remarks=None).
_NO_REMARKS = "^$"


def _check_types(**args: tuple[object, type | tuple[type, ...]]) -> None:
    """TypeError naming the first argument whose value is not of its type."""
    for name, (value, types) in args.items():
        if not isinstance(value, types):
            alternatives = types if isinstance(types, tuple) else (types,)
            want = " or ".join("None" if t is type(None) else t.__name__ for t in alternatives)
            raise TypeError(f"{name} must be {want}, not {type(value).__name__}")


def _auto_selection(auto: AutoPasses | None) -> str:
    """The -llvmaccel-auto text for ``auto`` ("" for the default: then
    ``$LLVMACCEL_AUTO``, checked here, or all)."""
    where = "auto"
    if auto is None:
        env = os.environ.get("LLVMACCEL_AUTO", "").strip()
        if not env:
            return ""
        names = [n.strip() for n in env.split(",") if n.strip()]
        where = "$LLVMACCEL_AUTO"
    elif isinstance(auto, str):
        names = [auto]
    elif isinstance(auto, (list, tuple)) and all(isinstance(n, str) for n in auto):
        names = list(auto)
    else:
        raise TypeError(f"auto must be None, 'all', 'none' or a list of pass names, "
                        f"not {auto!r}")
    known = {p.name for p in passes()}
    for name in names:
        if name not in known and name not in ("all", "none"):
            raise PipelineError(
                f"unknown llvmaccel pass {name!r} in {where} (known: all, none, "
                f"{', '.join(sorted(known))})"
            )
    return ",".join(names) if names else "none"


@dataclass(frozen=True)
class PassParameter:
    """A parameter of a pass, as written between its angle brackets."""

    name: str
    default: str
    help: str


@dataclass(frozen=True)
class PassInfo:
    """An llvmaccel pass: pipeline name, extension point, parameters."""

    name: str
    kind: str
    extension_point: str
    summary: str
    parameters: tuple[PassParameter, ...]


@lru_cache(maxsize=1)
def passes() -> tuple[PassInfo, ...]:
    """Every llvmaccel pass with its parameters and their defaults."""
    catalog = json.loads(core.pass_catalog())
    return tuple(
        PassInfo(
            name=p["name"],
            kind=p["kind"],
            extension_point=p["extension_point"],
            summary=p["summary"],
            parameters=tuple(PassParameter(**q) for q in p["parameters"]),
        )
        for p in catalog
    )


def plugin_path() -> str:
    """Path of the LLVMAccel plugin, for ``opt -load-pass-plugin=`` or
    ``clang -fpass-plugin=``."""
    return str(PLUGIN_PATH)


def llvm_version() -> str:
    """The LLVM release llvmaccel is built against, e.g. ``"22.1.8"``."""
    return core.llvm_version()
