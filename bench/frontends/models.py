#!/usr/bin/env python3
"""Benchmark of the torch backend on the workloads PyTorch users meet first
(issue 15): inference with gradients enabled, a training step, and a CNN and
a transformer encoder in float32 and bfloat16.

Sets (``--sets``, comma-separated):

``grad``
    The DLRM, MLP and transformer block of ``run.py``, called under
    ``torch.no_grad()`` and with gradients enabled (a model in ``eval()``
    called as it is, the most common inference call): ``llvmaccel`` and
    ``inductor`` each way, and eager under ``no_grad``. The two llvmaccel
    rows must be the same speed.
``train``
    One training step (``zero_grad``, forward, MSE loss, ``backward``, an
    SGD update) of the MLP, the transformer block, a small ResNet and
    (without ``--quick``) MobileNetV3-Small on 8 x 3 x 96 x 96 images, its
    dropout left out, in eager, inductor and llvmaccel (aot_autograd's
    forward and backward compilers). Each variant trains its own copy of
    the model from the same weights; before timing, one step of each is
    checked against eager's, and the ops llvmaccel ran eagerly in its
    forward and backward graphs are listed.
``cnn``
    ResNet-18 (the torchvision architecture, written here: torchvision does
    not import beside the pinned torch) on a 1x3x224x224 image and a
    two-layer ``nn.TransformerEncoder`` of ``nn.TransformerEncoderLayer``
    (d_model 256, 4 heads, feed-forward 1024, batch_first) on 4x128 tokens,
    each in float32 and bfloat16, inference under ``no_grad``: eager,
    inductor, llvmaccel, and the number of ops falling back to eager
    (``llvmaccel.torch.explain``; the goal is zero).
``mobile``
    MobileNetV3-Small (written here too) on a 1x3x224x224 image, float32,
    as ``cnn``: a held-out model (depthwise convolutions, hardswish,
    squeeze-and-excite) none of llvmaccel's kernels was tuned on.

Every variant's output is checked against eager's before timing. Within a
round every variant runs once, in a seeded random order, each timing right
after an untimed call of the same variant (``run.interleaved``: with
several threads, a call right after another framework's measured that
framework's spinning OpenMP workers; a rotation gave each variant always
the same predecessor); per variant the median over the rounds is reported
(``--rounds``, default 7).
``--threads N`` gives PyTorch (and llvmaccel's BLAS calls) N threads.

Results: ``bench/results/frontends-models.json`` (one entry per host and
thread count; a run replaces its own host's figures for the sets it ran) and
``frontends-models.md``.

Usage::

    .venv/bin/python bench/frontends/models.py                 # all sets
    .venv/bin/python bench/frontends/models.py --sets cnn --threads 2
    .venv/bin/python bench/frontends/models.py --quick         # tiny sizes,
                                                               # bench/work/
"""

from __future__ import annotations

import argparse
import copy
import datetime as dt
import json
import os
import re
import shlex
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import run as base  # noqa: E402  (bench/frontends/run.py: models, host facts)

REPO = HERE.parent.parent
RESULTS = REPO / "bench" / "results"


# --- models -------------------------------------------------------------------


class BasicBlock(nn.Module):
    """ResNet's basic block: two 3x3 convolutions with batch norm, and a 1x1
    projection on the shortcut where the shape changes."""

    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.down = (nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                   nn.BatchNorm2d(cout))
                     if stride != 1 or cin != cout else None)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return torch.relu(y + (self.down(x) if self.down is not None else x))


