"""Batch norm (inference and training statistics) and the transformer
encoder fast path (``aten._transformer_encoder_layer_fwd``) compiled whole by
the torch backend, against eager PyTorch."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F  # noqa: N812

import llvmaccel.torch as lt

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench" / "frontends"))
from models import MobileNetV3Small  # noqa: E402  (bench/frontends/models.py)


def _compile(model: nn.Module, strict: bool = True) -> nn.Module:
    torch._dynamo.reset()
    return torch.compile(model, backend="llvmaccel", options={"strict": strict})


class _Block(nn.Module):
    """A ResNet basic block (conv-bn-relu-conv-bn, projection shortcut)."""

    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.c1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.b1 = nn.BatchNorm2d(cout)
        self.c2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.b2 = nn.BatchNorm2d(cout)
        self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                  nn.BatchNorm2d(cout)) if stride != 1 or cin != cout else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.b1(self.c1(x)))
        y = self.b2(self.c2(y))
        return torch.relu(y + (self.down(x) if self.down is not None else x))


class SmallResNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 7, 2, 3, bias=False), nn.BatchNorm2d(8),
                                  nn.ReLU(), nn.MaxPool2d(3, 2, 1))
        self.layers = nn.Sequential(_Block(8, 8, 1), _Block(8, 16, 2))
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(16, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(torch.flatten(self.pool(self.layers(self.stem(x))), 1))


def _randomize_bn(model: nn.Module) -> None:
    """Running statistics and affine parameters away from their defaults, so
    the inference form is tested with real values."""
    g = torch.Generator().manual_seed(1)
    for m in model.modules():
        if isinstance(m, nn.BatchNorm1d | nn.BatchNorm2d):
            m.running_mean.copy_(torch.randn(m.num_features, generator=g))
            m.running_var.copy_(torch.rand(m.num_features, generator=g) + 0.5)
            with torch.no_grad():
                m.weight.copy_(torch.randn(m.num_features, generator=g))
                m.bias.copy_(torch.randn(m.num_features, generator=g))


def _assert_compiles_whole(model: nn.Module, x: torch.Tensor) -> None:
    """Under no_grad: no op of ``model`` falls back, and the compiled model
    gives eager's results."""
    with torch.no_grad():
        report = lt.explain(model, x)
        assert report.fallbacks == [], str(report)
        expected = model(x)
        got = _compile(model)(x)
    torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-4)


def test_resnet_block_inference_compiles_whole():
    torch.manual_seed(0)
    model = SmallResNet().eval()
    _randomize_bn(model)
    _assert_compiles_whole(model, torch.randn(2, 3, 32, 32))


def test_mobilenet_v3_small_compiles_whole():
    """A held-out CNN (the issue's mobilenet_v3_small: 47 partitions and 86
    ops falling back before): no fallback and eager's results."""
    torch.manual_seed(0)
    model = MobileNetV3Small().eval()
    _randomize_bn(model)
    _assert_compiles_whole(model, torch.randn(2, 3, 96, 96))


def test_resnet_inference_with_gradients_enabled():
    torch.manual_seed(0)
    model = SmallResNet().eval()
    _randomize_bn(model)
    x = torch.randn(2, 3, 32, 32)
    torch.testing.assert_close(_compile(model)(x), model(x), rtol=1e-4, atol=1e-4)


