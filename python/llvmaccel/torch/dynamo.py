"""The ``torch.compile`` backend: FX graph -> AOT (ATen) graph -> llvmaccel.

Stages: dynamo gives an FX graph; :func:`torch._functorch.aot_autograd.
aot_module_simplified` with the core ATen decompositions (embedding_bag kept
whole) gives an inference graph; nodes llvmaccel cannot lower are partitioned
out with :class:`~torch.fx.passes.infra.partitioner.CapabilityBasedPartitioner`
and run eagerly; every supported partition is lowered
(:mod:`llvmaccel.torch.lowering`) and compiled (:mod:`llvmaccel.compiler`).
"""

from __future__ import annotations

import functools
import threading
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.fx

from ..compiler import CompiledGraph, compile_graph
from ..graph import dim_eval
from ..pipeline import Remark
from .lowering import LoweredGraph, LoweringError, draw_seed, lower, node_support

__all__ = ["backend", "explain", "Explanation", "FallbackNode", "LLVMAccelTorchError"]


class LLVMAccelTorchError(RuntimeError):
    """A graph cannot be compiled with ``options={"strict": True}``."""


@dataclass
class FallbackNode:
    """A node that runs eagerly, and why."""

    name: str
    target: str
    reason: str


@dataclass
class Explanation:
    """What the llvmaccel backend did with a model.

    Attributes:
        graphs: Number of graphs the backend was given.
        compiled: ATen ops lowered to llvmaccel, in graph order.
        fallbacks: Nodes that run eagerly in PyTorch, with the reason.
        partitions: Number of compiled partitions.
        remarks: Remarks of the llvmaccel passes over the compiled code.
        backward_graphs: Backward graphs compiled (when gradients were
            computed through the model).
    """

    graphs: int = 0
    compiled: list[str] = field(default_factory=list)
    fallbacks: list[FallbackNode] = field(default_factory=list)
    partitions: int = 0
    remarks: list[Remark] = field(default_factory=list)
    backward_graphs: int = 0

    @property
    def fully_compiled(self) -> bool:
        """True when nothing fell back to eager PyTorch."""
        return not self.fallbacks and self.partitions > 0

    def passes_fired(self) -> list[str]:
        """Names of the llvmaccel passes that transformed something."""
        return list(dict.fromkeys(r.pass_name for r in self.remarks if r.kind == "passed"))

    def __str__(self) -> str:
        lines = [f"llvmaccel: {self.graphs} graph(s), {self.partitions} compiled "
                 f"partition(s), {len(self.compiled)} op(s) compiled, "
                 f"{len(self.fallbacks)} fallback(s)"]
        for f in self.fallbacks:
            lines.append(f"  fallback {f.name} ({f.target}): {f.reason}")
        if self.backward_graphs:
            lines.append(f"  backward graph(s) compiled: {self.backward_graphs}")
        fired = self.passes_fired()
        lines.append(f"  passes fired: {', '.join(fired) if fired else '(none)'}")
        for r in self.remarks:
            if r.kind == "passed":
                lines.append(f"    {r.pass_name}: {r.message}")
        return "\n".join(lines)


def _decompositions(fallback_random: bool = False) -> dict:
    from torch._decomp import core_aten_decompositions, get_decompositions

    from .decompositions import llvmaccel_decompositions, random_decompositions

    aten = torch.ops.aten
    table = dict(core_aten_decompositions())
    for op in list(table):
        if "embedding_bag" in str(op) or op in (aten.im2col.default, aten.col2im.default):
            del table[op]  # a primitive of the llvmaccel graph
    # PyTorch's own decompositions of the ops core ATen keeps whole (batch
    # norm in every form: inference, training statistics, functional running
    # stats), in elementwise ops and reductions llvmaccel lowers.
    table.update(get_decompositions([
        aten._native_batch_norm_legit_no_training, aten._native_batch_norm_legit,
        aten._native_batch_norm_legit_functional, aten.native_batch_norm,
        aten._batch_norm_with_update, aten._batch_norm_with_update_functional,
        aten._batch_norm_no_update,
        # Grid sampling (spatial transformers): gathers and elementwise ops;
        # ELU, vector norms, slice updates (circular padding) and bucketize
        # in ops llvmaccel lowers.
        aten.grid_sampler_2d, aten.elu, aten.linalg_vector_norm, aten.slice_scatter,
        aten.bucketize, aten.repeat,
        # Max pooling's gradient (CNN training): a scatter of the output's
        # gradient to the positions of the maxima.
        aten.max_pool2d_with_indices_backward,
    ]))
    if not fallback_random:
        table.update(random_decompositions())
    table.update(llvmaccel_decompositions())
    return table


