"""Decompositions llvmaccel adds to aot_autograd's table, for ops PyTorch keeps
whole and offers no decomposition of.

``aten._transformer_encoder_layer_fwd`` is the fused "fast path" that
:class:`torch.nn.TransformerEncoderLayer` (and
:class:`~torch.nn.TransformerEncoder`) call in inference when their
conditions hold (batch_first, eval mode or no grad, ...). Its decomposition
here restates what the C++ kernel computes in the ops llvmaccel lowers
(linear, scaled dot product attention, layer norm, relu or gelu): the same
math as the module's own non-fast path, which eager PyTorch runs in training.

``aten.native_group_norm`` (:class:`torch.nn.GroupNorm`, diffusion UNets)
is the mean and variance of each sample's channel groups, in reductions
llvmaccel lowers (PyTorch's own decomposition reshapes through
``as_strided``).

``aten._scaled_dot_product_flash_attention_for_cpu`` (what
``F.scaled_dot_product_attention`` dispatches to on CPU) is decomposed as
PyTorch's core table does, into the math form llvmaccel fuses, but with the
second result PyTorch's entry gets wrong: the kernel returns the rows'
logsumexp of the scaled scores, which its backward
(``_scaled_dot_product_flash_attention_for_cpu_backward``) reads, and the
core entry returns the attention weights in its place (a (B, H, L, S)
tensor read as (B, H, L): wrong gradients for every attention weight in
training). In inference the logsumexp is dead code and costs nothing.

The gradients of average pooling (``avg_pool2d_backward``: each window's
share spread by ``col2im``) and of adaptive pooling
(``_adaptive_avg_pool{2,3}d_backward``: the windows' averaging matrices,
transposed, one product per dim; ``adaptive_max_pool{2,3}d_backward``: a
``scatter_add`` at the forward's indices) have no entry in PyTorch's table.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F  # noqa: N812 - PyTorch's own convention

__all__ = ["llvmaccel_decompositions", "random_decompositions"]


def _attention_mask(mask: torch.Tensor | None, mask_type: int | None, batch: int,
                    heads: int, length: int) -> torch.Tensor | None:
    """The fast path's mask (``MultiheadAttention.merge_masks``: type 0 an
    (L, L) attention mask, 1 a (B, L) key padding mask, 2 both merged into
    (B, H, L, L)) as an additive float mask broadcasting to (B, H, L, L)."""
    if mask is None:
        return None
    if mask_type == 1:
        mask = mask.view(batch, 1, 1, length)
    elif mask_type == 0 or mask.dim() == 2:
        mask = mask.view(1, 1, length, length)
    # The fused kernel reads every mask as boolean (a float mask's nonzero
    # entries, -inf or not, mask their position out), unlike the module's
    # other path, which adds a float mask to the scores; eager PyTorch is
    # what the compiled layer must agree with.
    masked = mask if mask.dtype == torch.bool else mask != 0
    return torch.zeros(masked.shape, dtype=torch.float32).masked_fill(masked, -math.inf)


def transformer_encoder_layer_fwd(
    src: torch.Tensor, embed_dim: int, num_heads: int, qkv_weight: torch.Tensor,
    qkv_bias: torch.Tensor, proj_weight: torch.Tensor, proj_bias: torch.Tensor,
    use_gelu: bool, norm_first: bool, eps: float, norm_weight_1: torch.Tensor,
    norm_bias_1: torch.Tensor, norm_weight_2: torch.Tensor, norm_bias_2: torch.Tensor,
    ffn_weight_1: torch.Tensor, ffn_bias_1: torch.Tensor, ffn_weight_2: torch.Tensor,
    ffn_bias_2: torch.Tensor, mask: torch.Tensor | None = None,
    mask_type: int | None = None,
) -> torch.Tensor:
    """``aten._transformer_encoder_layer_fwd`` (batch-first input, dropout off)."""
    batch, length, _ = src.shape
    head_dim = embed_dim // num_heads
    attn_mask = _attention_mask(mask, mask_type, batch, num_heads, length)
    if attn_mask is not None:
        attn_mask = attn_mask.to(src.dtype)

    def self_attention(x: torch.Tensor) -> torch.Tensor:
        qkv = F.linear(x, qkv_weight, qkv_bias)
        q, k, v = (t.reshape(batch, length, num_heads, head_dim).transpose(1, 2)
                   for t in qkv.chunk(3, dim=-1))
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask)
        out = out.transpose(1, 2).reshape(batch, length, embed_dim)
        return F.linear(out, proj_weight, proj_bias)

    def feed_forward(x: torch.Tensor) -> torch.Tensor:
        h = F.linear(x, ffn_weight_1, ffn_bias_1)
        h = F.gelu(h) if use_gelu else F.relu(h)
        return F.linear(h, ffn_weight_2, ffn_bias_2)

    def norm1(x: torch.Tensor) -> torch.Tensor:
        return F.layer_norm(x, (embed_dim,), norm_weight_1, norm_bias_1, eps)

    def norm2(x: torch.Tensor) -> torch.Tensor:
        return F.layer_norm(x, (embed_dim,), norm_weight_2, norm_bias_2, eps)

    if norm_first:
        x = src + self_attention(norm1(src))
        return x + feed_forward(norm2(x))
    x = norm1(src + self_attention(src))
    return norm2(x + feed_forward(x))


def flash_attention_for_cpu(
    query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, dropout_p: float = 0.0,
    is_causal: bool = False, *, attn_mask: torch.Tensor | None = None,
    scale: float | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``aten._scaled_dot_product_flash_attention_for_cpu``: the output as
    PyTorch's decomposition computes it, and the logsumexp over the keys of
    the scaled (and masked) scores, in the kernel's accumulation type and
    layout ((B, H, L) with the strides of a (B, L, H) buffer)."""
    from torch._decomp.decompositions import scaled_dot_product_flash_attention_for_cpu

    out, _ = scaled_dot_product_flash_attention_for_cpu(
        query, key, value, dropout_p, is_causal, attn_mask=attn_mask, scale=scale)
    acc = torch.float32 if query.dtype in (torch.bfloat16, torch.float16) else query.dtype
    q, k = query.to(acc), key.to(acc)
    if k.size(1) != q.size(1):  # grouped-query attention: each key head serves a group
        k = k.repeat_interleave(q.size(1) // k.size(1), dim=1)
    factor = scale if scale is not None else 1.0 / math.sqrt(query.size(-1))
    scores = (q @ k.transpose(-2, -1)) * factor
    if is_causal:
        keep = torch.ones(scores.shape[-2:], dtype=torch.bool).tril()
        scores = scores.masked_fill(~keep, -math.inf)
    if attn_mask is not None:
        scores = (scores.masked_fill(~attn_mask, -math.inf) if attn_mask.dtype == torch.bool
                  else scores + attn_mask.to(acc))
    lse = torch.logsumexp(scores, dim=-1)
    return out, lse.transpose(1, 2).contiguous().transpose(1, 2)


def native_group_norm(
    input: torch.Tensor, weight: torch.Tensor | None, bias: torch.Tensor | None, n: int,
    c: int, hxw: int, group: int, eps: float,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``aten.native_group_norm``: ``(y, mean, rstd)``, each sample's groups
    of ``c / group`` channels normalized over their channels and positions
    (the statistics in float32 for half types, as PyTorch's kernel keeps
    them), then the per-channel affine. PyTorch's own decomposition goes
    through ``as_strided``, which llvmaccel does not lower."""
    acc = torch.float32 if input.dtype in (torch.bfloat16, torch.float16) else input.dtype
    x = input.to(acc).reshape(n, group, -1)
    mean = x.mean(-1, keepdim=True)
    rstd = torch.rsqrt((x - mean).square().mean(-1, keepdim=True) + eps)
    y = ((x - mean) * rstd).reshape(input.shape)
    per_channel = (1, c) + (1,) * (input.dim() - 2)
    if weight is not None:
        y = y * weight.to(acc).reshape(per_channel)
    if bias is not None:
        y = y + bias.to(acc).reshape(per_channel)
    return (y.to(input.dtype), mean.reshape(n, group).to(input.dtype),
            rstd.reshape(n, group).to(input.dtype))


def searchsorted(sorted_sequence: torch.Tensor, values: torch.Tensor, *,
                 out_int32: bool = False, right: bool = False, side: str | None = None,
                 sorter: torch.Tensor | None = None) -> torch.Tensor:
    """``aten.searchsorted.Tensor`` over one sorted 1-D sequence: the same
    rule as ``bucketize`` with the sequence as the boundaries (which PyTorch
    decomposes into comparisons and a sum); batched sequences and a
    ``sorter`` are left to the op."""
    if sorted_sequence.dim() != 1 or sorter is not None:
        return NotImplemented
    return torch.bucketize(values, sorted_sequence, out_int32=out_int32,
                           right=bool(right or side == "right"))


def kthvalue(x: torch.Tensor, k: int, dim: int = -1, keepdim: bool = False
             ) -> tuple[torch.Tensor, torch.Tensor]:
    """``aten.kthvalue``: the ``k``-th smallest along ``dim`` (NaN counts as
    the largest, as in PyTorch's kernel) and where it is, through a stable
    sort. Of equal values, the index may differ from eager's (which one
    PyTorch returns is not specified); the value is the same."""
    if x.dim() == 0:
        return x.clone(), torch.zeros((), dtype=torch.int64)
    values, order = torch.sort(x, dim=dim, stable=True)
    v, i = values.narrow(dim, k - 1, 1), order.narrow(dim, k - 1, 1)
    return (v, i) if keepdim else (v.squeeze(dim), i.squeeze(dim))


def median_dim(x: torch.Tensor, dim: int = -1, keepdim: bool = False
               ) -> tuple[torch.Tensor, torch.Tensor]:
    """``aten.median.dim``: the lower median along ``dim``, or NaN with the
    first NaN's index where the slice has one (PyTorch's rule)."""
    if x.dim() == 0:
        return x.clone(), torch.zeros((), dtype=torch.int64)
    v, i = kthvalue(x, (x.size(dim) - 1) // 2 + 1, dim, True)
    if x.is_floating_point():
        nan = torch.isnan(x)
        has = nan.any(dim, keepdim=True)
        v = torch.where(has, torch.full_like(v, math.nan), v)
        i = torch.where(has, nan.to(torch.int64).argmax(dim, keepdim=True), i)
    return (v, i) if keepdim else (v.squeeze(dim), i.squeeze(dim))


def median(x: torch.Tensor) -> torch.Tensor:
    """``aten.median.default``: the lower median of all elements."""
    return median_dim(x.reshape(-1), 0)[0]


def convolution_backward(
    grad_output: torch.Tensor, input: torch.Tensor, weight: torch.Tensor,  # noqa: A002
    bias_sizes: list[int] | None, stride: list[int], padding: list[int], dilation: list[int],
    transposed: bool, output_padding: list[int], groups: int, output_mask: list[bool],
) -> tuple[torch.Tensor | None, torch.Tensor | None, torch.Tensor | None] | object:
    """The gradients of a 1-d or 2-d convolution in the GEMM forms PyTorch's
    CPU kernels use, in ops llvmaccel lowers: by the input, the transposed
    convolution of ``grad_output`` with the same weights (GEMM, then
    ``col2im``); by the weights, per image and group ``grad_output_g @
    im2col(input_g)^T`` summed over the images (a depthwise convolution's
    tap by tap, :func:`_depthwise_weight_grad`); by the bias, the sum over
    images and positions. Transposed and 3-d convolutions are left whole
    (``NotImplemented``: eager PyTorch runs them)."""
    if transposed or input.dim() not in (3, 4):
        return NotImplemented
    if input.dim() == 3:  # 1-d: a 2-d convolution over rows of one
        grads = convolution_backward(
            grad_output.unsqueeze(2), input.unsqueeze(2), weight.unsqueeze(2), bias_sizes,
            [1, *stride], [0, *padding], [1, *dilation], False, [0, *output_padding], groups,
            output_mask)
        return tuple(None if g is None else g.squeeze(2) if k < 2 else g  # type: ignore[union-attr]
                     for k, g in enumerate(grads))  # type: ignore[arg-type]
    n, c = input.shape[:2]
    o, kernel = weight.shape[0], list(weight.shape[2:])
    grad_input = grad_weight = grad_bias = None
    if output_mask[0]:
        # The output size of the transposed convolution is the input's: the
        # rows the forward's stride left over are its output padding.
        extra = [i - ((g - 1) * s - 2 * p + d * (k - 1) + 1) for i, g, s, p, d, k in
                 zip(input.shape[2:], grad_output.shape[2:], stride, padding, dilation, kernel,
                     strict=True)]
        grad_input = torch.ops.aten.convolution(grad_output, weight, None, stride, padding,
                                                dilation, True, extra, groups)
    if output_mask[1] and o == groups == c:
        grad_weight = _depthwise_weight_grad(input, grad_output, kernel, stride, padding,
                                             dilation)
    elif output_mask[1]:
        cols = torch.ops.aten.im2col(input, kernel, dilation, padding, stride)
        positions = cols.shape[-1]
        taps = c // groups * math.prod(kernel)
        cols = cols.reshape(n, groups, taps, positions)
        go = grad_output.reshape(n, groups, o // groups, positions)
        # Per image, products of (O/G x taps) summed over the images (their
        # traffic, written, read and summed: 3 * n * o * taps); or, where
        # those products are larger than the columns (deep layers:
        # 512 x 4608 per image from 16 positions), one product over all
        # images' positions, the images moved next to the positions first.
        if o == groups:  # one output channel a group (depthwise): a
            # product of a row and a matrix, a broadcast multiply and sum
            grad_weight = (cols * go).sum((0, 3))
        elif n == 1 or 3 * n * o * taps <= 2 * n * positions * (groups * taps + o):
            grad_weight = (go @ cols.transpose(-1, -2)).sum(0)
        else:
            go = go.permute(1, 2, 0, 3).reshape(groups, o // groups, n * positions)
            cols = cols.permute(1, 2, 0, 3).reshape(groups, taps, n * positions)
            grad_weight = go @ cols.transpose(-1, -2)
        grad_weight = grad_weight.reshape(weight.shape)
    if output_mask[2]:
        grad_bias = grad_output.sum((0, 2, 3))
    return grad_input, grad_weight, grad_bias


def _depthwise_weight_grad(x: torch.Tensor, grad_output: torch.Tensor, kernel: list[int],
                           stride: list[int], padding: list[int], dilation: list[int]
                           ) -> torch.Tensor:
    """A depthwise convolution's gradient by its weights, tap by tap: tap
    ``(a, b)``'s is, per channel, the sum over the images and output
    positions of ``grad_output`` times the input's window of that tap (a
    strided slice of the padded input), channels outer (a reduction over
    trailing axes). Nothing the size of the input times the taps is
    written, as the ``im2col`` copy was. MobileNetV3-Small's training step
    (8 x 3 x 96 x 96, one thread, Zen 5): backward 33.8 -> 22.4 ms (eager
    23.1, inductor 22.1), its compilation 101 -> 120 s; taking the taps'
    positions from index arrays in one loop nest compiled as fast as before
    but ran the backward in 28 ms (gathers)."""
    c = x.shape[1]
    oh, ow = grad_output.shape[2:]
    padded = F.pad(x, (padding[1], padding[1], padding[0], padding[0]))
    go = grad_output.transpose(0, 1)
    taps = []
    for a in range(kernel[0]):
        for b in range(kernel[1]):
            r0, c0 = a * dilation[0], b * dilation[1]
            window = padded[:, :, r0:r0 + stride[0] * (oh - 1) + 1:stride[0],
                            c0:c0 + stride[1] * (ow - 1) + 1:stride[1]]
            taps.append((window.transpose(0, 1) * go).sum((1, 2, 3)))
    return torch.stack(taps, 1).reshape(c, 1, kernel[0], kernel[1])


def _window_lengths(windows: int, k: int, s: int, p: int, size: int,
                    count_pad: bool) -> torch.Tensor:
    """The size of each average-pooling window along one dim (ATen's
    divisor: clipped to the padded input, and to the input itself when the
    padding does not count)."""
    start = torch.arange(windows) * s - p
    end = torch.clamp(start + k, max=size + p)
    if not count_pad:
        start, end = torch.clamp(start, min=0), torch.clamp(end, max=size)
    return end - start


def avg_pool2d_backward(grad_output: torch.Tensor, x: torch.Tensor, kernel_size: list[int],
                        stride: list[int], padding: list[int], ceil_mode: bool,
                        count_include_pad: bool, divisor_override: int | None
                        ) -> torch.Tensor:
    """Average pooling's gradient: each window's gradient divided by its
    divisor and spread over its taps (``col2im``, which drops the taps on
    padding), over the input's positions (and those ``ceil_mode``'s last
    window reaches past it, then cut off)."""
    def pair(v: list[int]) -> list[int]:
        return list(v) * 2 if len(v) == 1 else list(v)

    k, p = pair(kernel_size), pair(padding)
    s = pair(stride) if stride else list(k)
    size = list(x.shape[-2:])
    windows = list(grad_output.shape[-2:])
    if divisor_override:
        g = grad_output / divisor_override
    else:
        rows, cols = (_window_lengths(windows[d], k[d], s[d], p[d], size[d], count_include_pad)
                      for d in range(2))
        g = grad_output / (rows[:, None] * cols[None, :]).to(grad_output.dtype)
    lead = g.shape[:-2]
    g = g.reshape(-1, 1, *windows).expand(-1, k[0] * k[1], *windows)
    # The output col2im sums into: the input's size, or (ceil_mode's last
    # window past the input) as much more as makes its grid of windows
    # grad_output's; cut back to the input below.
    grid = list(size)
    for d in range(2):
        while (grid[d] + 2 * p[d] - k[d]) // s[d] + 1 < windows[d]:
            grid[d] += 1
    spread = torch.ops.aten.col2im(g.reshape(g.shape[0], k[0] * k[1], -1), grid, k, [1, 1], p, s)
    spread = F.pad(spread, (0, size[1] - grid[1], 0, size[0] - grid[0]))
    return spread.reshape(*lead, *size)


def _accumulator(dtype: torch.dtype) -> torch.dtype:
    """The dtype a gradient of ``dtype`` is summed in: float32 for the half
    types, else its own."""
    return torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype


def _adaptive_average_matrix(size: int, out: int, dtype: torch.dtype) -> torch.Tensor:
    """``[out, size]``: row ``o`` averages adaptive window ``o`` of a dim of
    ``size`` pooled to ``out`` (``[floor(o * size / out), ceil((o + 1) *
    size / out))``, the windows of ``F.adaptive_avg_pool*d``)."""
    o = torch.arange(out)
    start = torch.div(o * size, out, rounding_mode="floor")
    end = torch.div((o + 1) * size + out - 1, out, rounding_mode="floor")
    i = torch.arange(size)
    inside = (i[None, :] >= start[:, None]) & (i[None, :] < end[:, None])
    return inside.to(dtype) / (end - start)[:, None].to(dtype)


def _adaptive_avg_pool_backward(spatial: int, grad_output: torch.Tensor,
                                x: torch.Tensor) -> torch.Tensor:
    """Adaptive average pooling's gradient over the last ``spatial`` dims.
    The pooling is separable, ``out = A_1 x A_2^T`` per plane with ``A_d``
    the averaging matrix of dim ``d``'s windows
    (:func:`_adaptive_average_matrix`), so the gradient is ``A_1^T g A_2``:
    one small product per dim, for windows of every size (overlapping,
    uneven, an output larger than the input). Half types are accumulated in
    float32."""
    acc = _accumulator(x.dtype)
    g = grad_output.to(acc)
    for d in range(1, spatial + 1):
        a = _adaptive_average_matrix(x.shape[-d], grad_output.shape[-d], acc)
        g = torch.matmul(g.movedim(-d, -1), a).movedim(-1, -d)
    return g.to(x.dtype)


def adaptive_avg_pool2d_backward(grad_output: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """``aten._adaptive_avg_pool2d_backward`` (1-d pooling included: ATen
    pools 1-d inputs as 2-d), see :func:`_adaptive_avg_pool_backward`."""
    return _adaptive_avg_pool_backward(2, grad_output, x)


def adaptive_avg_pool3d_backward(grad_output: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """``aten._adaptive_avg_pool3d_backward``, see
    :func:`_adaptive_avg_pool_backward`."""
    return _adaptive_avg_pool_backward(3, grad_output, x)


def _adaptive_max_pool_backward(spatial: int, grad_output: torch.Tensor, x: torch.Tensor,
                                indices: torch.Tensor) -> torch.Tensor:
    """Adaptive max pooling's gradient over the last ``spatial`` dims: each
    output's gradient added at the position of its plane its index names
    (``scatter_add``: windows that chose one position add up there), half
    types in float32 as in PyTorch's decomposition of max pooling's
    gradient."""
    planes = math.prod(x.shape[:-spatial])
    acc = _accumulator(x.dtype)
    g = grad_output.reshape(planes, -1).to(acc)
    where = indices.reshape(planes, -1)
    total = torch.zeros(planes, math.prod(x.shape[-spatial:]), dtype=acc)
    return total.scatter_add(1, where, g).to(x.dtype).reshape(x.shape)


def adaptive_max_pool2d_backward(grad_output: torch.Tensor, x: torch.Tensor,
                                 indices: torch.Tensor) -> torch.Tensor:
    """``aten.adaptive_max_pool2d_backward`` (1-d pooling included), see
    :func:`_adaptive_max_pool_backward`."""
    return _adaptive_max_pool_backward(2, grad_output, x, indices)


def adaptive_max_pool3d_backward(grad_output: torch.Tensor, x: torch.Tensor,
                                 indices: torch.Tensor) -> torch.Tensor:
    """``aten.adaptive_max_pool3d_backward``, see
    :func:`_adaptive_max_pool_backward`."""
    return _adaptive_max_pool_backward(3, grad_output, x, indices)


def bernoulli_p(x: torch.Tensor, p: float, *, generator: object = None
                ) -> torch.Tensor | object:
    """``torch.bernoulli(x, p)`` (``x.bernoulli_(p)`` once functionalized:
    Dropout2d's channel masks, stochastic depth's per-sample keep): 1 with
    probability ``p``, from ``rand_like``; a given generator stays eager."""
    if generator is not None:
        return NotImplemented
    return (torch.rand_like(x, dtype=torch.float32) < p).to(x.dtype)


def llvmaccel_decompositions() -> dict[object, Callable[..., object]]:
    """The table entries, keyed by ATen overload."""
    aten = torch.ops.aten
    return {aten._transformer_encoder_layer_fwd.default: transformer_encoder_layer_fwd,
            aten._scaled_dot_product_flash_attention_for_cpu.default: flash_attention_for_cpu,
            aten.native_group_norm.default: native_group_norm,
            aten.searchsorted.Tensor: searchsorted,
            aten.kthvalue.default: kthvalue, aten.median.dim: median_dim,
            aten.median.default: median,
            aten.convolution_backward.default: convolution_backward,
            aten.avg_pool2d_backward.default: avg_pool2d_backward,
            aten._adaptive_avg_pool2d_backward.default: adaptive_avg_pool2d_backward,
            aten._adaptive_avg_pool3d_backward.default: adaptive_avg_pool3d_backward,
            aten.adaptive_max_pool2d_backward.default: adaptive_max_pool2d_backward,
            aten.adaptive_max_pool3d_backward.default: adaptive_max_pool3d_backward}


def random_decompositions() -> dict[object, Callable[..., object]]:
    """Entries for random ops, in ``rand_like``, which llvmaccel lowers (its
    own generator; the backend's ``fallback_random`` leaves them out):
    PyTorch's for dropout in train(), bernoulli and uniform sampling, and
    ``bernoulli(x, p)``."""
    from torch._decomp import get_decompositions

    aten = torch.ops.aten
    table = dict(get_decompositions([aten.native_dropout, aten.bernoulli.default,
                                     aten.uniform]))
    table[aten.bernoulli.p] = bernoulli_p
    return table
