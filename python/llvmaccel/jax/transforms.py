"""JAX transformations over llvmaccel-compiled functions.

:func:`llvmaccel.jax.jit` and :func:`llvmaccel.jax.ffi.ffi_function` return
functions that JAX can transform like its own: ``jax.grad``, ``jax.vjp``,
``jax.jvp``, ``jax.vmap`` and ``jax.jit`` compose over them, in any order and
nesting. Each signature of a compiled function becomes one
:func:`transformable` callable over the flat array arguments:

- its primal runs the llvmaccel kernel as a :func:`jax.ffi.ffi_call` (so it
  can sit in any traced program);
- differentiation is a :func:`jax.custom_vjp` whose backward pass is
  ``jax.vjp`` of the original function, itself compiled by llvmaccel (with
  the same options) and itself transformable, so higher derivatives
  (``jax.grad`` of ``jax.grad``, ``jax.hessian`` by reverse mode) work;
  forward mode (``jax.jvp``, ``jax.jacfwd``) is refused by JAX, as for any
  :func:`jax.custom_vjp` function;
- batching is a :func:`jax.custom_batching.custom_vmap` rule compiling
  ``jax.vmap`` of the original function with llvmaccel, so a vmapped call
  runs one kernel over the batch instead of one kernel per element.

Integer and boolean inputs get zero (``float0``) cotangents, as in JAX;
integer outputs take no cotangent.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["transformable"]

Run = Callable[..., list[Any]]
"""Runs the compiled kernel on the flat arrays (concrete or traced)."""

Recompile = Callable[[Callable[..., Any]], Callable[..., Any]]
"""Compiles another flat function with the same llvmaccel options."""


def _differentiable(dtype: Any) -> bool:
    import jax.numpy as jnp

    return bool(jnp.issubdtype(dtype, jnp.inexact))


class _Transformable:
    """The flat function of one signature, with its VJP and batching rules."""

    def __init__(self, flat_fun: Callable[..., Any], run: Run, recompile: Recompile,
                 batching: bool) -> None:
        import jax
        from jax.custom_batching import custom_vmap

        def leaves(*xs: Any) -> list[Any]:
            return jax.tree_util.tree_leaves(flat_fun(*xs))

        self.flat_fun = leaves
        self.recompile = recompile
        self._lock = threading.Lock()
        self._vjps: dict[tuple, Callable[..., Any]] = {}
        self._vmaps: dict[tuple, Callable[..., Any]] = {}

        def primal(*flat: Any) -> list[Any]:
            return list(run(*flat))

        if batching:
            primal = custom_vmap(primal)

            @primal.def_vmap
            def batched(axis_size: int, in_batched: list[bool], *flat: Any
                        ) -> tuple[list, list]:
                outs = self._vmapped(tuple(bool(b) for b in in_batched))(*flat)
                return list(outs), [True] * len(outs)

        @jax.custom_vjp
        def call(*flat: Any) -> list[Any]:
            return primal(*flat)

        def fwd(*flat: Any) -> tuple[list[Any], tuple]:
            # call, not primal: under a further derivative the forward pass
            # is differentiated too, through this same rule.
            return call(*flat), flat

        def bwd(primals: tuple, cts: list[Any]) -> tuple:
            return self._backward(primals, cts)

        call.defvjp(fwd, bwd)
        self.call = call

    def _vmapped(self, in_batched: tuple[bool, ...]) -> Callable[..., Any]:
        """``jax.vmap`` of the flat function over the batched arguments
        (batch axis 0, as custom_vmap gives them), compiled by llvmaccel."""
        import jax

        with self._lock:
            hit = self._vmaps.get(in_batched)
        if hit is None:
            in_axes = tuple(0 if b else None for b in in_batched)
            vf = jax.vmap(lambda *xs: list(self.flat_fun(*xs)), in_axes=in_axes, out_axes=0)
            hit = self.recompile(vf)
            with self._lock:
                self._vmaps[in_batched] = hit
        return hit

    def _backward(self, primals: tuple, cts: list[Any]) -> tuple:
        import jax
        import jax.numpy as jnp

        diff_in = tuple(i for i, p in enumerate(primals) if _differentiable(p.dtype))
        diff_out = tuple(j for j, c in enumerate(cts) if _differentiable(c.dtype))
        grads: list[Any] = [np.zeros(np.shape(p), dtype=jax.dtypes.float0) for p in primals]
        if not diff_in:
            return tuple(grads)
        if not diff_out:
            for i in diff_in:
                grads[i] = jnp.zeros(primals[i].shape, primals[i].dtype)
            return tuple(grads)
        key = (diff_in, diff_out)
        with self._lock:
            vjp = self._vjps.get(key)
        if vjp is None:
            vjp = self.recompile(self._vjp_function(len(primals), diff_in, diff_out))
            with self._lock:
                self._vjps[key] = vjp
        got = vjp(*primals, *[cts[j] for j in diff_out])
        for i, g in zip(diff_in, got, strict=True):
            grads[i] = g
        return tuple(grads)

    def _vjp_function(self, n: int, diff_in: tuple[int, ...],
                      diff_out: tuple[int, ...]) -> Callable[..., list[Any]]:
        """(primals..., output cotangents...) -> cotangents of the
        differentiable inputs, by ``jax.vjp`` of the flat function."""
        import jax

        flat_fun = self.flat_fun

        def vjp_fun(*xs: Any) -> list[Any]:
            primals, cts = list(xs[:n]), list(xs[n:])

            def of_diff(*d: Any) -> list[Any]:
                full = list(primals)
                for i, v in zip(diff_in, d, strict=True):
                    full[i] = v
                outs = list(flat_fun(*full))
                return [outs[j] for j in diff_out]

            _, pullback = jax.vjp(of_diff, *[primals[i] for i in diff_in])
            return list(pullback(cts))

        return vjp_fun


def transformable(flat_fun: Callable[..., Any], run: Run, recompile: Recompile,
                  batching: bool = True) -> Callable[..., list[Any]]:
    """A function of flat arrays that runs ``run`` and that ``jax.grad``,
    ``jax.vmap`` and ``jax.jit`` can transform.

    Args:
        flat_fun: The JAX function ``run`` computes (flat arrays in, a pytree
            of arrays out, taken as its leaves); its ``jax.vjp`` and
            ``jax.vmap`` define the rules.
        run: Runs the compiled kernel on the flat arrays, concrete or traced
            (a :func:`jax.ffi.ffi_call`), returning a list of arrays.
        recompile: Compiles another flat function with the same llvmaccel
            options, returning a callable that is itself transformable (the
            backward pass and the batched function).
        batching: Give :func:`jax.vmap` the batching rule; without it,
            ``run`` itself must handle batch tracers (a
            :func:`jax.ffi.ffi_call` with a ``vmap_method``).
    """
    return _Transformable(flat_fun, run, recompile, batching).call
