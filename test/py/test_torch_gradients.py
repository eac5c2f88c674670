"""Gradients through torch.compile(backend="llvmaccel") against eager:
OpInfo samples of the ops the backend lowers (forward and backward graphs
compiled, the first backward through a forward that saved only its inputs)
and training steps of the models (every parameter's gradient, the step
after the switch to the saving forward included)."""

from __future__ import annotations

import copy
import math
import warnings

import pytest

torch = pytest.importorskip("torch")
import torch.nn as nn  # noqa: E402
from test_frontend_torch import DLRM, MLP, Block, opinfos  # noqa: E402

GRAD_OPS = [
    # elementwise, reductions, normalizations, matmuls, views, gathers
    "add", "mul", "div", "exp", "log", "sqrt", "tanh", "sigmoid", "nn.functional.relu",
    "nn.functional.gelu", "nn.functional.silu", "maximum", "where", "sum", "mean", "amax",
    "softmax", "log_softmax", "nn.functional.layer_norm", "mm", "bmm", "addmm",
    "index_select", "gather", "permute", "nn.functional.pad", "clamp",
    # CNN and sequence ops
    "nn.functional.conv1d", "nn.functional.conv2d", "nn.functional.batch_norm",
    "nn.functional.max_pool2d", "nn.functional.avg_pool2d",
    "nn.functional.adaptive_avg_pool1d", "nn.functional.adaptive_avg_pool2d",
    "nn.functional.adaptive_avg_pool3d", "nn.functional.adaptive_max_pool1d",
    "nn.functional.adaptive_max_pool2d", "nn.functional.adaptive_max_pool3d",
    "cumsum", "cumprod", "sort", "topk", "scatter_add", "index_put",
]
SAMPLES = 2