_lock = threading.Lock()


def backend(gm: torch.fx.GraphModule, example_inputs: list[Any],
            options: dict[str, Any] | None = None, **kwargs: Any) -> Callable[..., Any]:
    """``torch.compile`` backend (``backend="llvmaccel"``).

    Options (``torch.compile(..., options={...})``):
        pipeline: LLVM pass pipeline (default ``"default<O3>"``).
        auto: llvmaccel passes in the default pipelines (``"all"``, ``"none"``).
        strict: raise :class:`LLVMAccelTorchError` instead of falling back to
            eager PyTorch for unsupported ops (in forward or backward graphs).
        inter_op: run a graph's independent branches (a DLRM's embedding
            tables and bottom MLP, the heads of a multi-branch model) as
            parallel tasks of MLIR's async runtime (:mod:`llvmaccel.interop`);
            default ``$LLVMACCEL_INTER_OP``, else off.
        fallback_random: run random ops (``rand``, ``randn``, dropout in
            ``train()``, ``bernoulli``) eagerly, drawing eager's numbers from
            PyTorch's generator, as inductor's ``fallback_random`` config does
            (for comparing with eager). By default they are compiled, with
            llvmaccel's own counter-based generator seeded from PyTorch's
            generator at each call (``torch.manual_seed`` repeats a run;
            the numbers are not eager's).
    """
    from torch._functorch.aot_autograd import aot_module_simplified

    opts = dict(options or {})
    opts.update(kwargs.pop("options", None) or {})
    # torch.compile passes mode= on to backends other than inductor; like
    # PyTorch's own eager backends, say that it is ignored.
    mode = kwargs.pop("mode", None)
    if mode not in (None, "default"):
        warnings.warn(f"llvmaccel ignores torch.compile mode={mode!r}: it has one compilation "
                      "mode (its choices are options={'pipeline': ..., 'auto': ...})",
                      stacklevel=2)
    if kwargs:
        raise TypeError(f"llvmaccel backend got unexpected keyword argument(s): "
                        f"{', '.join(sorted(kwargs))}")
    explanation: Explanation = opts.pop("_explanation", None) or Explanation()
    unknown = set(opts) - {"pipeline", "auto", "strict", "inter_op", "fallback_random"}
    if unknown:
        raise ValueError(f"unknown llvmaccel option(s): {', '.join(sorted(unknown))} "
                         "(pipeline, auto, strict, inter_op, fallback_random)")
    for flag in ("inter_op", "fallback_random"):
        if opts.get(flag) not in (None, True, False):
            raise TypeError(f"options={{'{flag}': ...}} must be True or False, "
                            f"not {opts[flag]!r}")
    fallback_random = bool(opts.get("fallback_random", False))
    strict = bool(opts.get("strict", False))
    explanation.graphs += 1

    # With gradients enabled (a model called without no_grad, or training),
    # aot_autograd splits the joint graph: the forward graph (which also
    # returns what the backward saves) and, on the first backward, the
    # backward graph are both compiled here, partitioned like any graph.
    from torch._functorch.aot_autograd import make_boxed_func

    def boxed(fn: Callable[..., Any]) -> Callable[..., Any]:
        # aot_autograd calls compiled graphs with one list of arguments; a
        # runner that takes the list itself spares each call a frame.
        return getattr(fn, "boxed", None) or make_boxed_func(fn)

    def fw_compiler(fx: torch.fx.GraphModule, inputs: list[Any]) -> Callable[..., Any]:
        return boxed(_compile_fx(fx, opts, explanation, strict))

    def bw_compiler(fx: torch.fx.GraphModule, inputs: list[Any]) -> Callable[..., Any]:
        explanation.backward_graphs += 1
        return boxed(_compile_fx(fx, opts, explanation, strict))

    if not _needs_autograd(gm, example_inputs):
        return aot_module_simplified(gm, example_inputs, fw_compiler=fw_compiler,
                                     decompositions=_decompositions(fallback_random))
    return _SaveOnceTrained(gm, example_inputs, fw_compiler, bw_compiler,
                            _decompositions(fallback_random)).callable()


