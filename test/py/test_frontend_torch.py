"""torch.compile(backend="llvmaccel"): ops against eager, models, dynamic shapes,
fallback, bad inputs."""

from __future__ import annotations

import warnings

import pytest

torch = pytest.importorskip("torch")
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import llvmaccel.torch as lt  # noqa: E402
from llvmaccel import compiler  # noqa: E402


@pytest.fixture(autouse=True)
def _cache_dir(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("LLVMACCEL_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "cache"))


def _compile(fn, **kw):
    torch._dynamo.reset()
    return torch.compile(fn, backend="llvmaccel", **kw)


def _check(fn, *args, atol=None, rtol=None, **kw):
    with torch.no_grad():
        expected = fn(*args)
        got = _compile(fn, **kw)(*args)
    torch.testing.assert_close(got, expected, atol=atol, rtol=rtol)


def _no_fallback(fn, *args, **kw):
    ex = lt.explain(fn, *args, **kw)
    assert ex.fully_compiled, str(ex)
    return ex


X = torch.randn(6, 10)
Y = torch.randn(6, 10)
POS = torch.rand(6, 10) + 0.1

ELEMENTWISE = {
    "add": lambda x, y: x + y,
    "sub_alpha": lambda x, y: torch.sub(x, y, alpha=2),
    "mul": lambda x, y: x * y,
    "div": lambda x, y: x / (y.abs() + 1),
    "neg_abs": lambda x, y: -x.abs(),
    "exp_log": lambda x, y: torch.exp(x) + torch.log(y.abs() + 1),
    "sqrt_rsqrt": lambda x, y: torch.sqrt(x.abs()) + torch.rsqrt(y.abs() + 1),
    "pow": lambda x, y: torch.pow(x.abs() + 0.5, y) + x ** 2 + x ** 3,
    "tanh_sigmoid": lambda x, y: torch.tanh(x) * torch.sigmoid(y),
    "relu_gelu": lambda x, y: F.relu(x) + F.gelu(y) + F.gelu(x, approximate="tanh"),
    "silu_erf": lambda x, y: F.silu(x) + torch.erf(y),
    "max_min": lambda x, y: torch.maximum(x, y) - torch.minimum(x, y),
    "compare_where": lambda x, y: torch.where(x > y, x, y) + (x <= 0).float()
    + (x == y).float() + (x != y).float() + (x < y).float() + (x >= 0).float(),
    "casts": lambda x, y: (x * 10).to(torch.int32).to(torch.float32)
    + (x > 0).to(torch.float64).float(),
    "broadcast": lambda x, y: x + y[0] + y[:, :1] + 1.5,
    "clamp": lambda x, y: torch.clamp(x, -0.5, 0.5) + F.hardtanh(y) + F.leaky_relu(x),
    "floor_ceil_round": lambda x, y: torch.floor(x * 3) + torch.ceil(y * 3) + torch.round(x * 7),
    "sign_recip": lambda x, y: torch.sign(x) + torch.reciprocal(y.abs() + 1),
    "int_ops": lambda x, y: ((x * 10).long() // 3 + (y * 10).long() % 4).float(),
    "remainder": lambda x, y: torch.remainder(x * 5, 1.5) + torch.fmod(y * 5, 1.5),
}


@pytest.mark.parametrize("name", sorted(ELEMENTWISE))
def test_elementwise(name):
    _check(ELEMENTWISE[name], X, Y)


REDUCTIONS = {
    "sum": lambda x: x.sum(1) + x.sum(),
    "mean": lambda x: x.mean(0, keepdim=True),
    "amax_amin": lambda x: x.amax(1) - x.amin(0).sum(),
    "argmax_argmin": lambda x: (x.argmax(1), x.argmin(0), x.argmax()),
    "max_dim": lambda x: torch.max(x, 1),
    "softmax": lambda x: torch.softmax(x, -1) + torch.softmax(x, 0),
    "log_softmax": lambda x: F.log_softmax(x, 1),
    "var_std": lambda x: (x.var(1), x.std(0), torch.var_mean(x, 1)),
    "any_all": lambda x: ((x > 1).any(1), (x > -3).all()),
}


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_reductions(name):
    _check(REDUCTIONS[name], X)


def test_norms():
    ln = nn.LayerNorm(10).eval()
    rms = nn.RMSNorm(10).eval()
    with torch.no_grad():
        ln.weight.uniform_()
        ln.bias.uniform_()
    _check(lambda x: ln(x) + rms(x) + F.layer_norm(x, (10,)), X)


def test_matmuls():
    a, b = torch.randn(5, 7), torch.randn(7, 3)
    ba, bb = torch.randn(2, 5, 7), torch.randn(2, 7, 3)
    lin = nn.Linear(7, 4)
    _check(lambda a, b, ba, bb: (a @ b, torch.bmm(ba, bb), lin(a), ba @ b,
                                 torch.addmm(b[0], a, b, beta=0.5, alpha=2.0),
                                 torch.mv(a, b[:, 0])), a, b, ba, bb)


def test_views():
    x = torch.randn(2, 3, 4)
    _check(lambda x: (x.reshape(6, 4) + 1, x.permute(2, 0, 1) * 2, x.transpose(0, 2).exp(),
                      x.expand(3, 2, 3, 4) + 0, x[:, 1:3, ::2] - 1, x[1] + 0, x.select(2, -1) + 0,
                      x.unsqueeze(1).squeeze(1) + 0, x.flatten(1) + 0,
                      torch.cat([x, x * 2], 1), torch.stack([x, x], 0) + 0,
                      F.pad(x, (1, 2, 0, 1)), F.pad(x, (-1, 1), value=3.0),
                      *torch.split(x, [1, 3], dim=2)), x)


def test_indexing():
    w = torch.randn(20, 6)
    idx = torch.randint(0, 20, (4, 3))
    i1 = torch.randint(0, 6, (5,))
    g = torch.randint(0, 6, (20, 2))
    _check(lambda w, idx, i1, g: (F.embedding(idx, w), torch.index_select(w, 1, i1),
                                  torch.gather(w, 1, g), w[idx], w[:, i1], w[i1, i1]),
           w, idx, i1, g)


def test_embedding_bag_modes():
    w = torch.randn(50, 8)
    idx = torch.randint(0, 50, (30,))
    off = torch.tensor([0, 4, 4, 11, 29])
    psw = torch.rand(30)
    _check(lambda w, i, o, p: (F.embedding_bag(i, w, o, mode="sum"),
                               F.embedding_bag(i, w, o, mode="mean"),
                               F.embedding_bag(i, w, o, mode="sum", per_sample_weights=p),
                               F.embedding_bag(i, w, torch.cat([o, o.new_tensor([30])]),
                                               include_last_offset=True)),
           w, idx, off, psw)
    _check(lambda w, i, o: F.embedding_bag(i.int(), w, o.int(), mode="sum"), w, idx, off)


# --- OpInfo samples --------------------------------------------------------

OPINFO_OPS = ["add", "sub", "mul", "div", "neg", "abs", "exp", "log", "sqrt", "rsqrt",
              "tanh", "sigmoid", "nn.functional.relu", "nn.functional.gelu",
              "nn.functional.silu", "erf", "maximum", "minimum", "eq", "lt", "where", "sum",
              "mean", "amax", "amin", "argmax", "softmax", "log_softmax",
              "nn.functional.layer_norm", "mm", "bmm", "addmm", "index_select", "gather",
              "nn.functional.embedding", "cat", "permute", "transpose", "expand",
              "nn.functional.pad", "reshape", "squeeze", "unsqueeze", "clamp"]


def opinfos(names: list[str]) -> list:
    """PyTorch's OpInfo entries named ``names`` (their plain variant), in
    that order; none without the expecttest package OpInfo needs."""
    try:
        from torch.testing._internal.common_methods_invocations import op_db
    except ImportError:
        return []

    by_name = {}
    for op in op_db:
        key = op.name if not op.variant_test_name else None
        if key in names and key not in by_name:
            by_name[key] = op
    return [by_name[n] for n in names if n in by_name]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("op", opinfos(OPINFO_OPS), ids=lambda op: op.name)
def test_opinfo(op, dtype):
    if dtype not in op.supported_dtypes("cpu"):
        pytest.skip("dtype not supported by the op")
    samples = list(op.sample_inputs("cpu", dtype, requires_grad=False))[:4]
    for sample in samples:
        args = (sample.input, *sample.args)
        kwargs = dict(sample.kwargs)
        tensors = [a for a in args if isinstance(a, torch.Tensor)]

        def fn(*ts, _args=args, _kw=kwargs):
            it = iter(ts)
            real = [next(it) if isinstance(a, torch.Tensor) else a for a in _args]
            return op(*real, **_kw)

        with torch.no_grad():
            try:
                expected = fn(*tensors)
            except Exception:
                continue
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                got = _compile(fn)(*tensors)
        torch.testing.assert_close(got, expected, equal_nan=True)


# --- models ------------------------------------------------------------------


class MLP(nn.Module):
    def __init__(self, d_in=16, hidden=32, d_out=4):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(d_in, hidden), nn.ReLU(), nn.Linear(hidden, hidden),
                                 nn.GELU(), nn.Linear(hidden, d_out))

    def forward(self, x):
        return torch.log_softmax(self.net(x), -1)


class DLRM(nn.Module):
    def __init__(self, tables=3, rows=200, dim=16, dense=8):
        super().__init__()
        self.embs = nn.ModuleList(nn.EmbeddingBag(rows, dim, mode="sum") for _ in range(tables))
        self.bottom = nn.Sequential(nn.Linear(dense, 32), nn.ReLU(), nn.Linear(32, dim), nn.ReLU())
        n = tables + 1
        self.register_buffer("li", torch.tril_indices(n, n, -1)[0], persistent=False)
        self.register_buffer("lj", torch.tril_indices(n, n, -1)[1], persistent=False)
        self.top = nn.Sequential(nn.Linear(dim + n * (n - 1) // 2, 32), nn.ReLU(),
                                 nn.Linear(32, 1))

    def forward(self, dense, indices, offsets):
        x = self.bottom(dense)
        feats = [x] + [e(indices[t], offsets[t]) for t, e in enumerate(self.embs)]
        z = torch.stack(feats, 1)
        inter = torch.bmm(z, z.transpose(1, 2))[:, self.li, self.lj]
        return torch.sigmoid(self.top(torch.cat([x, inter], 1)))


class Block(nn.Module):
    def __init__(self, d=32, heads=4):
        super().__init__()
        self.h = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
        q, k, v = (z.view(b, t, self.h, d // self.h).transpose(1, 2) for z in (q, k, v))
        att = torch.softmax(q @ k.transpose(-1, -2) / (d // self.h) ** 0.5, dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, t, d)
        x = x + self.proj(y)
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


def dlrm_inputs(batch, tables=3, rows=200, bag=4, dense=8):
    dense_x = torch.randn(batch, dense)
    indices = torch.randint(0, rows, (tables, batch * bag))
    offsets = (torch.arange(batch) * bag).repeat(tables, 1)
    return dense_x, indices, offsets


@pytest.mark.parametrize("model,inputs", [
    (MLP(), lambda: (torch.randn(8, 16),)),
    (DLRM(), lambda: dlrm_inputs(8)),
    (Block(), lambda: (torch.randn(2, 5, 32),)),
], ids=["mlp", "dlrm", "transformer_block"])
def test_models_fullgraph(model, inputs):
    model.eval()
    args = inputs()
    _check(model, *args, fullgraph=True)
    ex = _no_fallback(model, *args)
    assert ex.compiled


def test_dlrm_embedding_rows_reach_accel_prefetch():
    # Tables of 2 MiB: too large to be assumed cache-resident. The generated
    # bag loop walks the bounds of the bags as one array (offsets, then
    # len(indices)), a CSR nest: accel-prefetch looks ahead across the bags.
    rows = 1 << 15
    ex = _no_fallback(DLRM(rows=rows).eval(), *dlrm_inputs(8, rows=rows))
    row_remarks = [r for r in ex.remarks if r.args.get("Array", "").startswith("in")
                   and "Index" in r.args and r.kind == "passed"]
    assert row_remarks, str(ex)
    assert all("across the iterations of the outer loop" in r.message
               for r in row_remarks), str(ex)


def test_small_tables_are_left_to_the_cache():
    ex = _no_fallback(DLRM().eval(), *dlrm_inputs(8))
    assert "accel-prefetch" not in ex.passes_fired(), str(ex)
    assert any("stays in cache" in r.message for r in ex.remarks), str(ex)


@pytest.mark.parametrize("mode", ["dynamic", "mark_dynamic"])
def test_dynamic_shapes_one_compilation(mode):
    model = DLRM().eval()
    compiler.clear_memory_cache()
    compiler.reset_stats()
    torch._dynamo.reset()
    fast = torch.compile(model, backend="llvmaccel", dynamic=True if mode == "dynamic" else None)
    with torch.no_grad():
        for batch in (4, 7, 13):
            args = dlrm_inputs(batch)
            if mode == "mark_dynamic":
                for a, dim in zip(args, (0, 1, 1), strict=False):
                    torch._dynamo.mark_dynamic(a, dim)
            torch.testing.assert_close(fast(*args), model(*args))
    assert compiler.stats().compilations == 1


def test_options_pipeline_and_strict():
    x = torch.randn(4, 4)
    _check(lambda x: x.exp() + 1, x, options={"pipeline": "default<O1>"})
    with pytest.raises(Exception, match="fft"):
        with torch.no_grad():
            _compile(lambda x: torch.fft.rfft(x, dim=0).abs(), options={"strict": True})(x)
    with pytest.raises(Exception, match="unknown llvmaccel option"):
        with torch.no_grad():
            _compile(lambda x: x + 1, options={"bogus": 1})(x)


def test_fallback_reports_and_is_correct():
    def fn(x):
        return torch.fft.rfft(x.exp(), dim=0).abs().sin() * 2

    x = torch.randn(5, 3)
    with pytest.warns(UserWarning, match="fft"):
        _check(fn, x)
    ex = lt.explain(fn, x)
    assert not ex.fully_compiled
    assert any("fft" in f.target for f in ex.fallbacks)
    assert ex.partitions >= 1
    assert "fft" in str(ex)


def _strict_with_explanation():
    """A strict llvmaccel backend that records what it compiled."""
    ex = lt.Explanation()

    def be(gm, example_inputs):
        return lt.backend(gm, example_inputs, options={"strict": True, "_explanation": ex})

    return be, ex


def test_gradients_enabled_forward_and_backward_are_compiled():
    """A model called with gradients enabled (eval() without no_grad, or a
    training step) runs its forward compiled, and loss.backward() runs the
    compiled backward graph: outputs and every gradient match eager."""
    import copy

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 4), nn.ReLU())
    ref = copy.deepcopy(model)
    x = torch.randn(5, 8, requires_grad=True)
    xr = x.detach().clone().requires_grad_(True)
    be, ex = _strict_with_explanation()
    torch._dynamo.reset()
    fast = torch.compile(model, backend=be)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no fallback, no warning
        y = fast(x)
        assert y.requires_grad
        (y.sin() * torch.arange(4.0)).sum().backward()
    yr = ref(xr)
    (yr.sin() * torch.arange(4.0)).sum().backward()
    torch.testing.assert_close(y, yr)
    torch.testing.assert_close(x.grad, xr.grad, rtol=1e-4, atol=1e-5)
    for p, q in zip(model.parameters(), ref.parameters(), strict=True):
        torch.testing.assert_close(p.grad, q.grad, rtol=1e-4, atol=1e-5)
    assert ex.backward_graphs == 1 and ex.fully_compiled and not ex.fallbacks


def _saved_only_inputs(y, *inputs):
    ours = {t.data_ptr() for t in inputs}
    return all(t.data_ptr() in ours for t in y.grad_fn.saved_tensors)


def test_inference_with_gradients_enabled_saves_nothing_until_trained():
    """A model in eval() called without no_grad: until a backward has run
    through the graph, its forward saves only its inputs (the weights and x:
    no activation is written for a backward that never comes, so the call
    runs at its no_grad speed). The first backward recomputes the forward
    and is correct; from then on the forward saves the min cut's
    activations, and every step's gradients match eager's."""
    import copy

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 4), nn.Tanh())
    ref = copy.deepcopy(model)
    be, ex = _strict_with_explanation()
    torch._dynamo.reset()
    fast = torch.compile(model, backend=be)
    x = torch.randn(5, 8)
    y = fast(x)
    torch.testing.assert_close(y, ref(x))
    assert _saved_only_inputs(y, x, *model.parameters())
    assert ex.backward_graphs == 0
    for step in range(3):
        x = torch.randn(5, 8)
        y, yr = fast(x), ref(x)
        assert _saved_only_inputs(y, x, *model.parameters()) == (step == 0)
        (y.sin() * torch.arange(4.0)).sum().backward()
        (yr.sin() * torch.arange(4.0)).sum().backward()
        for p, q in zip(model.parameters(), ref.parameters(), strict=True):
            torch.testing.assert_close(p.grad, q.grad, rtol=1e-4, atol=1e-5)
    # The recomputing backward, then the min cut's forward and backward.
    assert ex.backward_graphs == 2 and ex.partitions == 4 and not ex.fallbacks


def test_training_with_dynamic_shapes_and_dropout_matches_eager():
    """The switch to the saving forward with sizes that are run-time
    arguments, and a model in train() whose dropout cannot be recomputed
    in the backward (its graph is split by the min cut from the start):
    losses and gradients match eager's under the same seed at every step
    (``fallback_random``: the dropout draws eager's numbers, eagerly)."""
    import copy

    class Net(nn.Module):
        def __init__(self, p: float) -> None:
            super().__init__()
            self.a, self.b, self.drop = nn.Linear(6, 12), nn.Linear(12, 3), nn.Dropout(p)

        def forward(self, x):
            return self.b(self.drop(torch.relu(self.a(x))))

    for p in (0.0, 0.4):
        torch.manual_seed(0)
        model = Net(p)
        ref = copy.deepcopy(model)
        torch._dynamo.reset()
        fast = torch.compile(model, backend="llvmaccel", dynamic=True,
                             options={"fallback_random": True})
        for step, n in enumerate((4, 7, 4, 9)):
            x = torch.randn(n, 6)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                torch.manual_seed(step)
                loss = fast(x).square().mean()
            torch.manual_seed(step)
            loss_ref = ref(x).square().mean()
            torch.testing.assert_close(loss, loss_ref)
            loss.backward()
            loss_ref.backward()
            for q, r in zip(model.parameters(), ref.parameters(), strict=True):
                torch.testing.assert_close(q.grad, r.grad, rtol=1e-4, atol=1e-5)
                q.grad = r.grad = None


def test_forward_graph_returns_saved_inputs_themselves():
    """aot_autograd's forward graph returns the weights the backward reads:
    the compiled graph hands back the caller's tensors (as the FX graph
    does), it does not copy them into new outputs on every call."""
    from llvmaccel.torch.dynamo import Explanation, _compile_fx

    def f(x, w):
        return torch.tanh(x @ w), w, x

    gm = torch.fx.experimental.proxy_tensor.make_fx(f, tracing_mode="fake")(
        torch.randn(3, 4), torch.randn(4, 5))
    run = _compile_fx(gm, {}, Explanation(), strict=True)
    x, w = torch.randn(3, 4), torch.randn(4, 5)
    y, w2, x2 = run(x, w)
    assert w2 is w and x2 is x
    torch.testing.assert_close(y, torch.tanh(x @ w))
    # Only the tanh is an output buffer of the kernel.
    assert len(run.compiled.kernel.outputs) == 1


def test_boxed_runner_checks_every_call():
    """aot_autograd calls the runner with its list of arguments (the boxed
    convention, one frame less per call): a planned call still checks each
    tensor, so a strided, negated-bit or other-dtype tensor of a signature
    seen before is converted or refused, not read as the plan's layout."""
    from llvmaccel.torch.dynamo import Explanation, _compile_fx

    def f(x, y):
        return torch.tanh(x) * y + 1.0, x - y

    gm = torch.fx.experimental.proxy_tensor.make_fx(f, tracing_mode="fake")(
        torch.randn(4, 6), torch.randn(4, 6))
    run = _compile_fx(gm, {}, Explanation(), strict=True)
    boxed = run.boxed
    assert boxed._boxed_call and boxed.compiled is run.compiled

    def check(x, y):
        args = [x, y]
        got = boxed(args)
        assert all(a is b for a, b in zip(args, (x, y), strict=True))  # args left as given
        for g, w in zip(got, f(x, y), strict=True):
            torch.testing.assert_close(g, w)

    x, y = torch.randn(4, 6), torch.randn(4, 6)
    for _ in range(3):  # the second and third calls take the plan
        check(x, y)
    assert len(run.compiled._plans) == 1
    check(torch.randn(6, 4).t(), y)  # same shape and dtype, other strides
    check(x, torch._neg_view(y))  # the negative bit: memory holds -y
    with pytest.raises(TypeError):
        boxed([x.double(), y])


def test_compiled_function_calls_take_the_plan():
    """Through torch.compile, repeated calls of one signature reach the
    kernel by its plan and give eager's results."""
    from llvmaccel.torch import dynamo

    runners = []
    real = dynamo._runner

    def spy(lowered, compiled):
        runners.append(real(lowered, compiled))
        return runners[-1]

    def f(x, y):
        return torch.tanh(x) * y + 1.0

    dynamo._runner = spy
    try:
        c = torch.compile(f, backend="llvmaccel")
        x, y = torch.randn(64), torch.randn(64)
        for _ in range(3):
            torch.testing.assert_close(c(x, y), f(x, y))
    finally:
        dynamo._runner = real
    (run,) = runners
    assert len(run.compiled._plans) == 1


def test_scalar_output_read_by_a_broadcast():
    """A scalar_tensor that is a graph output and an operand of a where
    (relu's backward in a partition that returns it): the where reads the
    scalar, not its one-element output buffer at the where's own index
    (which read past it: NaN gradients in a TransformerEncoder)."""
    from llvmaccel.torch.dynamo import Explanation, _compile_fx

    aten = torch.ops.aten

    def f(x, r):
        s = aten.scalar_tensor.default(0.5, dtype=torch.float32)
        return s, aten.where.self(aten.le.Scalar(r, 0), s, x)

    gm = torch.fx.experimental.proxy_tensor.make_fx(f, tracing_mode="fake")(
        torch.randn(4, 5), torch.randn(4, 5))
    run = _compile_fx(gm, {}, Explanation(), strict=True)
    x, r = torch.randn(4, 5), torch.randn(4, 5)
    s, w = run(x, r)
    torch.testing.assert_close(s, torch.tensor(0.5))
    torch.testing.assert_close(w, torch.where(r <= 0, 0.5, x))


@pytest.mark.parametrize("mode", ["sum", "mean"])
@pytest.mark.parametrize("padding_idx", [None, 0])
@pytest.mark.parametrize("last", [False, True])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_embedding_bag_with_gradients_enabled_is_compiled(mode, padding_idx, last, dtype):
    """With gradients enabled, aot_autograd's forward graph returns
    _embedding_bag's other outputs for the backward (offset2bag, bag sizes,
    max indices, as ATen's CPU kernel computes them): they are lowered, the
    forward runs compiled, and the weight gradient matches eager's (the
    backward's _embedding_bag_backward runs eagerly on what the compiled
    forward saved). explain(grad=True) says so. Empty bags, a trailing
    empty bag and padding entries are in the input."""
    import copy

    torch.manual_seed(0)
    emb = nn.EmbeddingBag(50, 8, mode=mode, padding_idx=padding_idx,
                          include_last_offset=last).to(dtype)
    ref = copy.deepcopy(emb)
    idx = torch.randint(0, 50, (40,))
    idx[::7] = 0
    off = torch.tensor([0, 3, 3, 17, 30, 40])  # with last: 5 bags, else a 6th empty one
    ex = lt.explain(emb, idx, off, grad=True)
    # (aot_autograd may compile the backward graph here too: its
    # _embedding_bag_backward is not lowered.)
    assert "_embedding_bag" in ex.compiled, str(ex)
    assert all("backward" in f.target for f in ex.fallbacks), str(ex)
    torch._dynamo.reset()
    fast = torch.compile(emb, backend="llvmaccel")
    scale = torch.arange(8.0, dtype=dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the backward's embedding_bag_backward runs eagerly
        y = fast(idx, off)
        (y * scale).sum().backward()
    yr = ref(idx, off)
    (yr * scale).sum().backward()
    torch.testing.assert_close(y, yr)
    torch.testing.assert_close(emb.weight.grad, ref.weight.grad)


@pytest.mark.parametrize("mode", [0, 1])
@pytest.mark.parametrize("padding_idx", [-1, 2])
@pytest.mark.parametrize("last", [False, True])
def test_embedding_bag_other_outputs_match_aten(mode, padding_idx, last):
    """offset2bag, bag_size and max_indices are ATen's values exactly,
    with empty bags (leading, middle, trailing) and padding entries."""
    w = torch.randn(10, 4)
    idx = torch.tensor([1, 2, 2, 3, 0, 5, 2, 7, 2])
    off = torch.tensor([0, 0, 2, 2, 5, 9])

    def fn(w, i, o):
        return torch.ops.aten._embedding_bag(w, i, o, False, mode, False, None, last,
                                             padding_idx)

    _check(fn, w, idx, off, options={"strict": True})


def test_eval_model_without_no_grad_in_a_worker_thread_is_compiled():
    """Grad mode is per thread: a worker thread that does not disable it
    still runs the compiled forward, not eager."""
    import threading

    model = nn.Sequential(nn.Linear(6, 6), nn.Tanh()).eval()
    x = torch.randn(3, 6)
    be, ex = _strict_with_explanation()
    torch._dynamo.reset()
    fast = torch.compile(model, backend=be)
    out = {}
    worker = threading.Thread(target=lambda: out.setdefault("y", fast(x)))
    worker.start()
    worker.join()
    torch.testing.assert_close(out["y"], model(x))
    assert ex.partitions >= 1 and not ex.fallbacks


def test_backend_importable_as_function():
    assert callable(lt.backend)
    from torch._dynamo.backends.registry import lookup_backend

    assert lookup_backend("llvmaccel") is not None


# --- bad inputs ------------------------------------------------------------------


def test_out_of_range_index_raises():
    w = torch.randn(10, 4)
    fast = _compile(lambda i: F.embedding(i, w))
    with torch.no_grad():
        torch.testing.assert_close(fast(torch.tensor([1, 2])), F.embedding(torch.tensor([1, 2]), w))
        with pytest.raises(IndexError):
            fast(torch.tensor([1, 10]))
        with pytest.raises(IndexError):
            fast(torch.tensor([-1, 2]))
    bag = _compile(lambda i, o: F.embedding_bag(i, w, o))
    with torch.no_grad(), pytest.raises(IndexError):
        bag(torch.tensor([1, 12, 3]), torch.tensor([0, 2]))
    with torch.no_grad(), pytest.raises(RuntimeError, match="offsets"):  # as eager
        bag(torch.tensor([1, 2, 3]), torch.tensor([0, 7]))


def test_empty_and_noncontiguous_inputs():
    _check(lambda x: (x.exp().sum(0), x * 2), torch.randn(0, 5))
    base = torch.randn(8, 6)
    _check(lambda x, y: x @ y + 1, base.t(), torch.randn(8, 3))
    _check(lambda x: x.softmax(-1), base[:, ::2])
    _check(lambda w, i, o: F.embedding_bag(i, w, o), torch.randn(10, 4),
           torch.empty(0, dtype=torch.long), torch.tensor([0, 0]))


def test_unsupported_dtype_falls_back():
    # (float8: eager PyTorch copies it but has little arithmetic on it.)
    x = torch.tensor([[1.0, 2.0], [3.0, 0.5]]).to(torch.float8_e4m3fn)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = torch.compile(lambda x: torch.cat([x, x.t()]), backend="llvmaccel")(x)
    assert torch.equal(got.view(torch.uint8), torch.cat([x, x.t()]).view(torch.uint8))
    ex = lt.explain(lambda x: torch.cat([x, x.t()]), x)
    assert ex.fallbacks and "float8_e4m3fn" in str(ex)
    # uint64 (which used to fall back here) compiles.
    u = torch.tensor([[1, 2], [3, 2**63 + 5]], dtype=torch.uint64)
    _check(lambda x: torch.cat([x, x.t()]), u)
    assert not lt.explain(lambda x: torch.cat([x, x.t()]), u).fallbacks


def test_explain_leaves_other_compilations_alone():
    from torch._dynamo.utils import counters

    model = MLP().eval()
    x = torch.randn(4, 16)
    compiled = torch.compile(model, backend="llvmaccel")
    with torch.no_grad():
        compiled(x)
        lt.explain(model, x)
        before = counters["stats"]["unique_graphs"]
        compiled(x)  # still compiled: no new graph
    assert counters["stats"]["unique_graphs"] == before


@pytest.mark.parametrize("mode", ["sum", "mean"])
@pytest.mark.parametrize("padding_idx", [0, 3, -1])
@pytest.mark.parametrize("last", [False, True])
def test_embedding_bag_padding_idx(mode, padding_idx, last):
    """Entries equal to padding_idx are left out of the sums, and out of the
    count of a mean; a bag of padding only is zeros (as eager)."""
    w = torch.randn(50, 8)
    g = torch.Generator().manual_seed(1)
    i = torch.randint(0, 6, (40,), generator=g)
    o = torch.tensor([0, 3, 3, 10, 25] + ([40] if last else []))
    psw = torch.randn(40) if mode == "sum" else None

    def fn(i, o):
        return F.embedding_bag(i, w, o, mode=mode, padding_idx=padding_idx,
                               per_sample_weights=psw, include_last_offset=last)

    _check(fn, i, o, options={"strict": True})


def test_mode_is_ignored_with_a_warning():
    torch._dynamo.reset()
    fast = torch.compile(lambda x: x * 2, backend="llvmaccel", mode="max-autotune")
    with torch.no_grad(), pytest.warns(UserWarning, match="ignores torch.compile mode="):
        torch.testing.assert_close(fast(torch.ones(3)), torch.full((3,), 2.0))
    with pytest.raises(TypeError, match="unexpected keyword argument"):
        lt.backend(None, [], frobnicate=True)


def test_graph_without_tensor_inputs_returns_tensors():
    """A graph made of factories alone still returns torch tensors."""
    def fn():
        return torch.arange(6, dtype=torch.float32).reshape(2, 3) * 2, torch.ones(3).sum()

    torch._dynamo.reset()
    got = torch.compile(fn, backend="llvmaccel", options={"strict": True})()
    want = fn()
    for g, w in zip(got, want, strict=True):
        assert isinstance(g, torch.Tensor)
        torch.testing.assert_close(g, w)


HELD_OUT = {
    # Modules and functions outside the curated models, each lowered through
    # a decomposition PyTorch offers (elu, linalg_vector_norm, slice_scatter,
    # bucketize) or llvmaccel's own.
    "elu_selu_celu": lambda x: F.elu(x) + F.selu(x) + F.celu(x, 0.5) + F.elu(x, 2.0),
    "vector_norms": lambda x: (torch.linalg.vector_norm(x, 2, dim=1) + x.norm()
                               + torch.linalg.vector_norm(x, float("inf"), dim=0).sum()
                               + torch.linalg.vector_norm(x, 1, dim=(0, 1), keepdim=True)
                               + F.normalize(x, dim=1).sum()),
    "circular_pad": lambda x: F.pad(x[None], (1, 2), mode="circular"),
    "bucketize": lambda x: torch.bucketize(x, torch.tensor([-1.0, 0.0, 0.5, 1.0]),
                                           right=True),
    "diagonal_trace": lambda x: (torch.diagonal(x, 2) * 2, torch.diagonal(x.T, -1),
                                 torch.trace(x[:, :6]), torch.diag(x[0]),
                                 torch.diagonal(x, 20).sum()),
    "cummax_cummin": lambda x: (*torch.cummax(x, 1), *torch.cummin(x.round(), 0),
                                *torch.cummax((x * 2).long(), 1)),
    "erfc_repeat_tile": lambda x: (torch.erfc(x), x.repeat(2, 1, 3), torch.tile(x, (2,))),
    "searchsorted": lambda x: (torch.searchsorted(torch.sort(x[0]).values, x),
                               torch.searchsorted(torch.sort(x[1]).values, x, side="right",
                                                  out_int32=True)),
    "hypot": lambda x: (torch.hypot(x, x.flip(0)), torch.hypot(x * 1e30, x.flip(1) * 1e30)),
}


@pytest.mark.parametrize("args", [
    ((2, 3, 7, 8), dict(kernel_size=3, padding=1)),
    ((1, 2, 9, 9), dict(kernel_size=(3, 2), stride=(2, 3), padding=(0, 2), dilation=(2, 1))),
    ((3, 6, 5), dict(kernel_size=2, stride=1)),  # unbatched
    ((1, 2, 4, 4), dict(kernel_size=3, padding=3)),  # taps wholly in the padding
])
def test_unfold_and_fold_are_graph_ops(args):
    """``F.unfold`` (aten.im2col) and ``F.fold`` (aten.col2im) lower to the
    graph's im2col and col2im, bit for bit eager's, with no fallback (they
    were gathers and scatters through PyTorch's decompositions)."""
    shape, kw = args
    x = torch.randn(shape, generator=torch.Generator().manual_seed(3))
    out = shape[-2:]

    def fn(x):
        cols = F.unfold(x, **kw)
        return cols, F.fold(cols * 2, out, **kw)

    torch._dynamo.reset()
    got = torch.compile(fn, backend="llvmaccel", options={"strict": True})(x)
    want = fn(x)
    assert torch.equal(got[0], want[0])
    torch.testing.assert_close(got[1], want[1], rtol=1e-6, atol=1e-6)
    _no_fallback(fn, x)


@pytest.mark.parametrize("decimals", [1, 3, -1, -2])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16])
def test_round_with_decimals(decimals, dtype):
    """``torch.round(x, decimals=d)`` compiles (it used to send the whole
    graph back to eager) and is eager's bit for bit: ties to even of x
    scaled by 10**d, in float for the half types."""
    x = torch.randn(16, 33, generator=torch.Generator().manual_seed(5)) * 300
    x[0, :6] = torch.tensor([0.25, 0.35, 2.5, -0.45, 150.0, -250.0])
    x = x.to(dtype) / (100 if dtype in (torch.float16, torch.bfloat16) else 1)

    def fn(x):
        return torch.round(x, decimals=decimals) + 0.0

    torch._dynamo.reset()
    with torch.no_grad():
        got = torch.compile(fn, backend="llvmaccel", options={"strict": True})(x)
    assert torch.equal(got, fn(x))
    _no_fallback(fn, x)


@pytest.mark.parametrize("name", sorted(HELD_OUT))
def test_held_out_ops_compile_whole(name):
    fn = HELD_OUT[name]
    _check(fn, X, options={"strict": True})
    _no_fallback(fn, X)


@pytest.mark.parametrize("case", ["median_dim", "median_all", "median_int", "kthvalue",
                                  "kthvalue_keepdim_last"])
def test_median_and_kthvalue_compile(case):
    """Median (lower; NaN and the first NaN's index where a slice has one)
    and kthvalue (NaN the largest) through a stable sort: eager's values,
    and indices that point at them (which of equal values eager picks is
    not specified)."""
    x = torch.randn(5, 7, generator=torch.Generator().manual_seed(4))
    x[1, 3] = float("nan")
    x[2, 2] = x[2, 5]
    dim, fn = {
        "median_dim": (1, lambda x: torch.median(x, 1)),
        "median_all": (None, lambda x: torch.median(x[2:])),
        "median_int": (0, lambda x: torch.median((x[2:] * 4).long(), 0)),
        "kthvalue": (0, lambda x: torch.kthvalue(x, 3, 0)),
        "kthvalue_keepdim_last": (1, lambda x: torch.kthvalue(x, 7, 1, keepdim=True)),
    }[case]
    torch._dynamo.reset()
    with torch.no_grad():
        got = torch.compile(fn, backend="llvmaccel", options={"strict": True})(x)
        want = fn(x)
        assert lt.explain(fn, x).fully_compiled
    if dim is None:
        torch.testing.assert_close(got, want, equal_nan=True)
        return
    torch.testing.assert_close(got[0], want[0], equal_nan=True)
    src = x[2:] * 4 if case == "median_int" else x
    src = src.long() if case == "median_int" else src
    idx = got[1] if got[1].dim() == src.dim() else got[1].unsqueeze(dim)
    picked = src.gather(dim, idx)
    torch.testing.assert_close(picked.squeeze(dim) if got[1].dim() != src.dim() else picked,
                               got[0], equal_nan=True)


def test_cummax_cummin_ties_and_nan():
    """The index moves on to a tie and to a NaN, which the values carry from
    there, as in PyTorch's kernel."""
    x = torch.tensor([[1., 3., 3., 2., 5., float("nan"), 4., float("nan"), 9.],
                      [2., 2., 1., 0., 2., 7., 7., 1., 0.]])
    for fn in (lambda x: torch.cummax(x, 1), lambda x: torch.cummin(x, 1)):
        torch._dynamo.reset()
        got = torch.compile(fn, backend="llvmaccel", options={"strict": True})(x)
        want = fn(x)
        torch.testing.assert_close(got[0], want[0], equal_nan=True)
        assert torch.equal(got[1], want[1])


def test_random_ops_draw_anew_each_call():
    """torch.rand in a graph was folded at compile time: every call returned
    the same numbers. Random ops now draw from llvmaccel's counter-based
    generator with a seed from PyTorch's generator per call: new numbers each
    call, the same ones after the same torch.manual_seed, independent
    streams for two ops of one graph."""
    fn = torch.compile(lambda x: (x + torch.rand(4), x + torch.rand_like(x)),
                       backend="llvmaccel", options={"strict": True})
    x = torch.zeros(4)
    a, b = fn(x), fn(x)
    assert not torch.equal(a[0], b[0]) and not torch.equal(a[1], b[1])
    assert not torch.equal(a[0], a[1])
    torch.manual_seed(11)
    c = fn(x)
    torch.manual_seed(11)
    d = fn(x)
    assert torch.equal(c[0], d[0]) and torch.equal(c[1], d[1])


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16])
def test_uniform_and_normal_samples(dtype):
    """rand_like: in [0, 1) (never 1 once rounded to the dtype), mean 1/2,
    variance 1/12; randn_like: mean 0, variance 1 (1M samples, a fixed
    seed: the figures are deterministic)."""
    torch.manual_seed(3)
    x = torch.zeros(1 << 20, dtype=dtype)
    u, z = torch.compile(lambda x: (torch.rand_like(x), torch.randn_like(x)),
                         backend="llvmaccel", options={"strict": True})(x)
    assert u.dtype == dtype and z.dtype == dtype
    u, z = u.double(), z.double()
    assert 0.0 <= u.min() and u.max() < 1.0
    assert abs(u.mean() - 0.5) < 0.003 and abs(u.var() - 1 / 12) < 0.003
    assert abs(z.mean()) < 0.01 and abs(z.var() - 1.0) < 0.02
    assert u.unique().numel() > 200  # bfloat16 holds 256 values in [0, 1) of 8 bits


