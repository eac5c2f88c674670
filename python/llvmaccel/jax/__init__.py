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
"""

from __future__ import annotations

import functools
import threading
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from ..compiler import CompiledGraph, compile_graph
from ..graph import Graph
from .lowering import UnsupportedPrimitive, graph_dtype, lower_jaxpr

__all__ = ["jit", "JitFunction", "UnsupportedPrimitive"]


class JitFunction:
    """A function compiled by llvmaccel for each argument signature.

    Call it like the original function. Attributes ``pipeline`` and
    ``fallback`` are those given to :func:`jit`; :meth:`compiled_for` gives
    the :class:`~llvmaccel.compiler.CompiledGraph` of a call (with its
    optimization report).
    """

    def __init__(self, fun: Callable[..., Any], pipeline: str | None = None,
                 fallback: bool = False, auto: str | None = None,
                 static_argnums: tuple[int, ...] = ()) -> None:
        self.fun = fun
        self.pipeline = pipeline
        self.fallback = fallback
        self.auto = auto
        self.static_argnums = tuple(static_argnums)
        self._cache: dict[Any, Any] = {}
        self._lock = threading.Lock()
        functools.update_wrapper(self, fun)

    def _signature(self, args: tuple) -> tuple[Any, list[Any], Any]:
        import jax

        dyn = [a for i, a in enumerate(args) if i not in self.static_argnums]
        static = tuple((i, args[i]) for i in self.static_argnums if i < len(args))
        leaves, tree = jax.tree_util.tree_flatten(dyn)
        arrays = []
        for k, leaf in enumerate(leaves):
            arr = leaf if hasattr(leaf, "shape") and hasattr(leaf, "dtype") else np.asarray(leaf)
            graph_dtype(arr.dtype, f"argument leaf {k}")
            arrays.append(arr)
        key = (tree, static, tuple((tuple(a.shape), str(a.dtype)) for a in arrays))
        return key, arrays, tree

    def _build(self, args: tuple, arrays: list[Any], tree: Any) -> Any:
        import jax

        static = {i: args[i] for i in self.static_argnums if i < len(args)}
        n = len(args)

        def flat_fun(*flat: Any) -> Any:
            dyn = jax.tree_util.tree_unflatten(tree, list(flat))
            it = iter(dyn)
            full = [static[i] if i in static else next(it) for i in range(n)]
            return self.fun(*full)

        specs = [jax.ShapeDtypeStruct(a.shape, a.dtype) for a in arrays]
        closed, out_shape = jax.make_jaxpr(flat_fun, return_shape=True)(*specs)
        out_leaves, out_tree = jax.tree_util.tree_flatten(out_shape)
        try:
            g = Graph()
            ins = [g.input(f"arg{k}", tuple(int(d) for d in a.shape),
                           graph_dtype(a.dtype, f"argument leaf {k}"))
                   for k, a in enumerate(arrays)]
            outs = lower_jaxpr(closed, g, ins)
            g.set_outputs(outs)
            compiled = compile_graph(g, self.pipeline, self.auto)
            return ("llvmaccel", compiled, out_tree, [o.dtype for o in out_leaves])
        except (UnsupportedPrimitive, TypeError) as e:
            if not self.fallback:
                raise
            warnings.warn(f"llvmaccel.jax: {e}; running {getattr(self.fun, '__name__', 'f')} "
                          "with jax.jit instead", stacklevel=3)
            return ("jax", jax.jit(flat_fun), out_tree, None)

    def compiled_for(self, *args: Any) -> CompiledGraph | None:
        """The compiled graph used for these arguments (None if it fell back)."""
        key, arrays, tree = self._signature(args)
        entry = self._entry(key, args, arrays, tree)
        return entry[1] if entry[0] == "llvmaccel" else None

    def _entry(self, key: Any, args: tuple, arrays: list[Any], tree: Any) -> Any:
        with self._lock:
            entry = self._cache.get(key)
        if entry is None:
            entry = self._build(args, arrays, tree)
            with self._lock:
                self._cache[key] = entry
        return entry

    def __call__(self, *args: Any) -> Any:
        import jax

        key, arrays, tree = self._signature(args)
        kind, fn, out_tree, _ = self._entry(key, args, arrays, tree)
        if kind == "jax":
            return jax.tree_util.tree_unflatten(out_tree, jax.tree_util.tree_leaves(
                fn(*arrays)))
        outs = fn(*[np.asarray(a) for a in arrays])
        return jax.tree_util.tree_unflatten(out_tree, outs)


def jit(fun: Callable[..., Any] | None = None, *, pipeline: str | None = None,
        fallback: bool = False, auto: str | None = None,
        static_argnums: tuple[int, ...] = ()) -> Any:
    """Compiles ``fun`` with llvmaccel (usable as ``@jit`` or ``@jit(...)``).

    Args:
        fun: A function of arrays (numpy or JAX) and pytrees of arrays.
        pipeline: LLVM pass pipeline (default ``"default<O3>"``).
        fallback: On an unsupported primitive, warn and use :func:`jax.jit`
            instead of raising :class:`UnsupportedPrimitive`.
        auto: llvmaccel passes in the default pipelines (``"all"``, ``"none"``).
        static_argnums: Arguments that are Python values, not arrays.

    Results are numpy arrays, in the pytree structure ``fun`` returns.
    """
    if fun is None:
        return lambda f: JitFunction(f, pipeline, fallback, auto, static_argnums)
    return JitFunction(fun, pipeline, fallback, auto, static_argnums)
