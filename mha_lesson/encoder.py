"""A transformer encoder layer on the core: layer norm, the GELU feed-forward network, post-LN residual wiring.

encoder_layer follows BERT (post-LN): x = LN(x + MHA(x)); x = LN(x + FFN(x)). With norm="pre" it is pre-LN,
as in GPT-2 and most later models (Llama and Mistral with RMSNorm): x = x + MHA(LN(x)); x = x + FFN(LN(x)).
The attention inside is the core's multi_head_attention, so every result of lessons 2-11 holds for each
of the layer's heads.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable

import numpy as np
from scipy import special

from ._checks import (
    as_finite_array,
    as_float_array,
    check_bool,
    check_finite,
    check_float_dtype,
    check_heads,
    check_nonnegative_int,
    check_number,
    check_positive_int,
    check_size,
)
from .multihead import multi_head_attention
from .projections import MHAParams, init_params

# The feed-forward network works on blocks of this many rows, so that its (rows, d_ff) hidden activations stay
# near the cache through GELU's few elementwise passes. Blocks much smaller than this make every matmul so small
# that a multi-threaded BLAS spends more CPU time synchronising its threads than multiplying.
FFN_BLOCK_ROWS = 1024


def gelu(x: np.ndarray) -> np.ndarray:
    """GELU(x) = x * Phi(x) = x/2 * (1 + erf(x/sqrt 2)) elementwise (the exact form, not the tanh one).

    Elementwise and unchecked for values: NaN in gives NaN out, in the same place (GELU(inf) = inf).
    """
    x = as_float_array("x", x, 0)
    # scipy's erf keeps float32 in float32 (to within an ulp or two) and float64 to full precision.
    g = special.erf(x * (1.0 / math.sqrt(2.0)))
    g += 1.0
    g *= x
    g *= 0.5
    return g


def layer_norm(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, eps: float = 1e-5) -> np.ndarray:
    """(..., d) -> (..., d): each row shifted to mean 0 and scaled to variance 1, then gamma * row + beta.

    x is not checked for NaN (a hot path of every layer): NaN in gives NaN out, in that row only.
    """
    x = as_float_array("x", x)
    d = x.shape[-1]
    if d == 0:
        raise ValueError(f"x: expected at least one feature to normalise, got shape {x.shape}")
    for name, p in (("gamma", gamma), ("beta", beta)):
        if np.shape(as_finite_array(name, p)) != (d,):
            raise ValueError(f"{name}: expected shape ({d},) to match the last axis of x {x.shape}, got {np.shape(p)}")
    # eps = 0 would divide a constant row by sqrt(0): NaN.
    eps = check_number("eps", eps, low=0.0)
    mu = x.mean(axis=-1, keepdims=True)
    xc = x - mu
    var = np.mean(xc * xc, axis=-1, keepdims=True)  # biased (divide by d), as in PyTorch's LayerNorm
    xc *= 1.0 / np.sqrt(var + eps)
    xc *= gamma
    xc += beta
    return xc


@dataclasses.dataclass(frozen=True, kw_only=True, eq=False)
class FeedForwardParams:
    """Position-wise feed-forward network: w_1 (d_model, d_ff), b_1 (d_ff,), w_2 (d_ff, d_model), b_2 (d_model,)."""

    w_1: np.ndarray
    b_1: np.ndarray
    w_2: np.ndarray
    b_2: np.ndarray

    def __post_init__(self) -> None:
        for name in ("w_1", "b_1", "w_2", "b_2"):
            a = as_float_array(name, getattr(self, name))
            check_finite(name, a)
            object.__setattr__(self, name, a)
        d_model, d_ff = self.w_1.shape if self.w_1.ndim == 2 else (None, None)
        expected = {"w_1": (d_model, d_ff), "b_1": (d_ff,), "w_2": (d_ff, d_model), "b_2": (d_model,)}
        for name, shape in expected.items():
            if getattr(self, name).shape != shape:
                raise ValueError(
                    f"{name}: expected shape {shape} (w_1 is (d_model, d_ff)), got {getattr(self, name).shape}"
                )

    @property
    def d_model(self) -> int:
        """Width of the layer's input and output."""
        return self.w_1.shape[0]

    @property
    def d_ff(self) -> int:
        """Width of the hidden layer (4 * d_model in BERT and the original transformer)."""
        return self.w_1.shape[1]


def feed_forward(x: np.ndarray, params: FeedForwardParams) -> np.ndarray:
    """(..., n, d_model) -> (..., n, d_model): gelu(x @ w_1 + b_1) @ w_2 + b_2, each position on its own.

    x is not checked for NaN: NaN in gives NaN out, in that position only.
    """
    if not isinstance(params, FeedForwardParams):
        raise ValueError(f"params: expected a FeedForwardParams, got {type(params).__name__}")
    x = as_float_array("x", x)
    if x.shape[-1] != params.d_model:
        raise ValueError(f"x: expected shape (..., d_model={params.d_model}) to match params, got {x.shape}")
    rows = x.reshape(-1, params.d_model)  # (rows, d_model): positions are independent, so flatten batch and n
    dtype = np.result_type(x, params.w_1, params.w_2)
    out = np.empty((rows.shape[0], params.d_model), dtype=dtype)
    for i in range(0, rows.shape[0], FFN_BLOCK_ROWS):
        hidden = rows[i : i + FFN_BLOCK_ROWS] @ params.w_1  # (block, d_ff)
        hidden += params.b_1
        np.matmul(gelu(hidden), params.w_2, out=out[i : i + FFN_BLOCK_ROWS])
    out += params.b_2
    return out.reshape(*x.shape[:-1], params.d_model)  # (..., n, d_model)