def test_dropout_compiles_and_its_gradient_uses_the_same_mask():
    """Dropout in train() (aten.native_dropout, decomposed to rand_like)
    compiles: about 1 - p of the elements kept, scaled by 1 / (1 - p), and
    the backward reads the forward's mask (the random op is never
    recomputed)."""
    p = 0.3
    fn = torch.compile(lambda x: F.dropout(x * 2.0 + 1.0, p, training=True),
                       backend="llvmaccel", options={"strict": True})
    torch.manual_seed(0)
    for _ in range(3):
        x = (torch.rand(20000) + 0.5).requires_grad_()
        y = fn(x)
        kept = y != 0
        assert abs(kept.float().mean().item() - (1 - p)) < 0.02
        torch.testing.assert_close(y[kept], ((x * 2 + 1) / (1 - p))[kept].detach())
        y.backward(torch.ones_like(y))
        torch.testing.assert_close(x.grad, kept.float() * 2.0 / (1 - p))
    assert lt.explain(torch.nn.Dropout(p).train(), torch.ones(8), grad=True).fully_compiled
    eager = lt.explain(torch.nn.Dropout(p).train(), torch.ones(8), grad=True,
                       options={"fallback_random": True})
    assert any("fallback_random" in f.reason for f in eager.fallbacks), eager
    torch._dynamo.reset()
    with pytest.raises(Exception, match="fallback_random"):
        torch.compile(lambda x: x + 1, backend="llvmaccel",
                      options={"fallback_random": "yes"})(torch.ones(2))


