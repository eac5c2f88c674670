"""JAX entry point: ``llvmaccel.jax.jit(f)``.

>>> import numpy as np, llvmaccel.jax
>>> @llvmaccel.jax.jit
... def mlp(x, w1, w2):
...     return jax.nn.relu(x @ w1) @ w2
>>> y = mlp(np.ones((8, 4), np.float32), w1, w2)   # numpy arrays out

``f`` is traced with :func:`jax.make_jaxpr` for each new signature (pytree
structure, shapes and dtypes of the arguments), lowered to an llvmaccel graph
(:mod:`llvmaccel.jax.lowering`), compiled (:mod:`llvmaccel.compiler`) and
run. Unsupported primitives raise :class:`UnsupportedPrimitive`, or with
``fallback=True`` run the whole function under :func:`jax.jit` with a warning.

A call whose array arguments are all :class:`jax.Array` s runs the kernel as
one :func:`jax.jit` program calling it through the XLA FFI handler
(:mod:`llvmaccel.jax.ffi`): JAX's dispatch checks the arguments and XLA
allocates the outputs. Other calls (numpy arguments, ``polymorphic_shapes``)
run the kernel from Python and put its outputs as jax.Arrays without a copy.

Symbolic (polymorphic) shapes
-----------------------------
``jit(f, polymorphic_shapes=[...])`` declares some sizes symbolic, in the
syntax of :func:`jax.export.symbolic_shape` (one spec per positional
argument, or a pytree prefix of it; ``None`` is a static shape, a single
string applies to every argument)::

    @llvmaccel.jax.jit(polymorphic_shapes=["b, 16", None, None])
    def mlp(x, w1, w2):
        return jax.nn.relu(x @ w1) @ w2

    mlp(x8, w1, w2); mlp(x32, w1, w2)      # one trace, one compilation

``f`` is then traced once on :class:`jax.ShapeDtypeStruct` s whose sizes are
JAX dimension expressions (``b``, ``4*b``, ``b + 1``; ``_`` and ``...`` stand
for the argument's own sizes, as in JAX, which stay static); the dimension variables
become run-time size arguments of the compiled kernel, so a new batch size
reuses it. At each call the variables are solved from the argument shapes
(like :mod:`jax.export`: a variable appears alone, or in a linear expression
``k*b + c``, in some dim) and every dim is checked against its expression.
A call that does not fit raises ValueError naming the argument and the dim
(a static size differs, two dims declared ``b`` differ, a variable would be
below 1: JAX assumes dimension variables are >= 1). A primitive whose
lowering needs a static size where the trace has a symbolic one raises
:class:`UnsupportedPrimitive` saying which size is symbolic (or falls back to
:func:`jax.jit` with ``fallback=True``).
"""

from __future__ import annotations

import functools
import inspect
import re
import threading
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .. import profiling
from ..compiler import CompiledGraph, compile_graph
from ..graph import Dim, Graph, SymExpr, dim_eval
from .lowering import (
    UnsupportedPrimitive,
    graph_dim,
    graph_dtype,
    is_key_dtype,
    key_data_shape,
    lower_jaxpr,
)
from .transforms import transformable

__all__ = ["jit", "JitFunction", "UnsupportedPrimitive", "ffi", "ffi_function"]


PolymorphicShapes = str | Sequence[Any] | None
"""A :func:`jit` ``polymorphic_shapes`` value: None, a spec string for every
argument, or a sequence (one entry per positional argument) of None, spec
strings or pytree prefixes of the argument holding them."""

_PLACEHOLDER = re.compile(r"\.\.\.|(?<![A-Za-z0-9_])_(?![A-Za-z0-9_])")


class _Spec:
    """One spec applying to ``count`` array leaves (a pytree leaf itself)."""

    def __init__(self, spec: str | None, count: int) -> None:
        self.spec, self.count = spec, count