class ResNet(nn.Module):
    """ResNet with basic blocks (``layers=(2, 2, 2, 2)``: ResNet-18)."""

    def __init__(self, layers: tuple[int, ...] = (2, 2, 2, 2), width: int = 64,
                 classes: int = 1000) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, width, 7, 2, 3, bias=False),
                                  nn.BatchNorm2d(width), nn.ReLU(), nn.MaxPool2d(3, 2, 1))
        blocks, cin = [], width
        for stage, count in enumerate(layers):
            cout = width << stage
            for b in range(count):
                blocks.append(BasicBlock(cin, cout, 2 if stage and not b else 1))
                cin = cout
        self.blocks = nn.Sequential(*blocks)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(cin, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(torch.flatten(self.pool(self.blocks(self.stem(x))), 1))


def _divisible(v: float, d: int = 8) -> int:
    """MobileNet's channel rounding: to a multiple of ``d``, never below 90%."""
    r = max(d, int(v + d / 2) // d * d)
    return r + d if r < 0.9 * v else r


class _SqueezeExcite(nn.Module):
    def __init__(self, c: int) -> None:
        super().__init__()
        s = _divisible(c // 4)
        self.fc1, self.fc2 = nn.Conv2d(c, s, 1), nn.Conv2d(s, c, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        w = nn.functional.adaptive_avg_pool2d(x, 1)
        return x * nn.functional.hardsigmoid(self.fc2(torch.relu(self.fc1(w))))


class _InvertedResidual(nn.Module):
    """MobileNetV3's block: 1x1 expansion, depthwise k x k (groups = channels),
    optional squeeze-and-excite, 1x1 projection; a residual where the shape
    is kept."""

    def __init__(self, cin: int, k: int, exp: int, cout: int, se: bool, hs: bool,
                 stride: int) -> None:
        super().__init__()
        act = nn.Hardswish if hs else nn.ReLU
        layers: list[nn.Module] = []
        if exp != cin:
            layers += [nn.Conv2d(cin, exp, 1, bias=False), nn.BatchNorm2d(exp), act()]
        layers += [nn.Conv2d(exp, exp, k, stride, k // 2, groups=exp, bias=False),
                   nn.BatchNorm2d(exp), act()]
        if se:
            layers.append(_SqueezeExcite(exp))
        layers += [nn.Conv2d(exp, cout, 1, bias=False), nn.BatchNorm2d(cout)]
        self.body = nn.Sequential(*layers)
        self.residual = stride == 1 and cin == cout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.body(x)
        return x + y if self.residual else y


class MobileNetV3Small(nn.Module):
    """The MobileNetV3-Small architecture (Howard et al., 2019), written here
    (torchvision does not import beside the pinned torch): depthwise
    convolutions, hardswish, hardsigmoid and squeeze-and-excite blocks (a
    model no kernel of llvmaccel was tuned on)."""

    CONFIG = ((16, 3, 16, 16, True, False, 2), (16, 3, 72, 24, False, False, 2),
              (24, 3, 88, 24, False, False, 1), (24, 5, 96, 40, True, True, 2),
              (40, 5, 240, 40, True, True, 1), (40, 5, 240, 40, True, True, 1),
              (40, 5, 120, 48, True, True, 1), (48, 5, 144, 48, True, True, 1),
              (48, 5, 288, 96, True, True, 2), (96, 5, 576, 96, True, True, 1),
              (96, 5, 576, 96, True, True, 1))

    def __init__(self, classes: int = 1000) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1, bias=False), nn.BatchNorm2d(16),
                                  nn.Hardswish())
        self.blocks = nn.Sequential(*(_InvertedResidual(*c) for c in self.CONFIG))
        self.last = nn.Sequential(nn.Conv2d(96, 576, 1, bias=False), nn.BatchNorm2d(576),
                                  nn.Hardswish())
        self.head = nn.Sequential(nn.Linear(576, 1024), nn.Hardswish(), nn.Dropout(0.2),
                                  nn.Linear(1024, classes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.last(self.blocks(self.stem(x)))
        return self.head(torch.flatten(nn.functional.adaptive_avg_pool2d(y, 1), 1))


def randomize_batch_norm(model: nn.Module, seed: int = 1) -> None:
    """Running statistics and affine parameters away from their defaults
    (so inference batch norm computes something)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.copy_(torch.randn(m.num_features, generator=g) * 0.1)
                m.running_var.copy_(torch.rand(m.num_features, generator=g) + 0.5)
                m.weight.copy_(torch.rand(m.num_features, generator=g) + 0.5)
                m.bias.copy_(torch.randn(m.num_features, generator=g) * 0.1)


def encoder(d: int, heads: int, ff: int, layers: int) -> nn.Module:
    layer = nn.TransformerEncoderLayer(d, heads, ff, dropout=0.0, batch_first=True)
    return nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)


# --- harness --------------------------------------------------------------------


def interleaved_medians(fns: dict[str, Callable[[int], object]], rounds: int) -> dict[str, list]:
    """Times every ``fns[k](call)`` once per round (:func:`run.interleaved`:
    a seeded random order per round, each timing after an untimed call of
    the same variant); returns the times in ms per variant."""
    calls = {"n": 0}

    def time_one(k: str, r: int) -> float:
        t0 = time.perf_counter()
        fns[k](calls["n"])
        ms = (time.perf_counter() - t0) * 1e3
        calls["n"] += 1
        return ms

    # The settling call takes the batch before the timed one's (the timed
    # call never finds its batch in the cache from it).
    return base.interleaved(list(fns), rounds, time_one, lambda k, r: fns[k](calls["n"] - 1))


def summary(name: str, times: dict[str, list], base_key: str, **extra: object) -> dict:
    med = {k: statistics.median(v) for k, v in times.items()}
    return {"model": name, "median_ms": med, "all_ms": times, "baseline": base_key,
            "speedup_over_baseline": {k: med[base_key] / v for k, v in med.items()}, **extra}


def close(out: torch.Tensor, ref: torch.Tensor, dtype: torch.dtype) -> None:
    tol = dict(rtol=2e-2, atol=2e-2) if dtype is torch.bfloat16 else dict(rtol=2e-3,
                                                                          atol=2e-3)
    torch.testing.assert_close(out.float(), ref.float(), **tol)


def compiled(model: nn.Module, backend: str, options: dict | None = None) -> Callable:
    if backend == "inductor":
        return torch.compile(model, dynamic=False)
    return torch.compile(model, backend="llvmaccel", dynamic=False, options=options)


def bench_grad(name: str, model: nn.Module, pool: list[tuple], rounds: int) -> dict:
    """Inference with and without ``no_grad``: llvmaccel and inductor each
    way, eager under ``no_grad`` (the baseline)."""
    import llvmaccel.torch as lt

    torch._dynamo.reset()
    model.eval()
    fast, ind = compiled(model, "llvmaccel"), compiled(model, "inductor")
    with torch.no_grad():
        ref = model(*pool[0])

    def call(fn: Callable, grad: bool) -> Callable[[int], object]:
        def go(k: int) -> object:
            with torch.set_grad_enabled(grad):
                return fn(*pool[k % len(pool)])
        return go

    fns = {"eager/no_grad": call(model, False),
           "llvmaccel/no_grad": call(fast, False), "llvmaccel/grad": call(fast, True),
           "inductor/no_grad": call(ind, False), "inductor/grad": call(ind, True)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for fn in fns.values():
            out = fn(0)
            assert isinstance(out, torch.Tensor)
            close(out.detach(), ref, torch.float32)
            fn(1)
        times = interleaved_medians(fns, rounds)
        ex_grad = lt.explain(model, *pool[0], grad=True)
        ex = lt.explain(model, *pool[0])
    return summary(name, times, "eager/no_grad", fully_compiled=ex.fully_compiled,
                   fully_compiled_with_grad=ex_grad.fully_compiled)


def ran_eagerly(caught: list) -> list[str]:
    """The ATen ops llvmaccel's warnings say it ran eagerly ("llvmaccel:
    running eagerly: <node> (<overload>): <reason>; ..."), or ``<graph>``
    for a graph left whole to eager."""
    ops: set[str] = set()
    for w in caught:
        text = str(w.message)
        if text.startswith("llvmaccel: running eagerly: "):
            ops.update(re.findall(r"\((aten\.[\w.]+)\)", text))
        elif text.startswith("llvmaccel: graph runs eagerly"):
            ops.add("<graph>")
    return sorted(ops)


def bench_train(name: str, model: nn.Module, pool: list[tuple], rounds: int,
                lr: float = 1e-3) -> dict:
    """One SGD step per call for eager, inductor and llvmaccel (baseline:
    eager), each on its own copy of ``model``; one step of each variant from
    the same weights on the same batch is checked against eager's first."""
    torch._dynamo.reset()
    model.train()
    variants: dict[str, tuple[nn.Module, Callable, torch.optim.Optimizer]] = {}
    for k in ("eager", "inductor", "llvmaccel"):
        m = copy.deepcopy(model)
        fn = m if k == "eager" else compiled(m, k)
        variants[k] = (m, fn, torch.optim.SGD(m.parameters(), lr=lr))

    def step(k: str, i: int) -> torch.Tensor:
        m, fn, opt = variants[k]
        x, target = pool[i % len(pool)]
        opt.zero_grad(set_to_none=True)
        loss = F.mse_loss(fn(x), target)
        loss.backward()
        opt.step()
        return loss.detach()

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        losses = {k: step(k, 0) for k in variants}
        eager_ops = ran_eagerly(caught)
        warnings.simplefilter("ignore")
        ref = dict(variants["eager"][0].named_parameters())
        for k in ("inductor", "llvmaccel"):
            close(losses[k], losses["eager"], torch.float32)
            for pname, p in variants[k][0].named_parameters():
                close(p.detach(), ref[pname].detach(), torch.float32)
        for k in variants:
            step(k, 1)
        times = interleaved_medians({k: (lambda i, k=k: step(k, i)) for k in variants}, rounds)
    import llvmaccel.torch as lt

    x, _ = pool[0]
    ex = lt.explain(variants["eager"][0], x, grad=True)
    return summary(name, times, "eager", forward_fully_compiled=ex.fully_compiled,
                   ran_eagerly=eager_ops)


def bench_infer(name: str, model: nn.Module, pool: list[tuple], rounds: int,
                dtype: torch.dtype) -> dict:
    """Inference under ``no_grad`` in ``dtype``: eager (baseline), inductor,
    llvmaccel, and the ops that fall back to eager."""
    import llvmaccel.torch as lt

    torch._dynamo.reset()
    model = model.eval().to(dtype)
    pool = [tuple(a.to(dtype) if a.is_floating_point() else a for a in args) for args in pool]
    fns = {"eager": model, "inductor": compiled(model, "inductor"),
           "llvmaccel": compiled(model, "llvmaccel")}
    first: dict[str, float] = {}
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = model(*pool[0])
        for k, fn in fns.items():
            t0 = time.perf_counter()
            out = fn(*pool[0])
            first[k] = time.perf_counter() - t0
            close(out, ref, dtype)
            fn(*pool[1 % len(pool)])
        times = interleaved_medians({k: (lambda i, fn=fn: fn(*pool[i % len(pool)]))
                                 for k, fn in fns.items()}, rounds)
        ex = lt.explain(model, *pool[0])
    return summary(name, times, "eager", dtype=str(dtype).removeprefix("torch."),
                   fallbacks=len(ex.fallbacks), fallback_ops=sorted({str(f) for f in
                                                                     ex.fallbacks})[:8],
                   fully_compiled=ex.fully_compiled, first_call_s=first)


# --- sets -----------------------------------------------------------------------


def run_grad(s: base.Sizes, rounds: int) -> list[dict]:
    torch.manual_seed(0)
    out = [bench_grad("mlp", base.MLP(s), [(torch.randn(s.mlp_batch, s.mlp_width),)
                                           for _ in range(base.POOL)], rounds),
           bench_grad("transformer_block", base.Block(s),
                      [(torch.randn(s.block_batch, s.block_seq, s.block_dim),)
                       for _ in range(base.POOL)], rounds)]
    model = base.DLRM(s).eval()
    pool = [base.dlrm_inputs(s, seed=k) for k in range(base.POOL)]
    out.append(bench_grad("dlrm", model, pool, rounds))
    return out


def run_train(s: base.Sizes, rounds: int, quick: bool) -> list[dict]:
    torch.manual_seed(0)

    def pool(shape: tuple, out_shape: tuple) -> list[tuple]:
        return [(torch.randn(*shape), torch.randn(*out_shape)) for _ in range(base.POOL)]

    blk = (s.block_batch, s.block_seq, s.block_dim)
    img = (4, 3, 32, 32) if not quick else (2, 3, 16, 16)
    small = ResNet((1, 1), width=16, classes=10)
    rows = [bench_train("mlp", base.MLP(s), pool((s.mlp_batch, s.mlp_width), (s.mlp_batch, 16)),
                        rounds),
            bench_train("transformer_block", base.Block(s), pool(blk, blk), rounds),
            bench_train("resnet_small", small, pool(img, (img[0], 10)), rounds)]
    if not quick:  # its kernels take about 90 s to compile (tiny sizes too)
        mobile = MobileNetV3Small(classes=10)
        mobile.head[2] = nn.Identity()  # no dropout: the variants' steps are compared
        rows.append(bench_train("mobilenet_v3_small", mobile,
                                pool((8, 3, 96, 96), (8, 10)), rounds))
    return rows


def run_cnn(rounds: int, quick: bool) -> list[dict]:
    torch.manual_seed(0)
    res = ResNet() if not quick else ResNet((1, 1), width=8, classes=10)
    randomize_batch_norm(res)
    image = (1, 3, 224, 224) if not quick else (1, 3, 32, 32)
    d, heads, ff, layers, b, t = (256, 4, 1024, 2, 4, 128) if not quick else (32, 2, 64, 1, 2, 8)
    enc = encoder(d, heads, ff, layers)
    out = []
    for dtype in (torch.float32, torch.bfloat16):
        out.append(bench_infer("resnet18" if not quick else "resnet_tiny", copy.deepcopy(res),
                               [(torch.randn(*image),) for _ in range(base.POOL)], rounds,
                               dtype))
        out.append(bench_infer("transformer_encoder", copy.deepcopy(enc),
                               [(torch.randn(b, t, d),) for _ in range(base.POOL)], rounds,
                               dtype))
    return out


def run_mobile(rounds: int, quick: bool) -> list[dict]:
    torch.manual_seed(0)
    net = MobileNetV3Small(classes=1000 if not quick else 10)
    randomize_batch_norm(net)
    image = (1, 3, 224, 224) if not quick else (1, 3, 32, 32)
    return [bench_infer("mobilenet_v3_small", net, [(torch.randn(*image),)
                                                    for _ in range(base.POOL)],
                        rounds, torch.float32)]


# --- output ---------------------------------------------------------------------


TITLES = {
    "grad": "Inference with and without `torch.no_grad()` (baseline: eager under no_grad)",
    "train": "Training step: forward, MSE loss, backward, SGD update (baseline: eager)",
    "cnn": "ResNet-18 and a TransformerEncoder, float32 and bfloat16, under no_grad "
           "(baseline: eager)",
    "mobile": "MobileNetV3-Small, float32, under no_grad (baseline: eager)",
}


def markdown(hosts: dict) -> str:
    lines = ["# llvmaccel torch backend: gradients, training, CNN and encoder models", "",
             "Written by `bench/frontends/models.py` (see its docstring); one section per "
             "host and thread count, and in it one per set of models; a run replaces the "
             "sets it measured and keeps each replaced one below it as an earlier run. "
             "Ratios are baseline median / variant median: above 1 is faster than the "
             "baseline.", ""]
    for key, sets in hosts.items():
        lines += [f"## {key}", ""]
        for set_name in TITLES:
            if set_name in sets:
                lines += [set_markdown(set_name, sets[set_name])]
    return "\n".join(lines)


def write_markdown(path: Path, hosts: dict, key: str, sets: list[str]) -> None:
    """Writes the results file ``path``: in an existing one, the ``sets``
    this run measured replace their subsections in the section of ``key``
    (each replaced one follows as an earlier run); the rest of the file,
    hand-written paragraphs included, stays as it is."""
    base.mdsections.update(path, [set_markdown(name, hosts[key][name]) for name in sets],
                           lambda: markdown(hosts), within=f"## {key}")


def set_markdown(set_name: str, entry: dict) -> str:
    """The subsection of one set of models (``### <title>``) of one host."""
    meta, rows = entry["meta"], entry["rows"]
    lines = [f"### {TITLES[set_name]}", "", f"Reproduce: `{meta['command']}`", "",
             f"{meta['date']}, {meta['cpu']}, {meta['threads']} thread(s), torch "
             f"{meta['torch']}, LLVM {meta['llvm']}; median of {meta['rounds']} "
             "interleaved rounds. Load average (1/5/15 min) at start "
             f"{meta['load_average'][:3]}, at end {meta['load_average'][3:]}.", "",
             "| model | variant | median ms | vs baseline |", "|---|---|---:|---:|"]
    notes = []
    for r in rows:
        label = r["model"] + (f" ({r['dtype']})" if "dtype" in r else "")
        for k, v in r["median_ms"].items():
            lines.append(f"| {label} | {k} | {v:.2f} | "
                         f"{r['speedup_over_baseline'][k]:.2f}x |")
        facts = [f"{f}: {r[f]}" for f in ("fully_compiled", "fully_compiled_with_grad",
                                          "forward_fully_compiled", "fallbacks")
                 if f in r]
        if r.get("fallback_ops"):
            facts.append("falling back: " + ", ".join(r["fallback_ops"]))
        if "ran_eagerly" in r:
            facts.append("ops run eagerly in the forward and backward graphs: "
                         + (", ".join(r["ran_eagerly"]) or "none"))
        notes.append(f"- {label}: " + "; ".join(facts))
    lines += [""] + notes + [""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sets", default="grad,train,cnn,mobile",
                    help="comma-separated: grad, train, cnn, mobile")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--quick", action="store_true", help="tiny sizes (a smoke run)")
    ap.add_argument("--out", type=Path, default=None,
                    help="directory of the results (default: bench/results, or "
                         "bench/work/frontends-quick with --quick)")
    opts = ap.parse_args(argv)
    sets = opts.sets.split(",")
    unknown = set(sets) - set(TITLES)
    if unknown:
        ap.error(f"unknown set(s): {', '.join(sorted(unknown))}")
    s = base.QUICK if opts.quick else base.FULL
    out_dir = opts.out or (REPO / "bench" / "work" / "frontends-quick" if opts.quick
                           else RESULTS)
    os.environ.setdefault("LLVMACCEL_CACHE_DIR", "off")
    torch.set_num_threads(opts.threads)
    load = os.getloadavg()
    results: dict[str, list[dict]] = {}
    if "grad" in sets:
        results["grad"] = run_grad(s, opts.rounds)
    if "train" in sets:
        results["train"] = run_train(s, opts.rounds, opts.quick)
    if "cnn" in sets:
        results["cnn"] = run_cnn(opts.rounds, opts.quick)
    if "mobile" in sets:
        results["mobile"] = run_mobile(opts.rounds, opts.quick)
    import llvmaccel

    meta = {"command": shlex.join([".venv/bin/python", "bench/frontends/models.py",
                                   *(argv if argv is not None else sys.argv[1:])]),
            "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            "cpu": base._cpu_name(), "host": base._host(), "torch": torch.__version__,
            "llvm": llvmaccel.llvm_version(), "threads": opts.threads, "rounds": opts.rounds,
            "load_average": [round(v, 2) for v in (*load, *os.getloadavg())]}
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "frontends-models.json"
    hosts = json.loads(path.read_text())["hosts"] if path.exists() else {}
    key = f"{meta['host']['key']} ({opts.threads} thread{'s' * (opts.threads > 1)})"
    mine = {name: {"meta": meta, "rows": rows} for name, rows in results.items()}
    hosts.setdefault(key, {}).update(mine)
    path.write_text(json.dumps({"hosts": hosts}, indent=2) + "\n")
    write_markdown(out_dir / "frontends-models.md", hosts, key, list(results))
    print(markdown({key: mine}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
