"""PyTorch entry point: ``torch.compile(model, backend="llvmaccel")``.

>>> import torch, llvmaccel.torch
>>> fast = torch.compile(model, backend="llvmaccel", dynamic=True)
>>> with torch.no_grad():
...     y = fast(x)
>>> print(llvmaccel.torch.explain(model, x))   # what was compiled, what fell back

The backend is registered under the ``torch_dynamo_backends`` entry point and
is also :data:`llvmaccel.torch.backend`. Options (``torch.compile(...,
options={...})``): ``pipeline`` (LLVM pass pipeline, default
``"default<O3>"``), ``auto`` (``"all"``/``"none"``: llvmaccel passes in the
default pipelines), ``strict`` (raise instead of falling back to eager).
"""

from __future__ import annotations

from .. import custom_ops as _custom_ops
from .dynamo import Explanation, FallbackNode, LLVMAccelTorchError, backend, explain

for _op in _custom_ops.registered():  # ops declared before torch was imported
    _op.register_torch()

__all__ = ["backend", "explain", "Explanation", "FallbackNode", "LLVMAccelTorchError"]