class _Entry:
    """One signature of a :class:`JitFunction`: ``kind`` "llvmaccel" (``fn``
    the CompiledGraph) or "jax" (``fn`` the :func:`jax.jit` fallback), the
    output pytree and dtypes, and the flat function it computes.

    The graph is lowered when the entry is made (an unsupported primitive
    shows there), and compiled on first use of :attr:`fn`: under
    :func:`jax.vmap` or :func:`jax.grad` a signature may only ever run
    through its batched or backward compilation.
    """

    def __init__(self, kind: str, fn: Any, out_tree: Any, out_dtypes: list[Any] | None,
                 flat_fun: Callable[..., Any],
                 compile: Callable[[], CompiledGraph] | None = None) -> None:
        self.kind, self.out_tree = kind, out_tree
        self.out_dtypes, self.flat_fun = out_dtypes, flat_fun
        self._fn, self._compile = fn, compile
        self._lock = threading.RLock()
        # Which array leaves (inputs, outputs) are PRNG keys, passed and
        # returned as their data: set by JitFunction._build for its signature.
        self.in_keys: tuple[bool, ...] = ()
        self.out_keys: tuple[bool, ...] = tuple(
            is_key_dtype(dt) for dt in out_dtypes) if out_dtypes else ()
        self._transformables: dict[str | None, Callable[..., list[Any]]] = {}
        # The jax.jit of run_ffi that concrete calls take (see dispatcher);
        # False once it is known that this signature cannot take it.
        self._dispatch: Any = None

    @property
    def fn(self) -> Any:
        """The compiled graph (compiled now if it was not yet) or the fallback."""
        with self._lock:
            if self._fn is None and self._compile is not None:
                self._fn, self._compile = self._compile(), None
            return self._fn

    def run_ffi(self, *flat: Any, vmap_method: str | None = "sequential") -> list[Any]:
        """The compiled kernel as a :func:`jax.ffi.ffi_call` on the flat
        arrays (concrete or traced), outputs in the traced dtypes."""
        from .ffi import ffi_kernel

        outs = ffi_kernel(self.fn, *flat, vmap_method=vmap_method)(*flat)
        return [o if o.dtype == dt else o.astype(dt)
                for o, dt in zip(outs, self.out_dtypes or [], strict=True)]

    def dispatcher(self) -> Callable[..., list[Any]] | None:
        """:meth:`run_ffi` under :func:`jax.jit`, for concrete calls on
        jax.Arrays: JAX's C++ dispatch checks the arguments, and XLA runs the
        kernel through the FFI handler with output buffers of its own, so a
        call costs what a :func:`jax.jit` call costs (about 60 us less than
        running the kernel from Python and putting its outputs as
        jax.Arrays, measured on a 64-step decode loop). None where the
        kernel cannot run as a custom call: PRNG key leaves, a kernel of the
        inter-op mode (whose tasks the trampoline does not start), a default
        backend other than the CPU."""
        with self._lock:
            if self._dispatch is None:
                self._dispatch = self._make_dispatcher() or False
            return self._dispatch or None

    def no_dispatch(self) -> None:
        """Concrete calls of this signature take the Python path from now on."""
        with self._lock:
            self._dispatch = False

    def _make_dispatcher(self) -> Callable[..., list[Any]] | None:
        import jax

        if any(self.in_keys) or any(self.out_keys) or jax.default_backend() != "cpu":
            return None
        if self.fn.branches is not None:
            return None
        return jax.jit(self.run_ffi)

    def transformable(self, recompile: Callable[[Callable[..., Any]], Any],
                      vmap_method: str | None = "compile") -> Callable[..., list[Any]]:
        """:meth:`run_ffi` with JAX's differentiation rule and, for
        ``vmap_method="compile"``, its batching rule
        (:mod:`llvmaccel.jax.transforms`); otherwise :func:`jax.vmap` maps
        the custom call by ``vmap_method``. Made once per method."""
        with self._lock:
            hit = self._transformables.get(vmap_method)
            if hit is None:
                if vmap_method == "compile":
                    hit = transformable(self.flat_fun, self.run_ffi, recompile)
                else:
                    def run(*flat: Any) -> list[Any]:
                        return self.run_ffi(*flat, vmap_method=vmap_method)

                    hit = transformable(self.flat_fun, run, recompile, batching=False)
                self._transformables[vmap_method] = hit
            return hit