@pytest.fixture(autouse=True)
def _cache_dir(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("LLVMACCEL_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "cache"))


def _leaves(x):
    if isinstance(x, torch.Tensor):
        return [x]
    if isinstance(x, (list, tuple)):
        return [t for v in x for t in _leaves(v)]
    return []


@pytest.mark.parametrize("op", opinfos(GRAD_OPS), ids=lambda op: op.name)
def test_opinfo_gradients(op):
    """Every differentiable output's gradient, for each input that requires
    one, equals eager's (float64, a fixed random cotangent per output)."""
    dtype = torch.float64
    if not op.supports_autograd or dtype not in op.supported_dtypes("cpu"):
        pytest.skip("no float64 gradient")
    checked = 0
    for sample in op.sample_inputs("cpu", dtype, requires_grad=True):
        if checked == SAMPLES:
            break
        args = (sample.input, *sample.args)
        kwargs = dict(sample.kwargs)
        tensors = [a for a in args if isinstance(a, torch.Tensor)]
        if not any(t.requires_grad for t in tensors):
            continue

        def fn(*ts, _args=args, _kw=kwargs):
            it = iter(ts)
            return op(*[next(it) if isinstance(a, torch.Tensor) else a for a in _args], **_kw)

        def grads(f, _tensors=tensors):
            ins = [t.detach().clone().requires_grad_(t.requires_grad) for t in _tensors]
            outs = [o for o in _leaves(f(*ins)) if o.requires_grad]
            gen = torch.Generator().manual_seed(0)
            loss = sum((o * torch.randn(o.shape, generator=gen, dtype=o.dtype)).sum()
                       for o in outs)
            wrt = [t for t in ins if t.requires_grad]
            return torch.autograd.grad(loss, wrt, allow_unused=True) if outs else ()

        try:
            expected = grads(fn)
        except Exception:  # a sample eager rejects (error inputs)
            continue
        torch._dynamo.reset()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # backward ops llvmaccel does not lower
            got = grads(torch.compile(fn, backend="llvmaccel"))
        assert len(got) == len(expected)
        for g, e in zip(got, expected, strict=True):
            if e is None:
                assert g is None or not g.any()
            else:
                torch.testing.assert_close(g, e)
        checked += 1
    if not checked:
        pytest.skip("no sample with a gradient")


class SmallResNet(nn.Module):
    """Two basic blocks (3x3 convolutions, batch norm, a strided 1x1
    projection), max and adaptive average pooling, a linear head."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8),
                                  nn.ReLU(), nn.MaxPool2d(2))
        self.a = nn.Sequential(nn.Conv2d(8, 16, 3, stride=2, padding=1, bias=False),
                               nn.BatchNorm2d(16), nn.ReLU(),
                               nn.Conv2d(16, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16))
        self.proj = nn.Sequential(nn.Conv2d(8, 16, 1, stride=2, bias=False), nn.BatchNorm2d(16))
        self.head = nn.Linear(16, 5)

    def forward(self, x):
        x = self.stem(x)
        x = torch.relu(self.a(x) + self.proj(x))
        return self.head(nn.functional.adaptive_avg_pool2d(x, 1).flatten(1))


def _models():
    torch.manual_seed(0)
    indices, offsets = torch.randint(0, 200, (3, 20)), torch.tensor([0, 3, 7, 7, 12, 18])
    enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0,
                                                           batch_first=True), 2)
    return {
        "mlp": (MLP(), lambda: (torch.randn(6, 16),)),
        "dlrm": (DLRM(), lambda: (torch.randn(6, 8), indices, offsets.repeat(3, 1))),
        "block": (Block(), lambda: (torch.randn(2, 5, 32),)),
        "resnet": (SmallResNet(), lambda: (torch.randn(2, 3, 16, 16),)),
        "encoder": (enc, lambda: (torch.randn(2, 6, 32),)),
    }


@pytest.mark.parametrize("name", list(_models()))
def test_training_steps_match_eager(name):
    """Three SGD steps of each model in train(), compiled and eager from the
    same weights: the loss and every parameter's gradient match at each
    step (the first backward recomputes the forward, the later ones read
    what the min cut's forward saved), and the weights after the steps."""
    model, inputs = _models()[name]
    model.train()
    ref = copy.deepcopy(model)
    torch._dynamo.reset()
    fast = torch.compile(model, backend="llvmaccel")
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    opt_ref = torch.optim.SGD(ref.parameters(), lr=0.05)
    for step in range(3):
        torch.manual_seed(step)
        args = inputs()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            loss = fast(*args).square().mean()
            loss.backward()
        loss_ref = ref(*args).square().mean()
        loss_ref.backward()
        torch.testing.assert_close(loss, loss_ref, rtol=1e-4, atol=1e-5)
        for (pname, p), q in zip(model.named_parameters(), ref.parameters(), strict=True):
            assert (p.grad is None) == (q.grad is None), pname
            if q.grad is not None:
                torch.testing.assert_close(p.grad, q.grad, rtol=1e-3, atol=1e-5,
                                           msg=lambda m, n=pname, s=step: f"{n} step {s}: {m}")
        opt.step()
        opt_ref.step()
        opt.zero_grad()
        opt_ref.zero_grad()
    for p, q in zip(model.parameters(), ref.parameters(), strict=True):
        torch.testing.assert_close(p, q, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("case", ["plain", "causal", "neg_inf_mask", "float_mask", "gqa",
                                  "scale", "bf16"])
def test_flash_attention_decomposition_matches_the_kernel(case):
    """llvmaccel's decomposition of _scaled_dot_product_flash_attention_for_cpu
    returns what ATen's kernel returns: the output, and the rows' logsumexp
    (dtype, shape and strides included) that the kernel's backward reads;
    PyTorch's core entry returns the attention weights there."""
    from llvmaccel.torch.decompositions import flash_attention_for_cpu

    torch.manual_seed(0)
    dtype = torch.bfloat16 if case == "bf16" else torch.float32
    q = torch.randn(2, 4, 5, 8, dtype=dtype)
    kv_heads = 2 if case == "gqa" else 4
    k, v = (torch.randn(2, kv_heads, 7, 8, dtype=dtype) for _ in range(2))
    kw = {}
    if case == "causal":
        kw["is_causal"] = True
    elif case == "neg_inf_mask":  # a boolean mask as the dispatcher passes it
        keep = torch.rand(2, 1, 5, 7) > 0.3
        keep[..., 0] = True  # no row fully masked
        kw["attn_mask"] = torch.zeros(keep.shape).masked_fill(~keep, -math.inf)
    elif case == "float_mask":
        kw["attn_mask"] = torch.randn(5, 7).to(dtype)
    elif case == "scale":
        kw["scale"] = 0.3
    got_out, got_lse = flash_attention_for_cpu(q, k, v, **kw)
    if case == "gqa":  # the kernel takes each key head repeated for its group
        k, v = (t.repeat_interleave(2, dim=1) for t in (k, v))
    out, lse = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(q, k, v, **kw)
    tol = {"rtol": 2e-2, "atol": 2e-2} if dtype == torch.bfloat16 else {}
    torch.testing.assert_close(got_out, out, **tol)
    torch.testing.assert_close(got_lse, lse, **tol)
    assert got_lse.dtype == lse.dtype and got_lse.stride() == lse.stride()


_CONVS = {
    # Convolutions whose gradients are computed in the compiled backward
    # (llvmaccel.torch.decompositions.convolution_backward): by the input a
    # transposed convolution, by the weights im2col and a product per
    # image or over all images' positions, by the bias a sum.
    "plain": (lambda: nn.Conv2d(3, 8, 3, padding=1), (2, 3, 9, 9)),
    "strided": (lambda: nn.Conv2d(4, 6, 3, stride=2, padding=1), (2, 4, 10, 11)),
    "dilated": (lambda: nn.Conv2d(4, 6, (3, 2), stride=(1, 2), padding=(2, 0), dilation=(2, 1)),
                (2, 4, 10, 11)),
    "groups": (lambda: nn.Conv2d(6, 9, 3, padding=1, groups=3), (2, 6, 8, 8)),
    "depthwise": (lambda: nn.Conv2d(8, 8, 3, padding=1, groups=8, bias=False), (3, 8, 7, 7)),
    # depthwise weights' gradients tap by tap (decompositions._depthwise_weight_grad)
    "depthwise_strided": (lambda: nn.Conv2d(6, 6, 5, stride=2, padding=2, groups=6),
                          (2, 6, 11, 10)),
    "depthwise_dilated": (lambda: nn.Conv2d(4, 4, 3, stride=(2, 1), padding=(2, 1),
                                            dilation=(2, 1), groups=4), (2, 4, 9, 8)),
    "depthwise_conv1d": (lambda: nn.Conv1d(5, 5, 3, stride=2, padding=1, groups=5), (3, 5, 17)),
    "depthwise_multiplier": (lambda: nn.Conv2d(4, 8, 3, padding=1, groups=4), (2, 4, 7, 7)),
    "deep": (lambda: nn.Conv2d(64, 64, 3, padding=1, bias=False), (3, 64, 4, 4)),
    "pad_wider_than_kernel": (lambda: nn.Conv2d(2, 3, 2, padding=3), (1, 2, 4, 5)),
    "conv1d": (lambda: nn.Conv1d(4, 5, 3, stride=2, padding=1), (3, 4, 17)),
    "pooled": (lambda: nn.Sequential(nn.Conv2d(3, 4, 3), nn.MaxPool2d(2), nn.ReLU()),
               (2, 3, 11, 11)),
}


@pytest.mark.parametrize("case", sorted(_CONVS))
def test_convolution_gradients_compile(case):
    """The gradients of a convolution (and of max pooling) by its input,
    weights and bias are eager's, computed in the compiled backward: no op
    of it runs eagerly. ("deep" takes the product over all images'
    positions, its per-image products being larger than the columns.)"""
    make, shape = _CONVS[case]
    torch.manual_seed(1)
    model = make()
    ref = copy.deepcopy(model)
    torch._dynamo.reset()
    fast = torch.compile(model, backend="llvmaccel")
    for step in range(2):  # the first backward recomputes, the second reads the saved
        x = torch.randn(shape, generator=torch.Generator().manual_seed(step))
        xa, xb = x.clone().requires_grad_(), x.clone().requires_grad_()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            y = fast(xa)
            cot = torch.randn(y.shape, generator=torch.Generator().manual_seed(9))
            y.backward(cot)
        eager = [str(w.message) for w in caught if "eagerly" in str(w.message)]
        assert not eager, eager
        ref(xb).backward(cot)
        torch.testing.assert_close(xa.grad, xb.grad, rtol=1e-4, atol=1e-5)
        for (pname, p), q in zip(model.named_parameters(), ref.parameters(), strict=True):
            torch.testing.assert_close(p.grad, q.grad, rtol=1e-4, atol=1e-5,
                                       msg=lambda m, n=pname: f"{n}: {m}")
            p.grad, q.grad = None, None


@pytest.mark.parametrize("module", ["conv3d", "conv_transpose"])
def test_convolution_gradients_left_to_eager_are_right(module):
    """3-d and transposed convolutions keep ``convolution_backward`` whole
    (the decomposition declines them): it runs eagerly, with the right
    gradients."""
    torch.manual_seed(2)
    model = nn.Conv3d(2, 3, 3, padding=1) if module == "conv3d" else \
        nn.ConvTranspose2d(4, 3, 3, stride=2, padding=1, output_padding=1)
    x = torch.randn((1, 2, 5, 5, 5) if module == "conv3d" else (2, 4, 5, 5))
    ref = copy.deepcopy(model)
    torch._dynamo.reset()
    xa, xb = x.clone().requires_grad_(), x.clone().requires_grad_()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.compile(model, backend="llvmaccel")(xa).sum().backward()
    assert any("convolution_backward" in str(w.message) for w in caught)
    ref(xb).sum().backward()
    torch.testing.assert_close(xa.grad, xb.grad, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(model.weight.grad, ref.weight.grad, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("shape", [(2, 3, 9, 10), (3, 7, 7)], ids=["batched", "unbatched"])
@pytest.mark.parametrize("cfg", [
    dict(kernel_size=2),
    dict(kernel_size=3, stride=2, padding=1),
    dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
    dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
    dict(kernel_size=(3, 2), stride=(1, 2), padding=(1, 0), divisor_override=5),
    dict(kernel_size=3, stride=3, ceil_mode=True),
], ids=["plain", "padded", "ceil", "ceil_no_pad_count", "divisor", "ceil_past_end"])
def test_pooling_gradients_compile(shape, cfg):
    """Average pooling's gradient (decompositions.avg_pool2d_backward: each
    window's share spread by col2im) and max pooling's, batched and
    unbatched (whose forward sent its graph to eager): eager's, with no op
    run eagerly."""
    x = torch.randn(shape, generator=torch.Generator().manual_seed(6))
    for pool in (nn.functional.avg_pool2d, nn.functional.max_pool2d):
        kw = dict(cfg)
        if pool is nn.functional.max_pool2d:
            kw.pop("count_include_pad", None)
            kw.pop("divisor_override", None)
        fn = lambda t, pool=pool, kw=kw: pool(t, **kw)  # noqa: E731
        torch._dynamo.reset()
        xa, xb = x.clone().requires_grad_(), x.clone().requires_grad_()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            ya = torch.compile(fn, backend="llvmaccel")(xa)
            cot = torch.randn(ya.shape, generator=torch.Generator().manual_seed(7))
            ya.backward(cot)
        assert not [str(w.message) for w in caught if "eagerly" in str(w.message)]
        yb = fn(xb)
        yb.backward(cot)
        torch.testing.assert_close(ya, yb)
        torch.testing.assert_close(xa.grad, xb.grad, rtol=1e-5, atol=1e-6)


_ADAPTIVE = {
    "avg2d": (lambda t: nn.functional.adaptive_avg_pool2d(t, (4, 5)), (2, 3, 10, 9)),
    "avg2d_larger": (lambda t: nn.functional.adaptive_avg_pool2d(t, (7, 3)), (2, 3, 5, 9)),
    "avg2d_global": (lambda t: nn.functional.adaptive_avg_pool2d(t, 1), (2, 3, 7, 7)),
    "avg1d": (lambda t: nn.functional.adaptive_avg_pool1d(t, 4), (2, 3, 15)),
    "avg3d": (lambda t: nn.functional.adaptive_avg_pool3d(t, (2, 3, 4)), (2, 2, 5, 7, 9)),
    "avg2d_unbatched": (lambda t: nn.functional.adaptive_avg_pool2d(t, 3), (3, 7, 7)),
    "max2d": (lambda t: nn.functional.adaptive_max_pool2d(t, (4, 5)), (2, 3, 10, 9)),
    "max1d": (lambda t: nn.functional.adaptive_max_pool1d(t, 4), (2, 3, 15)),
    "max3d": (lambda t: nn.functional.adaptive_max_pool3d(t, (2, 3, 4)), (2, 2, 5, 7, 9)),
    "max2d_unbatched": (lambda t: nn.functional.adaptive_max_pool2d(t, 3), (3, 7, 7)),
    "max2d_ties": (lambda t: nn.functional.adaptive_max_pool2d(t.round(), (3, 4)),
                   (2, 3, 8, 9)),
}


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64],
                         ids=["f32", "bf16", "f64"])
@pytest.mark.parametrize("case", sorted(_ADAPTIVE))
def test_adaptive_pooling_gradients_compile(case, dtype):
    """Adaptive pooling's gradients (decompositions.adaptive_avg_pool*_backward:
    the windows' averaging matrices, transposed, one product per dim;
    adaptive_max_pool*_backward: a scatter_add at the forward's indices, so
    windows that chose one position add up there) are eager's, for uneven,
    overlapping and larger-than-input windows, 1-3 dims, batched or not, ties
    included, float64 summed in float64, with no op run eagerly."""
    fn, shape = _ADAPTIVE[case]
    x = torch.randn(shape, generator=torch.Generator().manual_seed(3)).to(dtype)
    torch._dynamo.reset()
    xa, xb = x.clone().requires_grad_(), x.clone().requires_grad_()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ya = torch.compile(fn, backend="llvmaccel")(xa)
        cot = torch.randn(ya.shape, generator=torch.Generator().manual_seed(7)).to(dtype)
        ya.backward(cot)
    assert not [str(w.message) for w in caught if "eagerly" in str(w.message)]
    yb = fn(xb)
    yb.backward(cot)
    # float64 in float64: a float32 sum would be off by ~1e-8, past float64's
    # default tolerance (1e-7 relative, 1e-7 absolute) on these sizes.
    tol = dict(rtol=2e-2, atol=2e-2) if dtype is torch.bfloat16 else \
        dict(rtol=1e-12, atol=1e-12) if dtype is torch.float64 else {}
    torch.testing.assert_close(ya, yb, **tol)
    torch.testing.assert_close(xa.grad, xb.grad, **tol)
