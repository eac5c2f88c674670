"""The README's PyTorch examples, run as written from the repository's root
(test/py/test_examples.py runs it): a DLRM-style model (an EmbeddingBag over
sparse features beside a dense MLP) through torch.compile(backend="llvmaccel"),
for inference and training, explained; then a compiled MLP profiled."""

import torch
import llvmaccel.torch


class EmbeddingModel(torch.nn.Module):
    """relu(Linear(dense) + EmbeddingBag(indices, offsets)), summed per bag."""

    def __init__(self, rows: int = 10000, dim: int = 32, features: int = 16) -> None:
        super().__init__()
        self.bag = torch.nn.EmbeddingBag(rows, dim, mode="sum")
        self.dense = torch.nn.Linear(features, dim)

    def forward(self, dense: torch.Tensor, indices: torch.Tensor,
                offsets: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.dense(dense) + self.bag(indices, offsets))


torch.manual_seed(0)
model = EmbeddingModel()
batch, per_bag = 64, 20
dense = torch.randn(batch, 16)
indices = torch.randint(0, 10000, (batch * per_bag,))
offsets = torch.arange(0, batch * per_bag, per_bag)

fast = torch.compile(model, backend="llvmaccel", dynamic=True)   # sizes are run-time arguments
with torch.no_grad():                                           # inference
    y = fast(dense, indices, offsets)
loss = fast(dense, indices, offsets).sum()                      # gradients enabled: compiled too
loss.backward()                                                 # the backward graph as well
print(llvmaccel.torch.explain(model, dense, indices, offsets))  # compiled ops, fallbacks, passes fired

with torch.no_grad():
    torch.testing.assert_close(y, model(dense, indices, offsets), rtol=1e-5, atol=1e-5)
assert model.dense.weight.grad is not None

# Profiling a compiled model: which kernel, which line of the model.
mlp = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.GELU(), torch.nn.Linear(128, 8))
model = torch.compile(mlp, backend="llvmaccel")
x = torch.randn(32, 64)
with torch.no_grad():
    model(x)                                    # compile first
    print(llvmaccel.profile(model, x, repeat=20))