def test_channel_dropout_and_stochastic_depth_compile():
    """``bernoulli(x, p)`` (Dropout2d's channel masks, stochastic depth's
    ``empty(n, 1, 1).bernoulli_(keep)``) compiles from ``rand_like``: whole
    channels or samples kept, about the expected share of them."""
    torch.manual_seed(4)
    drop = torch.nn.Dropout2d(0.25).train()
    x = torch.ones(8, 64, 3, 3)
    y = torch.compile(drop, backend="llvmaccel", options={"strict": True})(x)
    planes = y.reshape(8 * 64, 9)
    kept = planes[:, 0] != 0
    assert torch.equal(planes != 0, kept[:, None].expand(-1, 9))
    assert abs(kept.float().mean().item() - 0.75) < 0.06
    torch.testing.assert_close(planes[kept], torch.full_like(planes[kept], 1 / 0.75))

    def depth(x):
        keep = torch.empty(x.shape[0], 1, 1).bernoulli_(0.8)
        return x * keep / 0.8

    z = torch.compile(depth, backend="llvmaccel", options={"strict": True})(torch.ones(4000, 2, 2))
    alive = z[:, 0, 0] != 0
    assert torch.equal(z != 0, alive[:, None, None].expand(-1, 2, 2))
    assert abs(alive.float().mean().item() - 0.8) < 0.03