def _needs_autograd(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> bool:
    """Whether aot_autograd will trace a joint forward-backward graph (as it
    decides: gradients enabled and a tensor argument requiring them)."""
    if not torch.is_grad_enabled():
        return False
    tensors = [*gm.parameters(), *gm.buffers(), *example_inputs]
    return any(isinstance(t, torch.Tensor) and t.requires_grad for t in tensors)


def _has_random_ops(graph: torch.fx.Graph) -> bool:
    return any(n.op == "call_function" and isinstance(n.target, torch._ops.OpOverload)
               and torch.Tag.nondeterministic_seeded in n.target.tags for n in graph.nodes)


def _save_inputs_partition(joint: torch.fx.GraphModule, joint_inputs: Any, **kwargs: Any
                           ) -> tuple[torch.fx.GraphModule, torch.fx.GraphModule]:
    """The joint graph split so that the forward saves only its inputs (the
    weights and the caller's tensors, references to tensors that exist
    anyway) and the backward recomputes the forward's values it needs: the
    forward is then the inference graph, and runs as fast as under
    ``no_grad``. A graph with random ops (dropout in ``train()``) cannot be
    recomputed: it is split by the min cut as it is."""
    from torch._functorch import config as functorch_config
    from torch._functorch.partitioners import min_cut_rematerialization_partition

    if _has_random_ops(joint.graph):
        return min_cut_rematerialization_partition(joint, joint_inputs, **kwargs)
    with functorch_config.patch(activation_memory_budget=0.0):
        return min_cut_rematerialization_partition(joint, joint_inputs, **kwargs)


def _on_first_call(compiler: Callable[..., Any], fx: torch.fx.GraphModule, inputs: list[Any],
                   on_run: Callable[[], None] | None = None) -> Callable[..., Any]:
    """A boxed function that compiles ``fx`` with ``compiler`` on its first
    call (``on_run`` is called on every call)."""
    compiled: list[Callable[..., Any]] = []

    def run(args: list[Any]) -> Any:
        if on_run is not None:
            on_run()
        if not compiled:
            with _lock:
                if not compiled:
                    compiled.append(compiler(fx, inputs))
        return compiled[0](args)

    run._boxed_call = True  # type: ignore[attr-defined]
    return run


class _SaveOnceTrained:
    """A graph called with gradients enabled, split two ways by aot_autograd.

    Until a backward has run through the graph, its forward saves only its
    inputs (:func:`_save_inputs_partition`): a model in ``eval()`` called
    without ``no_grad``, the most common inference call, runs at its
    ``no_grad`` speed, computing nothing for a backward that never comes.
    A backward through that forward recomputes it (correct, and paid once).
    From then on the graph is being trained: the forward is the one of the
    partitioner inductor uses (a min cut of the joint graph: what is costly
    to recompute is saved, cheap elementwise ops are recomputed in the
    backward). Both splits are traced here, in dynamo's tracing context; the
    second's forward is compiled on its first call, so inference pays for
    one compilation.
    """

    def __init__(self, gm: torch.fx.GraphModule, example_inputs: list[Any],
                 fw_compiler: Callable[..., Any], bw_compiler: Callable[..., Any],
                 decompositions: dict) -> None:
        from torch._functorch.aot_autograd import aot_module_simplified
        from torch._functorch.partitioners import min_cut_rematerialization_partition

        self._trained = False

        def first_backward(fx: torch.fx.GraphModule, inputs: list[Any]) -> Callable[..., Any]:
            # aot_autograd compiles the backward before any runs when shapes
            # are dynamic: the switch is made when one runs.
            return _on_first_call(bw_compiler, fx, inputs, self._set_trained)

        self._inference = aot_module_simplified(
            gm, example_inputs, fw_compiler=fw_compiler, bw_compiler=first_backward,
            decompositions=decompositions, partition_fn=_save_inputs_partition)
        self._training = aot_module_simplified(
            gm, example_inputs, fw_compiler=functools.partial(_on_first_call, fw_compiler),
            bw_compiler=functools.partial(_on_first_call, bw_compiler),
            decompositions=decompositions, partition_fn=min_cut_rematerialization_partition)

    def _set_trained(self) -> None:
        self._trained = True

    def callable(self) -> Callable[..., Any]:
        """The function dynamo calls, with the attributes of
        aot_module_simplified's (``zero_grad``, ``named_parameters``, ...)."""

        def run(*args: Any) -> Any:
            return (self._training if self._trained else self._inference)(*args)

        run.__dict__.update(self._inference.__dict__)
        return run


class _Support(torch.fx.passes.operator_support.OperatorSupportBase):
    def __init__(self, fallback_random: bool) -> None:
        super().__init__()
        self.fallback_random = fallback_random

    def is_node_supported(self, submodules: Any, node: torch.fx.Node) -> bool:
        return node.op == "call_function" and \
            node_support(node, self.fallback_random) is None


def _compile_fx(fx: torch.fx.GraphModule, opts: dict[str, Any], explanation: Explanation,
                strict: bool) -> Callable[..., Any]:
    fallback_random = bool(opts.get("fallback_random", False))
    unsupported = [(n, node_support(n, fallback_random)) for n in fx.graph.nodes
                   if n.op == "call_function"]
    unsupported = [(n, r) for n, r in unsupported if r is not None]
    if unsupported and strict:
        raise LLVMAccelTorchError("llvmaccel cannot compile: " + "; ".join(
            f"{n.name} ({n.target}): {r}" for n, r in unsupported))
    if not unsupported:
        try:
            fn = _compile_lowered(lower(fx), opts, explanation)
            explanation.partitions += 1
            return fn
        except LoweringError as e:
            if strict:
                raise LLVMAccelTorchError(str(e)) from e
            explanation.fallbacks.append(FallbackNode("<graph>", "<graph>", str(e)))
            warnings.warn(f"llvmaccel: graph runs eagerly: {e}", stacklevel=2)
            return fx.forward
    for n, r in unsupported:
        explanation.fallbacks.append(FallbackNode(n.name, str(n.target), r))
    warnings.warn("llvmaccel: running eagerly: " + "; ".join(
        f"{n.name} ({n.target}): {r}" for n, r in unsupported), stacklevel=2)
    return _partitioned(fx, opts, explanation, fallback_random)


def _partitioned(fx: torch.fx.GraphModule, opts: dict[str, Any], explanation: Explanation,
                 fallback_random: bool) -> Callable[..., Any]:
    from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner

    partitioner = CapabilityBasedPartitioner(fx, _Support(fallback_random),
                                             allows_single_node_partition=True)
    partitions = partitioner.propose_partitions()
    # Partitions of only views or symbolic-size arithmetic are not worth a kernel.
    partitions = [p for p in partitions if any(
        n.op == "call_function" and isinstance(n.meta.get("val"), torch.Tensor)
        for n in p.nodes)]
    fused = partitioner.fuse_partitions(partitions)
    for name, sub in list(fused.named_children()):
        if not name.startswith("fused_") or not isinstance(sub, torch.fx.GraphModule):
            continue
        _fill_placeholder_meta(fused, name, sub)
        try:
            fn = _compile_lowered(lower(sub), opts, explanation)
        except LoweringError as e:
            explanation.fallbacks.append(FallbackNode(name, "<partition>", str(e)))
            continue
        explanation.partitions += 1
        setattr(fused, name, _CompiledModule(fn))
    fused.recompile()
    return fused.forward


def _fill_placeholder_meta(parent: torch.fx.GraphModule, name: str,
                           sub: torch.fx.GraphModule) -> None:
    """Copies the FakeTensor values of a partition's arguments to its placeholders."""
    call = next(n for n in parent.graph.nodes if n.op == "call_module" and n.target == name)
    phs = [n for n in sub.graph.nodes if n.op == "placeholder"]
    for ph, arg in zip(phs, call.args, strict=False):
        if "val" not in ph.meta and isinstance(arg, torch.fx.Node) and "val" in arg.meta:
            ph.meta["val"] = arg.meta["val"]


class _CompiledModule(torch.nn.Module):
    def __init__(self, fn: Callable[..., Any]) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, *args: Any) -> Any:
        return self.fn(*args)


