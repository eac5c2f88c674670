"""The README's inter-op examples (test/py/test_examples.py runs this file):
a graph's independent branches run as parallel tasks of MLIR's async
runtime, with torch.compile, llvmaccel.jax.jit and a Graph."""

import warnings

import jax.numpy as jnp
import numpy as np
import torch

import llvmaccel.compiler
import llvmaccel.jax
import llvmaccel.torch  # noqa: F401  (registers the backend)
from llvmaccel.graph import DType, Graph


class TwoTowers(torch.nn.Module):
    """A DLRM-like model: an embedding bag and a dense tower, then a join."""

    def __init__(self) -> None:
        super().__init__()
        self.bag = torch.nn.EmbeddingBag(100, 8, mode="sum")
        self.dense = torch.nn.Linear(16, 8)

    def forward(self, dense, indices, offsets):
        return (self.bag(indices, offsets) * torch.relu(self.dense(dense))).sum(-1)


dlrm = TwoTowers().eval()
args = (torch.randn(4, 16), torch.randint(0, 100, (12,)), torch.tensor([0, 3, 6, 9]))


def f(x, y):
    return jnp.tanh(x).sum(0) + jnp.exp(y).sum(0)   # two independent branches


graph = Graph()
a = graph.input("a", (64, 64), DType.f32)
bb = graph.input("b", (64, 64), DType.f32)
graph.set_outputs([graph.binary("add", graph.reduce("sum", graph.unary("exp", a), (1,)),
                                graph.reduce("sum", graph.unary("tanh", bb), (1,)))])

with warnings.catch_warnings():
    warnings.simplefilter("ignore", RuntimeWarning)  # no MLIR tools: sequential, said once
    fast = torch.compile(dlrm, backend="llvmaccel", options={"inter_op": True})
    heads = llvmaccel.jax.jit(f, inter_op=True)          # or LLVMACCEL_INTER_OP=1
    compiled = llvmaccel.compiler.compile_graph(graph, inter_op=True)   # a Graph
    compiled.branches                                    # the tasks, or None (sequential)

    with torch.no_grad():
        torch.testing.assert_close(fast(*args), dlrm(*args), rtol=1e-5, atol=1e-5)
    x, y = np.ones((3, 5), np.float32), np.zeros((3, 5), np.float32)
    np.testing.assert_allclose(heads(x, y), np.tanh(x).sum(0) + np.exp(y).sum(0), rtol=1e-6)
    xa = np.random.default_rng(0).standard_normal((64, 64)).astype(np.float32)
    np.testing.assert_allclose(compiled(xa, xa)[0], np.exp(xa).sum(1) + np.tanh(xa).sum(1),
                               rtol=1e-5)
print("inter-op examples: ok;", "branches:", len(compiled.branches or []))