class JitFunction:
    """A function compiled by llvmaccel for each argument signature.

    Call it like the original function. Attributes ``pipeline``,
    ``fallback`` and ``polymorphic_shapes`` are those given to :func:`jit`;
    :meth:`compiled_for` gives the :class:`~llvmaccel.compiler.CompiledGraph`
    of a call (with its optimization report).

    With ``polymorphic_shapes`` the compilations are keyed on the symbolic
    signature (pytree structure, dtypes and the declared size expressions),
    so calls differing only in symbolic sizes share one compilation.
    """

    def __init__(self, fun: Callable[..., Any], pipeline: str | None = None,
                 fallback: bool = False, auto: str | None = None,
                 static_argnums: tuple[int, ...] = (),
                 polymorphic_shapes: PolymorphicShapes = None,
                 static_argnames: tuple[str, ...] = (),
                 symbolic_constraints: tuple[str, ...] = (),
                 inter_op: bool | None = None) -> None:
        self.fun = fun
        self.pipeline = pipeline
        self.fallback = fallback
        self.auto = auto
        if inter_op not in (None, True, False):
            raise TypeError(f"inter_op must be True, False or None, not {inter_op!r}")
        self.inter_op = inter_op
        self.static_argnums = tuple(static_argnums)
        if isinstance(static_argnames, str):
            static_argnames = (static_argnames,)
        if polymorphic_shapes is not None and not isinstance(polymorphic_shapes,
                                                             (str, list, tuple)):
            raise TypeError("polymorphic_shapes must be None, a string, or a list or tuple "
                            f"with an entry per positional argument, not "
                            f"{type(polymorphic_shapes).__name__}")
        self.polymorphic_shapes = polymorphic_shapes
        self.symbolic_constraints = tuple(symbolic_constraints)
        if self.symbolic_constraints and polymorphic_shapes is None:
            raise ValueError("symbolic_constraints need polymorphic_shapes")
        self._cache: dict[Any, Any] = {}
        # Argument dtypes checked once (graph_dtype) for every later call.
        self._dtypes_ok: set[Any] = set()
        # Concrete signature -> (entry, symbol values): calls with shapes seen
        # before skip solving the polymorphic shapes again.
        self._bound: dict[Any, tuple[Any, dict[str, int]]] = {}
        self._lock = threading.Lock()
        self._name = getattr(fun, "__name__", "f")
        try:
            params = inspect.signature(fun).parameters.values()
            self._params = [p.name for p in params if p.kind in (
                p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        except (TypeError, ValueError):
            self._params = []
        # As in jax.jit: a static name of a positional parameter makes its
        # position static too; any keyword argument of a static name is static.
        self.static_argnames = frozenset(static_argnames)
        self.static_argnums = tuple(sorted(set(self.static_argnums) | {
            self._params.index(n) for n in static_argnames if n in self._params}))
        functools.update_wrapper(self, fun)

    def _signature(self, args: tuple, kwargs: dict) -> tuple[Any, list[Any], Any]:
        import jax

        dyn_pos = [a for i, a in enumerate(args) if i not in self.static_argnums]
        dyn_kw = {k: v for k, v in kwargs.items() if k not in self.static_argnames}
        static = (tuple((i, args[i]) for i in self.static_argnums if i < len(args)),
                  tuple(sorted((k, v) for k, v in kwargs.items() if k in self.static_argnames)))
        leaves, tree = jax.tree_util.tree_flatten((dyn_pos, dyn_kw))
        arrays = []
        ok = self._dtypes_ok
        for k, leaf in enumerate(leaves):
            arr = leaf if hasattr(leaf, "shape") and hasattr(leaf, "dtype") else np.asarray(leaf)
            if arr.dtype not in ok:  # once per dtype: a TypeError for unsupported ones
                graph_dtype(arr.dtype, f"argument leaf {k}")
                ok.add(arr.dtype)
            arrays.append(arr)
        # Dtype objects, not their names: a byte order other than the host's
        # is another dtype (and the kernel's input check refuses it).
        key = (tree, static, tuple((tuple(a.shape), a.dtype) for a in arrays))
        return key, arrays, tree

    def _arg_label(self, pos: int) -> str:
        return self._params[pos] if pos < len(self._params) else f"args[{pos}]"

    def _symbolic_specs(self, args: tuple, kwargs: dict, arrays: list[Any]
                        ) -> tuple[list[Any], list[str]]:
        """ShapeDtypeStructs with the declared symbolic sizes, one per array
        leaf (in one symbolic scope), and each leaf's name for messages."""
        import jax
        from jax import export

        if any(k not in self.static_argnames for k in kwargs):
            raise ValueError(
                f"llvmaccel.jax.jit({self._name}): with polymorphic_shapes, pass the array "
                "arguments positionally (keyword arguments must be static_argnames)")
        dyn_pos = [i for i in range(len(args)) if i not in self.static_argnums]
        poly = self.polymorphic_shapes
        if isinstance(poly, (list, tuple)):
            if len(poly) != len(args):
                raise ValueError(
                    f"llvmaccel.jax.jit({self._name}): polymorphic_shapes has {len(poly)} "
                    f"entries, but the call has {len(args)} positional arguments")
            for i in self.static_argnums:
                if i < len(poly) and poly[i] is not None:
                    raise ValueError(
                        f"llvmaccel.jax.jit({self._name}): argument {self._arg_label(i)} is "
                        "static (static_argnums); its polymorphic shape must be None")
            per_arg = [poly[i] for i in dyn_pos]
        else:
            per_arg = [poly] * len(dyn_pos)
        leaf_specs: list[str | None] = []
        names: list[str] = []
        for pos, spec in zip(dyn_pos, per_arg, strict=True):
            arg = args[pos]
            paths = [jax.tree_util.keystr(p) for p, _ in
                     jax.tree_util.tree_flatten_with_path(arg)[0]]
            names += [self._arg_label(pos) + p for p in paths]
            if spec is None or isinstance(spec, str):
                leaf_specs += [spec] * len(paths)
                continue
            try:
                marks = jax.tree_util.tree_map(
                    lambda sp, sub: _Spec(sp, len(jax.tree_util.tree_leaves(sub))), spec, arg,
                    is_leaf=lambda x: x is None or isinstance(x, str))
            except (ValueError, TypeError) as e:
                raise ValueError(
                    f"llvmaccel.jax.jit({self._name}): the polymorphic shapes of argument "
                    f"{self._arg_label(pos)} are not a pytree prefix of it: {e}") from None
            for m in jax.tree_util.tree_leaves(marks, is_leaf=lambda x: isinstance(x, _Spec)):
                if not isinstance(m, _Spec) or not (m.spec is None or isinstance(m.spec, str)):
                    raise ValueError(
                        f"llvmaccel.jax.jit({self._name}): the polymorphic shapes of "
                        f"argument {self._arg_label(pos)} must be strings or None")
                leaf_specs += [m.spec] * m.count
        scope = export.SymbolicScope(self.symbolic_constraints)
        specs = []
        for name, spec, a in zip(names, leaf_specs, arrays, strict=True):
            shape = tuple(int(d) for d in a.shape)
            if spec is None:
                specs.append(jax.ShapeDtypeStruct(shape, a.dtype))
                continue
            try:
                # Placeholders (``_``, ``...``) take the argument's sizes; a
                # spec without them is read alone, so that a static size that
                # differs gets the message of _bind_symbols.
                like = shape if _PLACEHOLDER.search(spec) else None
                dims = export.symbolic_shape(spec, like=like, scope=scope)
            except IndexError:  # a placeholder beyond the argument's rank
                raise ValueError(
                    f"llvmaccel.jax.jit({self._name}): argument {name} has shape {shape} of "
                    f"rank {len(shape)}, fewer dims than its polymorphic shape {spec!r}"
                ) from None
            except (ValueError, TypeError) as e:
                raise ValueError(
                    f"llvmaccel.jax.jit({self._name}): argument {name} of shape {shape} does "
                    f"not fit its polymorphic shape {spec!r}: {e}") from None
            specs.append(jax.ShapeDtypeStruct(tuple(dims), a.dtype))
        return specs, names

    def _resolve(self, args: tuple, kwargs: dict
                 ) -> tuple[Any, list[Any], dict[str, int] | None]:
        """The cache entry for a call, its array leaves and the symbol values."""
        key, arrays, tree = self._signature(args, kwargs)
        if self.polymorphic_shapes is None:
            return self._entry(key, args, kwargs, arrays, tree), arrays, None
        with self._lock:
            hit = self._bound.get(key)
        if hit is not None:
            return hit[0], arrays, hit[1]
        specs, names = self._symbolic_specs(args, kwargs, arrays)
        sym_shapes = [tuple(graph_dim(d) for d in s.shape) for s in specs]
        env = _bind_symbols(
            f"llvmaccel.jax.jit({self._name})",
            [(name, tuple(str(d) for d in s.shape), sym, tuple(int(d) for d in a.shape))
             for name, s, sym, a in zip(names, specs, sym_shapes, arrays, strict=True)])
        skey = (key[0], key[1], tuple((tuple(str(d) for d in s.shape), str(s.dtype))
                                      for s in specs))
        entry = self._entry(skey, args, kwargs, specs, tree)
        with self._lock:
            self._bound[key] = (entry, env)
        return entry, arrays, env

    def _flat_fun(self, args: tuple, kwargs: dict, tree: Any) -> Callable[..., Any]:
        """The function of the flat array leaves that this call computes."""
        import jax

        static = {i: args[i] for i in self.static_argnums if i < len(args)}
        static_kw = {k: v for k, v in kwargs.items() if k in self.static_argnames}
        n = len(args)

        def flat_fun(*flat: Any) -> Any:
            dyn_pos, dyn_kw = jax.tree_util.tree_unflatten(tree, list(flat))
            it = iter(dyn_pos)
            full = [static[i] if i in static else next(it) for i in range(n)]
            return self.fun(*full, **static_kw, **dyn_kw)

        return flat_fun

    def _build(self, args: tuple, kwargs: dict, arrays: list[Any], tree: Any) -> _Entry:
        import jax

        flat_fun = self._flat_fun(args, kwargs, tree)
        specs = [jax.ShapeDtypeStruct(a.shape, a.dtype) for a in arrays]
        closed, out_shape = jax.make_jaxpr(flat_fun, return_shape=True)(*specs)
        out_leaves, out_tree = jax.tree_util.tree_flatten(out_shape)
        try:
            g = Graph()
            for name, lowest, highest, multiple in _constraint_facts(self.symbolic_constraints):
                g.assume_symbol(name, lowest, highest, multiple)
            # A PRNG key argument is passed as its data (uint32 words).
            ins = [g.input(f"arg{k}", key_data_shape(a) if is_key_dtype(a.dtype) else
                           tuple(graph_dim(d) for d in a.shape),
                           graph_dtype(a.dtype, f"argument leaf {k}"))
                   for k, a in enumerate(arrays)]
            outs = lower_jaxpr(closed, g, ins)
            g.set_outputs(outs)
            # make_jaxpr keeps equations whose results nothing reads.
            g = g.pruned()
            entry = _Entry("llvmaccel", None, out_tree, [o.dtype for o in out_leaves], flat_fun,
                           functools.partial(compile_graph, g, self.pipeline, self.auto,
                                             self.inter_op))
            entry.in_keys = tuple(is_key_dtype(a.dtype) for a in arrays)
            return entry
        except (UnsupportedPrimitive, TypeError) as e:
            if not self.fallback:
                raise
            warnings.warn(f"llvmaccel.jax: {e}; running {getattr(self.fun, '__name__', 'f')} "
                          "with jax.jit instead", stacklevel=5)
            return _Entry("jax", jax.jit(flat_fun), out_tree, None, flat_fun)

    def compiled_for(self, *args: Any, **kwargs: Any) -> CompiledGraph | None:
        """The compiled graph used for these arguments (None if it fell back)."""
        entry = self._resolve(args, kwargs)[0]
        return entry.fn if entry.kind == "llvmaccel" else None

    def _recompile(self, flat_fun: Callable[..., Any]) -> JitFunction:
        """``flat_fun`` compiled with this function's options (the backward
        pass and the batched form of a call under JAX transformations)."""
        return JitFunction(flat_fun, self.pipeline, self.fallback, self.auto,
                           inter_op=self.inter_op)

    def _entry(self, key: Any, args: tuple, kwargs: dict, arrays: list[Any], tree: Any
               ) -> _Entry:
        with self._lock:
            entry = self._cache.get(key)
        if entry is None:
            entry = self._build(args, kwargs, arrays, tree)
            with self._lock:
                self._cache[key] = entry
        return entry

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        import jax

        entry, arrays, env = self._resolve(args, kwargs)
        if entry.kind == "jax":
            return jax.tree_util.tree_unflatten(entry.out_tree, jax.tree_util.tree_leaves(
                entry.fn(*arrays)))
        if any(isinstance(a, jax.core.Tracer) for a in arrays):
            # Under jax.grad, jax.vmap, jax.jit...: a custom call with rules.
            outs = entry.transformable(self._recompile)(*arrays)
        elif (outs := self._dispatch(entry, arrays)) is not None:
            pass
        else:
            host = [np.asarray(jax.random.key_data(a)) if key else np.asarray(a)
                    for a, key in zip(arrays, entry.in_keys, strict=True)]
            # The kernel's outputs are fresh numpy arrays that nothing else
            # holds, aligned for XLA's CPU client (compiler.OUTPUT_ALIGNMENT):
            # device_put takes them as jax.Arrays without a copy (and on the
            # calling thread; a copy would go through XLA's worker threads).
            outs = _to_jax(entry.fn(*host, symbols=env))
            if any(entry.out_keys):
                outs = [jax.random.wrap_key_data(o, impl=dt._impl) if key else o
                        for o, dt, key in zip(outs, entry.out_dtypes or [], entry.out_keys,
                                              strict=True)]
        return jax.tree_util.tree_unflatten(entry.out_tree, outs)

    def _dispatch(self, entry: _Entry, arrays: list[Any]) -> list[Any] | None:
        """The outputs of a concrete call through :meth:`_Entry.dispatcher`,
        or None where the call takes the Python path: numpy arguments (which
        :func:`jax.jit` would copy; the Python path reads them in place),
        polymorphic shapes (a new size would be a new XLA compilation), calls
        measured by :mod:`llvmaccel.profiling`, and a kernel that failed, so
        that it raises llvmaccel's own exception (its kernels are pure: the
        second run fails the same way)."""
        import jax

        if self.polymorphic_shapes is not None or profiling.instrumented() or not all(
                isinstance(a, jax.Array) for a in arrays):
            return None
        run = entry.dispatcher()
        if run is None:
            return None
        entry.fn.sync_threads()
        try:
            return run(*arrays)
        except jax.errors.JaxRuntimeError:
            return None
        except (TypeError, ValueError):  # the trace refused it (a 64-bit output
            entry.no_dispatch()          # without jax_enable_x64, say): never again
            return None


@functools.cache
def _host_put() -> Callable[[np.ndarray], Any] | None:
    """What ``jax.device_put`` does with a numpy array on the CPU, without its
    per-call bookkeeping: ``batched_device_put`` of JAX's numpy-argument
    handler, with the aval and sharding it would compute. About 15 us an
    array where ``jax.device_put`` of a list takes 60-100 (measured on the
    AMD EPYC: a small decode loop spent more time putting its two outputs
    than in its kernel). None where that internal interface is missing."""
    try:
        import jax
        from jax._src import core
        from jax._src.interpreters import pxla
        from jax.sharding import SingleDeviceSharding

        device = jax.devices()[0]
        if device.platform != "cpu":
            return None
        sharding = SingleDeviceSharding(device)
        put = pxla.batched_device_put
    except (ImportError, AttributeError, RuntimeError):
        return None

    def host_put(x: np.ndarray) -> Any:
        aval = core.ShapedArray(x.shape, x.dtype)
        return put(aval, sharding, [x], [device], committed=False)

    return host_put


@functools.cache
def _canonical(dtype: np.dtype, x64: bool) -> bool:
    """Whether JAX keeps ``dtype`` as it is (with ``jax_enable_x64`` as
    ``x64``: the key, since the flag may change between calls)."""
    import jax

    return jax.dtypes.canonicalize_dtype(dtype) == dtype


def _to_jax(outs: list[np.ndarray]) -> list[Any]:
    """The kernel's numpy outputs as jax.Arrays on the default device, as
    ``jax.device_put(outs)`` makes them (without a copy on the CPU: they are
    aligned for XLA's client)."""
    import jax

    put = _host_put()
    x64 = bool(jax.config.jax_enable_x64)
    if put is None or jax.config.jax_default_device is not None or not all(
            type(o) is np.ndarray and _canonical(o.dtype, x64) for o in outs):
        return jax.device_put(outs)
    return [put(o) for o in outs]


_CONSTRAINT = re.compile(
    r"^\s*(?:(?P<a>\w+)\s*(?P<op>>=|<=)\s*(?P<n>-?\d+)"
    r"|(?P<n2>-?\d+)\s*(?P<op2><=|>=)\s*(?P<a2>\w+)"
    r"|mod\(\s*(?P<a3>\w+)\s*,\s*(?P<m>\d+)\s*\)\s*==\s*0)\s*$")


def _constraint_facts(constraints: tuple[str, ...]) -> list[tuple[str, Any, Any, int]]:
    """The constraints of the forms ``b >= 8``, ``b <= 1024``, ``8 <= b``
    and ``mod(b, 8) == 0`` as (symbol, lowest, highest, multiple of); other
    constraints still hold for JAX's checks but state nothing to the kernel."""
    facts = []
    for c in constraints:
        m = _CONSTRAINT.match(c)
        if m is None:
            continue
        if m["a3"]:
            facts.append((m["a3"], None, None, int(m["m"])))
            continue
        name, op, n = (m["a"], m["op"], int(m["n"])) if m["a"] else \
            (m["a2"], {">=": "<=", "<=": ">="}[m["op2"]], int(m["n2"]))
        facts.append((name, n, None, 1) if op == ">=" else (name, None, n, 1))
    return facts


def jit(fun: Callable[..., Any] | None = None, *, pipeline: str | None = None,
        fallback: bool = False, auto: str | None = None,
        static_argnums: tuple[int, ...] = (),
        polymorphic_shapes: PolymorphicShapes = None,
        static_argnames: str | tuple[str, ...] = (),
        symbolic_constraints: tuple[str, ...] = (), inter_op: bool | None = None) -> Any:
    """Compiles ``fun`` with llvmaccel (usable as ``@jit`` or ``@jit(...)``).

    Args:
        fun: A function of arrays (numpy or JAX) and pytrees of arrays.
        pipeline: LLVM pass pipeline (default ``"default<O3>"``).
        fallback: On an unsupported primitive, warn and use :func:`jax.jit`
            instead of raising :class:`UnsupportedPrimitive`.
        auto: llvmaccel passes in the default pipelines (``"all"``, ``"none"``).
        static_argnums: Arguments that are Python values, not arrays.
        static_argnames: The same by name (positional parameters' names make
            their positions static; keyword arguments of these names are
            static wherever they are passed). Other keyword arguments are
            array pytrees, as in :func:`jax.jit`.
        symbolic_constraints: Constraints on the dimension variables, as
            :func:`jax.export.symbolic_shape` takes them (``"b >= 8"``,
            ``"mod(b, 8) == 0"``). Ranges and divisibility are stated to the
            kernel (shape anchors: the vectorizer can drop a remainder loop);
            a call that breaks one raises ValueError.
        polymorphic_shapes: Symbolic sizes, in the syntax of
            :func:`jax.export.symbolic_shape`: None (every shape static, one
            compilation per shape), one string for every argument, or a list
            with an entry per positional argument, each None (static), a
            string (``"b, 16"``, ``"4*b"``, ``"b, ..."``) or a pytree prefix
            of the argument holding those (entries of ``static_argnums``
            must be None). All specs share one symbolic scope, so a name means
            one size. Shapes fitting the specs share one compilation; a call
            that does not fit raises ValueError naming the argument and dim.
        inter_op: Run the graph's independent branches as parallel tasks of
            MLIR's async runtime (:mod:`llvmaccel.interop`); None leaves it
            to ``$LLVMACCEL_INTER_OP`` (default off).

    Results are ``jax.Array`` values (on the CPU), in the pytree structure
    ``fun`` returns.

    Raises:
        UnsupportedPrimitive: ``fun`` uses a primitive (or a form of one,
            such as a size that is symbolic where a static one is needed)
            llvmaccel cannot lower, and ``fallback`` is false.
        ValueError: The arguments do not fit ``polymorphic_shapes``.
        TypeError: An argument's dtype is not supported.
    """
    if fun is None:
        return lambda f: JitFunction(f, pipeline, fallback, auto, static_argnums,
                                     polymorphic_shapes, static_argnames, symbolic_constraints,
                                     inter_op)
    return JitFunction(fun, pipeline, fallback, auto, static_argnums, polymorphic_shapes,
                       static_argnames, symbolic_constraints, inter_op)


def _bind_symbols(what: str, leaves: list[tuple[str, tuple[str, ...], tuple[Dim, ...],
                                                 tuple[int, ...]]]) -> dict[str, int]:
    """Values of the dimension variables, from the argument shapes.

    ``leaves`` holds, per array leaf: its name, its declared sizes as JAX
    writes them, as graph sizes, and its actual shape. A variable is bound by
    a dim that is the variable alone, or solved from a dim linear in it
    (``k*b + c``) once the others are known; then every dim is checked.
    Raises ValueError naming the argument and dim that does not fit.
    """
    env: dict[str, int] = {}
    where: dict[str, str] = {}
    pending: list[tuple[str, int, str, SymExpr, int]] = []
    for name, text, sym, shape in leaves:
        if len(sym) != len(shape):
            raise ValueError(f"{what}: argument {name} has shape {shape} of rank {len(shape)}, "
                             f"but its polymorphic shape ({', '.join(text)}) has rank "
                             f"{len(sym)}")
        for d, (s, n) in enumerate(zip(sym, shape, strict=True)):
            if isinstance(s, int):
                if s != n:
                    raise ValueError(f"{what}: argument {name} dim {d} has size {n}, but its "
                                     f"polymorphic shape ({', '.join(text)}) declares {s}")
            elif s.op == "sym":
                v = s.args[0]
                if v in env and env[v] != n:
                    raise ValueError(f"{what}: argument {name} dim {d} has size {n}, but it is "
                                     f"declared {v!r}, which is {env[v]} from {where[v]}")
                if v not in env:
                    env[v], where[v] = n, f"argument {name} dim {d}"
            else:
                pending.append((name, d, text[d], s, n))
    progress = True
    while progress:
        progress = False
        for name, d, _, s, n in pending:
            unknown = s.symbols() - env.keys()
            if len(unknown) != 1:
                continue
            (v,) = unknown
            f0, f1 = dim_eval(s, {**env, v: 0}), dim_eval(s, {**env, v: 1})
            k = f1 - f0
            if k > 0 and (n - f0) % k == 0 and dim_eval(s, {**env, v: (n - f0) // k}) == n:
                env[v], where[v] = (n - f0) // k, f"argument {name} dim {d}"
                progress = True
    for name, d, text_d, s, n in pending:
        unknown = sorted(s.symbols() - env.keys())
        if len(unknown) == 1 and _linear_in(s, unknown[0], env):
            raise ValueError(f"{what}: argument {name} dim {d} has size {n}, which does not fit "
                             f"{text_d!r} for any value {unknown[0]!r} >= 1")
        if unknown:
            raise ValueError(f"{what}: cannot solve {', '.join(map(repr, unknown))} from the "
                             f"argument shapes: argument {name} dim {d} (size {n}) is declared "
                             f"{text_d!r}; a dimension variable must appear alone, or in a "
                             "linear expression k*b + c, in some dim")
        want = dim_eval(s, env)
        if want != n:
            values = ", ".join(f"{v}={env[v]}" for v in sorted(s.symbols()))
            raise ValueError(f"{what}: argument {name} dim {d} has size {n}, but it is declared "
                             f"{text_d!r}, which is {want} with {values}")
    for v, n in env.items():
        if n < 1:
            raise ValueError(f"{what}: dimension variable {v!r} would be {n} (from {where[v]}); "
                             "symbolic dimensions are >= 1 (as in jax.export)")
    return env


def _linear_in(s: SymExpr, v: str, env: dict[str, int]) -> bool:
    """Whether ``s`` looks linear in ``v`` (equal steps over v = 0, 1, 2, 3)."""
    vals = [dim_eval(s, {**env, v: t}) for t in range(4)]
    return len({b - a for a, b in zip(vals, vals[1:], strict=False)}) == 1


# Kernels inside jax.jit programs (imported last: ffi wraps JitFunction).
from . import ffi  # noqa: E402
from .ffi import ffi_function  # noqa: E402