def _compile_lowered(lowered: LoweredGraph, opts: dict[str, Any],
                     explanation: Explanation) -> Callable[..., Any]:
    compiled = compile_graph(lowered.graph, opts.get("pipeline"), opts.get("auto"),
                             opts.get("inter_op"))
    explanation.compiled.extend(lowered.ops)
    explanation.remarks.extend(compiled.report.remarks)
    return _runner(lowered, compiled)


def _runner(lowered: LoweredGraph, compiled: CompiledGraph) -> Callable[..., Any]:
    tensor_args = lowered.tensor_args
    symbol_args = lowered.symbol_args
    outputs = lowered.outputs
    single = lowered.single_output
    listed = len(tensor_args) + len(symbol_args) != 1
    has_int = any(kind == "int" for kind, _ in outputs)
    seeded = lowered.seeded
    # Every output a result of the kernel, with tensor inputs (so its results
    # are tensors) and no size symbols: the common case, in a few steps.
    plain = bool(tensor_args) and not symbol_args and bool(lowered.graph.outputs) and \
        all(kind == "tensor" for kind, _ in outputs)
    picks = tuple(v for _, v in outputs) if plain else ()

    def pick(results: list[Any]) -> Any:
        """The runner's result of a plain graph's kernel results."""
        return results[picks[0]] if single else tuple(results[v] for v in picks)

    def run(*args: Any) -> Any:
        if listed and len(args) == 1 and isinstance(args[0], list):
            args = tuple(args[0])
        tensors = [args[i] for i in tensor_args]
        if seeded:
            tensors.append(draw_seed())
        if plain:
            return pick(compiled.call_tensors(tensors))
        symbols = {name: int(args[i]) for name, i in symbol_args}
        results = compiled(*tensors, symbols=symbols) if lowered.graph.outputs else []
        env = compiled.bind(tuple(tensors), symbols) if has_int else {}
        out = []
        for kind, v in outputs:
            if kind == "tensor":
                r = results[v]
                # A graph with no tensor inputs (torch.arange(n) * 2) is run
                # with numpy buffers: its results are still tensors.
                out.append(r if isinstance(r, torch.Tensor) else torch.from_numpy(r))
            elif kind == "view":
                (where, k), ops = v
                t = args[k] if where == "arg" else results[k]
                if not isinstance(t, torch.Tensor):
                    t = torch.from_numpy(t)
                for target, rest, kw in ops:
                    t = target(t, *rest, **kw)
                out.append(t)
            elif kind == "int":
                out.append(dim_eval(v, env))
            else:
                out.append(None)
        return out[0] if single else tuple(out)

    run.compiled = compiled  # type: ignore[attr-defined]
    if plain and not seeded:
        every = tuple(tensor_args) == tuple(range(len(tensor_args)))

        def run_boxed(args: list[Any]) -> Any:
            """``run(*args)`` in aot_autograd's boxed convention (it may
            clear ``args``: the inputs are read before)."""
            return pick(compiled.call_tensors(args if every and len(args) == len(tensor_args)
                                              else [args[i] for i in tensor_args]))

        run_boxed._boxed_call = True  # type: ignore[attr-defined]
        run_boxed.compiled = compiled  # type: ignore[attr-defined]
        run.boxed = run_boxed  # type: ignore[attr-defined]
    return run


def explain(model: Callable[..., Any], *inputs: Any, options: dict[str, Any] | None = None,
            dynamic: bool | None = None, grad: bool = False) -> Explanation:
    """Compiles ``model`` with the llvmaccel backend, runs it once on
    ``inputs`` and reports which nodes were compiled, which fell back and
    why, and which passes fired.

    ``grad=False`` runs it under ``torch.no_grad()`` (the inference graph);
    ``grad=True`` with gradients enabled, as a model in ``eval()`` called
    without ``no_grad`` runs: the forward graph aot_autograd makes for the
    backward (which also returns what the backward saves) is explained.

    The options are those of :func:`backend` (``strict`` is ignored). Dynamo's
    caches are left alone: the explanation is compiled with a backend of its
    own, which dynamo's backend guard keeps apart from other compilations.
    """
    explanation = Explanation()
    opts = {k: v for k, v in (options or {}).items() if k != "strict"}
    opts["_explanation"] = explanation

    def be(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Callable[..., Any]:
        return backend(gm, example_inputs, options=opts)

    compiled = torch.compile(model, backend=be, dynamic=dynamic)
    with torch.set_grad_enabled(grad), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compiled(*inputs)
    return explanation