def test_batch_norm_training_statistics_and_running_stats():
    torch.manual_seed(0)
    eager = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4, momentum=0.3),
                          nn.ReLU(), nn.Flatten(), nn.Linear(4 * 8 * 8, 3)).train()
    mine = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4, momentum=0.3),
                         nn.ReLU(), nn.Flatten(), nn.Linear(4 * 8 * 8, 3)).train()
    mine.load_state_dict(eager.state_dict())
    compiled = _compile(mine, strict=False)  # convolution_backward runs eagerly
    for step in range(2):
        x = torch.randn(5, 3, 8, 8) * (step + 1) + step
        out_e, out_c = eager(x), compiled(x)
        torch.testing.assert_close(out_c, out_e, rtol=1e-4, atol=1e-4)
        out_e.square().sum().backward()
        out_c.square().sum().backward()
    bn_e, bn_c = eager[1], mine[1]
    torch.testing.assert_close(bn_c.running_mean, bn_e.running_mean, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(bn_c.running_var, bn_e.running_var, rtol=1e-5, atol=1e-5)
    assert int(bn_c.num_batches_tracked) == 2
    for pe, pc in zip(eager.parameters(), mine.parameters(), strict=True):
        torch.testing.assert_close(pc.grad, pe.grad, rtol=1e-3, atol=1e-3)


def test_batch_norm_1d():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 5), nn.BatchNorm1d(5), nn.ReLU()).eval()
    _randomize_bn(model)
    x = torch.randn(7, 6)
    with torch.no_grad():
        torch.testing.assert_close(_compile(model)(x), model(x), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_transformer_encoder_layer_fast_path(norm_first, activation):
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(32, 4, 64, dropout=0.1, activation=activation,
                                       batch_first=True, norm_first=norm_first).eval()
    x = torch.randn(3, 10, 32)
    with torch.no_grad():
        report = lt.explain(layer, x)
        assert report.fallbacks == [] and len(report.compiled) > 0, str(report)
        torch.testing.assert_close(_compile(layer)(x), layer(x), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("kind", ["padding", "causal-bool", "float"])
def test_transformer_encoder_layer_masks(kind):
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(16, 2, 32, batch_first=True).eval()
    x = torch.randn(2, 6, 16)
    kwargs = {}
    if kind == "padding":
        pad = torch.zeros(2, 6, dtype=torch.bool)
        pad[0, 4:] = True
        kwargs["src_key_padding_mask"] = pad
    elif kind == "causal-bool":
        kwargs["src_mask"] = torch.triu(torch.ones(6, 6, dtype=torch.bool), 1)
        kwargs["is_causal"] = True
    else:  # the fused kernel reads a float mask's nonzero entries as "masked"
        mask = torch.zeros(6, 6)
        mask[:, 3] = -1.5
        mask[2, 4] = float("-inf")
        kwargs["src_mask"] = mask
    with torch.no_grad():
        expected = layer(x, **kwargs)
        got = _compile(layer)(x, **kwargs)
    torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-4)


def test_transformer_encoder_stack():
    torch.manual_seed(0)
    enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(16, 2, 32, batch_first=True),
                                num_layers=2, enable_nested_tensor=False).eval()
    x = torch.randn(2, 5, 16)
    with torch.no_grad():
        report = lt.explain(enc, x)
        assert report.fallbacks == [], str(report)
        torch.testing.assert_close(_compile(enc)(x), enc(x), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(("kernel", "stride", "padding", "dilation", "ceil"), [
    (3, 2, 1, 1, False), (2, 2, 0, 1, False), (3, 1, 1, 2, False), (3, 2, 0, 1, True),
])
def test_max_pool_indices(kernel, stride, padding, dilation, ceil):
    torch.manual_seed(0)
    x = torch.randn(2, 3, 9, 11)
    x[0, 0, 1, 1] = float("nan")
    x[0, 0, 1, 2] = float("nan")  # two NaNs in one window: the last one is taken
    x[1, 2, 4:7, 4:7] = 0.5  # ties: the first position is taken
    x[1, 1, :, :3] = float("-inf")

    def fn(x):
        return torch.nn.functional.max_pool2d(x, kernel, stride, padding, dilation, ceil,
                                              return_indices=True)

    torch._dynamo.reset()
    got_v, got_i = torch.compile(fn, backend="llvmaccel", options={"strict": True})(x)
    want_v, want_i = fn(x)
    torch.testing.assert_close(got_v, want_v, equal_nan=True)
    assert torch.equal(got_i, want_i)


@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_group_norm_compiles_whole(affine, dtype):
    """``nn.GroupNorm`` (``aten.native_group_norm``, llvmaccel's own
    decomposition: PyTorch's goes through ``as_strided``), 4-D and 3-D,
    against eager; half types keep their statistics in float32."""
    torch.manual_seed(0)
    for shape in ((2, 12, 5, 7), (3, 12, 9)):
        m = nn.GroupNorm(3, 12, affine=affine).eval().to(dtype)
        if affine:
            with torch.no_grad():
                m.weight.normal_()
                m.bias.normal_()
        x = (torch.randn(*shape) * 3 + 1).to(dtype)
        with torch.no_grad():
            report = lt.explain(m, x)
            assert report.fallbacks == [], str(report)
            tol = 1e-5 if dtype is torch.float32 else 2e-2
            torch.testing.assert_close(_compile(m)(x), m(x), rtol=tol, atol=tol)


@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_grid_sample_compiles_whole(mode, padding_mode, align_corners):
    """``F.grid_sample`` (PyTorch's decomposition of ``grid_sampler_2d``:
    gathers at computed indices), sample points inside and outside the
    image, against eager."""
    torch.manual_seed(1)
    x = torch.randn(2, 3, 6, 7)
    grid = torch.rand(2, 5, 4, 2) * 2.6 - 1.3

    def fn(x, grid):
        return F.grid_sample(x, grid, mode=mode, padding_mode=padding_mode,
                             align_corners=align_corners)

    with torch.no_grad():
        report = lt.explain(fn, x, grid)
        assert report.fallbacks == [], str(report)
        torch.testing.assert_close(_compile(fn)(x, grid), fn(x, grid), rtol=1e-5, atol=1e-5)


def test_adaptive_max_pool_compiles_every_size():
    """Adaptive max pooling to an output size that divides the input's is a
    max pool (values and indices as eager's); to other sizes (7 x 7 to 3 x
    3: windows of 3 and of 2) it compiles too, values and indices eager's."""
    torch.manual_seed(2)
    x = torch.randn(2, 3, 8, 12)

    def fn(x):
        return F.adaptive_max_pool2d(x, (4, 3), return_indices=True)

    with torch.no_grad():
        report = lt.explain(fn, x)
        assert report.fallbacks == [], str(report)
        got, want = _compile(fn)(x), fn(x)
    torch.testing.assert_close(got[0], want[0])
    torch.testing.assert_close(got[1], want[1])
    odd = torch.randn(1, 2, 7, 7)

    def uneven(x):
        return F.adaptive_max_pool2d(x, 3, return_indices=True)

    with torch.no_grad():
        report = lt.explain(uneven, odd)
        assert report.fully_compiled, str(report)
        got, want = _compile(uneven)(odd), uneven(odd)
    torch.testing.assert_close(got[0], want[0])
    torch.testing.assert_close(got[1], want[1])


class _UNetBlock(nn.Module):
    def __init__(self, cin: int, cout: int) -> None:
        super().__init__()
        self.c1, self.n1 = nn.Conv2d(cin, cout, 3, padding=1), nn.GroupNorm(4, cout)
        self.c2, self.n2 = nn.Conv2d(cout, cout, 3, padding=1), nn.GroupNorm(4, cout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.silu(self.n2(self.c2(F.silu(self.n1(self.c1(x))))))


class TinyUNet(nn.Module):
    """A diffusion-style UNet: group norm, SiLU, max pooling, a transposed
    convolution up and a skip connection by concatenation."""

    def __init__(self) -> None:
        super().__init__()
        self.d1, self.d2, self.mid = _UNetBlock(3, 16), _UNetBlock(16, 32), _UNetBlock(32, 32)
        self.up = nn.ConvTranspose2d(32, 16, 2, 2)
        self.u1, self.out = _UNetBlock(32, 16), nn.Conv2d(16, 3, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a = self.d1(x)
        m = self.mid(self.d2(F.max_pool2d(a, 2)))
        return self.out(self.u1(torch.cat([self.up(m), a], 1)))


class TinyViT(nn.Module):
    """A vision transformer: a strided patch convolution, a class token,
    learned positions and a pre-norm GELU encoder."""

    def __init__(self) -> None:
        super().__init__()
        self.patch = nn.Conv2d(3, 64, 8, 8)
        self.cls = nn.Parameter(torch.randn(1, 1, 64))
        self.pos = nn.Parameter(torch.randn(1, 17, 64))
        layer = nn.TransformerEncoderLayer(64, 4, 128, dropout=0.0, batch_first=True,
                                           norm_first=True, activation="gelu")
        self.enc = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.head = nn.Linear(64, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        p = self.patch(x).flatten(2).transpose(1, 2)
        t = torch.cat([self.cls.expand(x.shape[0], -1, -1), p], 1) + self.pos
        return self.head(self.enc(t)[:, 0])


@pytest.mark.parametrize("model", [TinyUNet, TinyViT])
def test_held_out_unet_and_vit_compile_whole(model):
    """Two architectures no benchmark uses compile with no fallback and give
    eager's results."""
    torch.manual_seed(0)
    _assert_compiles_whole(model().eval(), torch.randn(2, 3, 32, 32))