@dataclasses.dataclass(frozen=True, kw_only=True, eq=False)
class EncoderLayerParams:
    """One encoder layer: attention, its layer norm (ln1_*), the feed-forward network and its layer norm (ln2_*)."""

    attn: MHAParams
    ffn: FeedForwardParams
    ln1_gamma: np.ndarray
    ln1_beta: np.ndarray
    ln2_gamma: np.ndarray
    ln2_beta: np.ndarray
    eps: float = 1e-5

    def __post_init__(self) -> None:
        if not isinstance(self.attn, MHAParams):
            raise ValueError(f"attn: expected an MHAParams, got {type(self.attn).__name__}")
        if not isinstance(self.ffn, FeedForwardParams):
            raise ValueError(f"ffn: expected a FeedForwardParams, got {type(self.ffn).__name__}")
        d = self.attn.d_model
        if self.ffn.d_model != d:
            raise ValueError(f"ffn: expected d_model={d} like attn, got d_model={self.ffn.d_model}")
        object.__setattr__(self, "eps", check_number("eps", self.eps, low=0.0))
        for name in ("ln1_gamma", "ln1_beta", "ln2_gamma", "ln2_beta"):
            a = as_finite_array(name, getattr(self, name))
            if a.shape != (d,):
                raise ValueError(f"{name}: expected shape ({d},) like attn's d_model, got {a.shape}")
            object.__setattr__(self, name, a)

    def without_heads(self, heads: Iterable[int]) -> EncoderLayerParams:
        """A copy whose attention has the listed heads switched off (MHAParams.without_heads)."""
        return dataclasses.replace(self, attn=self.attn.without_heads(heads))


def init_encoder_layer(
    d_model: int, h: int, d_ff: int | None = None, *, seed: int = 0, dtype: np.dtype | type = np.float64
) -> EncoderLayerParams:
    """Random layer (fixed by seed): Glorot attention with zero biases, N(0, 0.02) FFN, identity layer norms."""
    check_heads(d_model, h)
    d_ff = 4 * d_model if d_ff is None else check_positive_int("d_ff", d_ff)
    seed = check_nonnegative_int("seed", seed)
    dtype = check_float_dtype("dtype", dtype)
    # The two feed-forward matrices are drawn in float64: refuse before drawing them.
    check_size("d_ff" if d_ff > d_model else "d_model", "the feed-forward weights", (2, d_model, d_ff), np.float64)
    rng = np.random.default_rng(seed)
    # 0.02 is BERT's initializer_range; zero biases and gamma = 1, beta = 0 are the usual starting point.
    ffn = FeedForwardParams(
        w_1=rng.normal(0.0, 0.02, (d_model, d_ff)).astype(dtype),
        b_1=np.zeros(d_ff, dtype),
        w_2=rng.normal(0.0, 0.02, (d_ff, d_model)).astype(dtype),
        b_2=np.zeros(d_model, dtype),
    )
    ones, zeros = np.ones(d_model, dtype), np.zeros(d_model, dtype)
    return EncoderLayerParams(
        attn=init_params(d_model, h, bias=True, seed=seed + 1, dtype=dtype),
        ffn=ffn,
        ln1_gamma=ones,
        ln1_beta=zeros,
        ln2_gamma=ones,
        ln2_beta=zeros,
    )


def encoder_layer(
    x: np.ndarray,
    params: EncoderLayerParams,
    mask: np.ndarray | None = None,
    *,
    need_weights: bool = False,
    norm: str = "post",
) -> tuple[np.ndarray, np.ndarray | None]:
    """One layer: x (..., n, d_model) -> (x', weights (..., h, n, n) or None); mask True = may attend.

    norm="post" (BERT, the 2017 paper) normalises after each residual addition; norm="pre" (Tensor2Tensor's
    default and Baevski & Auli 2018 before GPT-2; also Child et al. 2019 and Wang et al. 2019, as Xiong et al.
    2020 note) normalises each sub-layer's input and leaves the residual path x + ... untouched, so the
    identity path from the last layer back to the first carries gradients undamped by layer norms:
    deep pre-LN stacks train without the learning-rate warm-up post-LN needs (Xiong et al., 2020).
    A pre-LN model adds one final layer norm after its last layer (not part of this function).
    """
    if not isinstance(params, EncoderLayerParams):
        raise ValueError(f"params: expected an EncoderLayerParams, got {type(params).__name__}")
    if not isinstance(norm, str) or norm not in ("post", "pre"):
        raise ValueError(f"norm: expected 'post' or 'pre', got {norm!r}")
    need_weights = check_bool("need_weights", need_weights)
    # Check x here, so that a bad x is blamed on x and not on the attention's q.
    x = as_finite_array("x", x, 2)
    if x.shape[-1] != params.attn.d_model:
        raise ValueError(f"x: expected shape (..., n, d_model={params.attn.d_model}) to match params, got {x.shape}")
    if norm == "pre":
        # Pre-LN: each sub-layer reads a normalised copy; the residual stream x itself is never normalised.
        y = layer_norm(x, params.ln1_gamma, params.ln1_beta, params.eps)
        attn, weights = multi_head_attention(y, y, y, params.attn, mask, need_weights=need_weights)
        x = x + attn
        x = x + feed_forward(layer_norm(x, params.ln2_gamma, params.ln2_beta, params.eps), params.ffn)
        return x, weights
    attn, weights = multi_head_attention(x, x, x, params.attn, mask, need_weights=need_weights)
    # Post-LN (BERT, and the 2017 paper): normalise after adding the residual, not before the sub-layer.
    x = layer_norm(x + attn, params.ln1_gamma, params.ln1_beta, params.eps)
    x = layer_norm(x + feed_forward(x, params.ffn), params.ln2_gamma, params.ln2_beta, params.eps)
    return x, weights
