"""A GPT-2 style character model in numpy: pre-LN blocks around the series' own multi-head attention.

x = wte[tokens] + wpe[:T]; each layer: x += attn(ln1(x)) (causal), x += mlp(ln2(x)) with
mlp(u) = gelu_tanh(u @ w1 + b1) @ w2 + b2; logits = lnf(x) @ wte^T (tied read-out). The attention forward
and backward are mha_lesson.gradients' (the same code lesson 13 trains with); decoding uses kv_cache.decode_step.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from .. import gradients
from .._blas import one_blas_thread
from .._checks import as_int_array, check_nonnegative_int, check_number, check_positive_int, is_int
from ..kv_cache import KVCache, decode_step
from ..projections import MHAParams

LN_EPS = 1e-5
GELU_C = math.sqrt(2.0 / math.pi)  # gelu_tanh(u) = u/2 * (1 + tanh(GELU_C * (u + 0.044715 u^3)))
INIT_STD = 0.02  # GPT-2's initialisation
DTYPE = np.float32
MAX_NEW = 10**6  # tokens generate will make in one call (the corpus's size): more would run for hours


@dataclasses.dataclass(frozen=True)
class GPTConfig:
    """The model's sizes; d_ff defaults to 4 * d_model, and n_head must divide d_model."""

    vocab_size: int
    n_layer: int
    n_head: int
    d_model: int
    n_ctx: int
    d_ff: int | None = None

    def __post_init__(self) -> None:
        for name in ("vocab_size", "n_layer", "n_head", "d_model", "n_ctx"):
            check_positive_int(name, getattr(self, name))
        if self.d_model % self.n_head:
            raise ValueError(
                f"n_head: expected a divisor of d_model={self.d_model} so every head gets d_model / n_head "
                f"columns, got n_head={self.n_head}"
            )
        d_ff = 4 * self.d_model if self.d_ff is None else check_positive_int("d_ff", self.d_ff)
        object.__setattr__(self, "d_ff", d_ff)

    @property
    def d_k(self) -> int:
        """Each head's width, d_model / n_head."""
        return self.d_model // self.n_head


def param_shapes(config: GPTConfig) -> dict[str, tuple[int, ...]]:
    """Every parameter's name -> shape, in a fixed order (the order init_params draws them in)."""
    _check_config(config)
    d, f = config.d_model, config.d_ff
    shapes: dict[str, tuple[int, ...]] = {"wte": (config.vocab_size, d), "wpe": (config.n_ctx, d)}
    for i in range(config.n_layer):
        p = f"h{i}."
        shapes |= {f"{p}ln1.g": (d,), f"{p}ln1.b": (d,)}
        shapes |= {f"{p}attn.{w}": (d, d) for w in ("w_q", "w_k", "w_v", "w_o")}
        shapes |= {f"{p}attn.{b}": (d,) for b in ("b_q", "b_k", "b_v", "b_o")}
        shapes |= {f"{p}ln2.g": (d,), f"{p}ln2.b": (d,)}
        shapes |= {f"{p}mlp.w1": (d, f), f"{p}mlp.b1": (f,), f"{p}mlp.w2": (f, d), f"{p}mlp.b2": (d,)}
    return shapes | {"lnf.g": (d,), "lnf.b": (d,)}


def init_params(config: GPTConfig, seed: int = 0) -> dict[str, np.ndarray]:
    """GPT-2's initialisation: N(0, 0.02) matrices, residual projections N(0, 0.02/sqrt(2 n_layer)), zero biases."""
    _check_config(config)
    rng = np.random.default_rng(check_nonnegative_int("seed", seed))
    # w_o and w2 write into the residual stream, 2 per layer: scaling them keeps its variance flat with depth.
    residual_std = INIT_STD / math.sqrt(2 * config.n_layer)
    params = {}
    for name, shape in param_shapes(config).items():
        if name.endswith(".g"):
            params[name] = np.ones(shape, DTYPE)
        elif len(shape) == 1:
            params[name] = np.zeros(shape, DTYPE)
        else:
            std = residual_std if name.endswith(("attn.w_o", "mlp.w2")) else INIT_STD
            params[name] = rng.normal(0.0, std, shape).astype(DTYPE)
    return params


def n_params(params: dict[str, np.ndarray]) -> int:
    """The number of parameters (wte counted once: the read-out shares it)."""
    if not isinstance(params, dict) or not params or not all(isinstance(a, np.ndarray) for a in params.values()):
        raise ValueError(f"params: expected a non-empty dict of numpy arrays, got {type(params).__name__}")
    bad = [name for name, a in params.items() if a.dtype.kind in "fc" and not np.isfinite(a).all()]
    if bad:
        raise ValueError(f"params: expected finite values, got NaN or inf in {bad[0]}")
    return sum(a.size for a in params.values())


def _check_config(config: object) -> GPTConfig:
    if not isinstance(config, GPTConfig):
        raise ValueError(f"config: expected a GPTConfig, got {type(config).__name__}")
    return config


def check_params(params: object, config: GPTConfig) -> dict[str, np.ndarray]:
    """params if it has exactly config's keys, each a floating-point array of the right shape, else ValueError."""
    _check_config(config)
    if not isinstance(params, dict):
        raise ValueError(f"params: expected a dict of arrays, got {type(params).__name__}")
    shapes = param_shapes(config)
    if set(params) != set(shapes):
        missing, extra = sorted(set(shapes) - set(params)), sorted(set(params) - set(shapes))
        raise ValueError(f"params: keys do not match the config: missing {missing[:3]}, unexpected {extra[:3]}")
    for name, shape in shapes.items():
        a = params[name]
        if not isinstance(a, np.ndarray) or not np.issubdtype(a.dtype, np.floating) or a.shape != shape:
            got = f"{a.dtype} {a.shape}" if isinstance(a, np.ndarray) else type(a).__name__
            raise ValueError(f"params: {name} expected a floating-point array of shape {shape}, got {got}")
        if not np.isfinite(a).all():
            raise ValueError(f"params: {name} expected finite values, got NaN or inf")
    return params


def check_tokens(name: str, tokens: object, config: GPTConfig, ndim: int = 2) -> np.ndarray:
    """tokens as an int array of ndim dims, 1..n_ctx long, ids in [0, vocab_size); else ValueError naming it."""
    tokens = as_int_array(name, tokens, ndim)
    length = tokens.shape[-1]
    if length == 0 or length > config.n_ctx:
        raise ValueError(f"{name}: expected 1 to n_ctx={config.n_ctx} positions, got {length}")
    if tokens.min() < 0 or tokens.max() >= config.vocab_size:
        lo, hi = tokens.min(), tokens.max()
        raise ValueError(f"{name}: expected ids in [0, vocab_size={config.vocab_size}), got {lo}..{hi}")
    return tokens


def attn_params(params: dict[str, np.ndarray], config: GPTConfig, i: int) -> MHAParams:
    """Layer i's attention weights as the series' MHAParams (views, no copies); unchecked (callers check params)."""
    p = f"h{i}.attn."
    return MHAParams(
        h=config.n_head, **{k: params[p + k] for k in ("w_q", "w_k", "w_v", "w_o", "b_q", "b_k", "b_v", "b_o")}
    )


# --- the pieces around attention, each with its backward -------------------------------------------------


def layer_norm(x: np.ndarray, g: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray]]:
    """Unchecked: (..., d) -> (normalised * g + b, (x_hat (..., d), rstd (..., 1))) over the last axis, eps 1e-5."""
    mu = x.mean(axis=-1, keepdims=True)  # (..., 1)
    xc = x - mu
    rstd = 1.0 / np.sqrt((xc * xc).mean(axis=-1, keepdims=True) + LN_EPS)  # (..., 1)
    x_hat = xc * rstd
    return x_hat * g + b, (x_hat, rstd)


def layer_norm_backward(
    d_y: np.ndarray, cache: tuple[np.ndarray, np.ndarray], g: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Unchecked LayerNorm backward: d_y (..., d) -> (d_x (..., d), d_g (d,), d_b (d,))."""
    x_hat, rstd = cache
    rows = d_y.reshape(-1, d_y.shape[-1])  # (rows, d)
    d_g = (rows * x_hat.reshape(rows.shape)).sum(axis=0)
    d_b = rows.sum(axis=0)
    d_xhat = d_y * g
    # x_hat's mean is 0 and its variance 1 by construction: remove the gradient's parts along both constraints.
    mean_d = d_xhat.mean(axis=-1, keepdims=True)
    mean_dx = (d_xhat * x_hat).mean(axis=-1, keepdims=True)
    return rstd * (d_xhat - mean_d - x_hat * mean_dx), d_g, d_b


def gelu(u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Unchecked GELU, tanh approximation (GPT-2's): u (...) -> (gelu(u), tanh term kept for the backward)."""
    # In place on two buffers: an elementwise pass over (B*T, d_ff) costs about as much as a small matmul.
    t = u * u
    t *= 0.044715
    t += 1.0
    t *= u
    t *= GELU_C
    np.tanh(t, out=t)  # tanh(GELU_C * (u + 0.044715 u^3))
    y = t + 1.0
    y *= u
    y *= 0.5
    return y, t


def gelu_backward(d_y: np.ndarray, u: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Unchecked: d gelu(u) / du times d_y, from the kept tanh term t, shape of u."""
    # d/du = 0.5 (1 + t) + 0.5 u (1 - t^2) GELU_C (1 + 3 * 0.044715 u^2), built in one buffer.
    g = u * u
    g *= 3 * 0.044715 * GELU_C
    g += GELU_C
    g *= u
    g *= 0.5
    g *= 1.0 - t * t
    g += 0.5
    g += 0.5 * t
    g *= d_y
    return g


def _linear(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
    """(..., d_in) @ (d_in, d_out) + b as one 2-D product."""
    return (x.reshape(-1, x.shape[-1]) @ w + b).reshape(*x.shape[:-1], w.shape[1])  # (..., d_out)


def cross_entropy(logits: np.ndarray, targets: np.ndarray) -> tuple[float, np.ndarray]:
    """Unchecked mean cross-entropy over every position: logits (..., V), targets (...) -> (loss, d_logits (..., V))."""
    shifted = logits - logits.max(axis=-1, keepdims=True)  # exp() stays finite
    exp = np.exp(shifted)
    total = exp.sum(axis=-1, keepdims=True)  # (..., 1)
    picked = np.take_along_axis(shifted, targets[..., None], axis=-1)  # (..., 1): the right token's logit
    count = targets.size
    loss = float((np.log(total) - picked).sum(dtype=np.float64) / count)
    d_logits = exp / (total * count)  # (softmax - one_hot) / N
    rows = d_logits.reshape(-1, d_logits.shape[-1])  # (N, V), a view
    rows[np.arange(count), targets.reshape(-1)] -= 1.0 / count
    return loss, d_logits


# --- forward and backward --------------------------------------------------------------------------------


def _forward(params: dict[str, np.ndarray], config: GPTConfig, tokens: np.ndarray) -> tuple[np.ndarray, list, tuple]:
    """Unchecked forward: tokens (B, T) -> (logits (B, T, V), per-layer caches, final caches)."""
    T = tokens.shape[1]
    mask = np.tri(T, dtype=bool)  # (T, T) causal: query t sees keys 0..t
    x = params["wte"][tokens] + params["wpe"][:T]  # (B, T, d)
    layers = []
    for i in range(config.n_layer):
        p, mha = f"h{i}.", attn_params(params, config, i)
        a, ln1 = layer_norm(x, params[p + "ln1.g"], params[p + "ln1.b"])
        attn_out, attn = gradients.forward(a, a, a, mha, mask, check=False)  # unchecked: a NaN must reach the loss
        x = x + attn_out
        m, ln2 = layer_norm(x, params[p + "ln2.g"], params[p + "ln2.b"])
        u = _linear(m, params[p + "mlp.w1"], params[p + "mlp.b1"])  # (B, T, d_ff)
        act, t = gelu(u)
        x = x + _linear(act, params[p + "mlp.w2"], params[p + "mlp.b2"])
        layers.append((mha, ln1, attn, m, ln2, u, t, act))
    xf, lnf = layer_norm(x, params["lnf.g"], params["lnf.b"])
    logits = (xf.reshape(-1, xf.shape[-1]) @ params["wte"].T).reshape(*tokens.shape, -1)  # (B, T, V): tied
    return logits, layers, (xf, lnf)


def logits(params: dict[str, np.ndarray], config: GPTConfig, tokens: object) -> np.ndarray:
    """tokens (B, T) ids, T <= n_ctx -> logits (B, T, vocab_size): position t predicts token t + 1."""
    check_params(params, config)
    return _forward(params, config, check_tokens("tokens", tokens, config))[0]


def attention_weights(params: dict[str, np.ndarray], config: GPTConfig, tokens: object) -> np.ndarray:
    """tokens (B, T) -> every head's attention weights (n_layer, B, n_head, T, T): queries on rows, keys on columns."""
    check_params(params, config)
    layers = _forward(params, config, check_tokens("tokens", tokens, config))[1]
    return np.stack([attn.weights for _, _, attn, *_ in layers])  # attn is gradients.Cache


def ablate_heads(params: dict[str, np.ndarray], config: GPTConfig, heads: object) -> dict[str, np.ndarray]:
    """A copy of params whose listed (layer, head) pairs write nothing: their rows of W^O set to 0.

    Head j's output reaches the residual stream only through rows j*d_k:(j+1)*d_k of W^O (lesson 6), so zeroing
    them removes exactly that head's contribution (zero ablation); b_O and every other head stay as they were.
    """
    check_params(params, config)
    if isinstance(heads, (str, bytes, dict)):  # iterable, but not of (layer, head) pairs
        raise ValueError(f"heads: expected (layer, head) pairs of integers, got {heads!r:.60}")
    try:
        pairs = [(int(layer), int(head)) for layer, head in heads]
    except (TypeError, ValueError):
        raise ValueError(f"heads: expected (layer, head) pairs of integers, got {heads!r:.60}") from None
    out = dict(params)
    for layer, head in pairs:
        if not (0 <= layer < config.n_layer and 0 <= head < config.n_head):
            raise ValueError(
                f"heads: expected layers 0..{config.n_layer - 1}, heads 0..{config.n_head - 1}; got ({layer}, {head})"
            )
        name = f"h{layer}.attn.w_o"
        if out[name] is params[name]:
            out[name] = params[name].copy()
        out[name][head * config.d_k : (head + 1) * config.d_k] = 0.0
    return out


def loss_and_grads(
    params: dict[str, np.ndarray], config: GPTConfig, tokens: object, targets: object
) -> tuple[float, dict[str, np.ndarray]]:
    """tokens, targets (B, T) -> (mean cross-entropy over all B*T positions, a gradient for every key of params)."""
    check_params(params, config)
    tokens = check_tokens("tokens", tokens, config)
    targets = check_tokens("targets", targets, config)
    if targets.shape != tokens.shape:
        raise ValueError(f"targets: expected the shape of tokens {tokens.shape}, got {targets.shape}")
    return _loss_and_grads(params, config, tokens, targets)


def _loss_and_grads(
    params: dict[str, np.ndarray], config: GPTConfig, tokens: np.ndarray, targets: np.ndarray
) -> tuple[float, dict[str, np.ndarray]]:
    """Unchecked loss_and_grads, for the trainer's own batches: NaN weights give a NaN loss, not an error."""
    out, layers, (xf, lnf) = _forward(params, config, tokens)
    loss, d_logits = cross_entropy(out, targets)
    d_rows = d_logits.reshape(-1, d_logits.shape[-1])  # (B*T, V)
    grads = {"wte": d_rows.T @ xf.reshape(len(d_rows), -1)}  # (V, d): the read-out half of the tied weight
    d_xf = (d_rows @ params["wte"]).reshape(xf.shape)  # (B, T, d)
    d_x, grads["lnf.g"], grads["lnf.b"] = layer_norm_backward(d_xf, lnf, params["lnf.g"])
    for i in reversed(range(config.n_layer)):
        p = f"h{i}."
        mha, ln1, attn, m, ln2, u, t, act = layers[i]
        # MLP: x_out = x_mid + gelu(m w1 + b1) w2 + b2; the residual passes d_x through unchanged.
        d_act, grads[p + "mlp.w2"], grads[p + "mlp.b2"] = gradients.projection_backward(
            d_x, act, params[p + "mlp.w2"], True
        )
        d_u = gelu_backward(d_act, u, t)
        d_m, grads[p + "mlp.w1"], grads[p + "mlp.b1"] = gradients.projection_backward(
            d_u, m, params[p + "mlp.w1"], True
        )
        d_mid, grads[p + "ln2.g"], grads[p + "ln2.b"] = layer_norm_backward(d_m, ln2, params[p + "ln2.g"])
        d_x = d_x + d_mid
        # Attention: the series' backward. ln1(x) fed q, k and v, so its gradient is the sum of the three.
        g = gradients.backward(attn, d_x, mha, check=False)
        grads |= {f"{p}attn.{k}": g[k] for k in ("w_q", "w_k", "w_v", "w_o", "b_q", "b_k", "b_v", "b_o")}
        d_in, grads[p + "ln1.g"], grads[p + "ln1.b"] = layer_norm_backward(
            g["q"] + g["k"] + g["v"], ln1, params[p + "ln1.g"]
        )
        d_x = d_x + d_in
    # The embedding half of wte: each position's gradient goes to its token's row (a token seen twice gets both).
    # one_hot^T @ d_x is the same sum as np.add.at, and much faster (see mha_lesson.training).
    flat_tokens = tokens.reshape(-1)
    one_hot = (flat_tokens == np.arange(config.vocab_size)[:, None]).astype(d_x.dtype)  # (V, B*T)
    grads["wte"] = grads["wte"] + one_hot @ d_x.reshape(len(flat_tokens), -1)
    d_wpe = np.zeros_like(params["wpe"])
    d_wpe[: tokens.shape[1]] = d_x.sum(axis=0)  # positions beyond T were not used
    grads["wpe"] = d_wpe
    return loss, {name: grads[name] for name in params}


# --- decoding --------------------------------------------------------------------------------------------


def _check_sampling(temperature: object, top_k: object) -> tuple[float, int | None]:
    temperature = check_number("temperature", temperature, low=0.0, strict=False, what="a finite number >= 0")
    if top_k is not None and (not is_int(top_k) or top_k < 1):
        raise ValueError(f"top_k: expected None or an integer >= 1, got {top_k!r}")
    return temperature, None if top_k is None else int(top_k)


def _decode_token(params: dict[str, np.ndarray], config: GPTConfig, layers, caches, token: int, pos: int) -> np.ndarray:
    """Feed one token at position pos through every layer with its KV cache -> next-token logits (V,)."""
    x = params["wte"][token] + params["wpe"][pos]  # (d,)
    for i, (mha, cache) in enumerate(zip(layers, caches, strict=True)):
        p = f"h{i}."
        x = x + decode_step(layer_norm(x, params[p + "ln1.g"], params[p + "ln1.b"])[0], mha, cache)
        m = layer_norm(x, params[p + "ln2.g"], params[p + "ln2.b"])[0]
        x = x + gelu(m @ params[p + "mlp.w1"] + params[p + "mlp.b1"])[0] @ params[p + "mlp.w2"] + params[p + "mlp.b2"]
    return layer_norm(x, params["lnf.g"], params["lnf.b"])[0] @ params["wte"].T  # (V,)


def _pick(next_logits: np.ndarray, temperature: float, top_k: int | None, rng: np.random.Generator) -> int:
    """The next id: argmax at temperature 0, else a draw from softmax(logits / temperature) over the top_k."""
    if temperature == 0:
        return int(np.argmax(next_logits))
    z = next_logits.astype(np.float64) / temperature
    if top_k is not None and top_k < len(z):
        z[z < np.partition(z, -top_k)[-top_k]] = -np.inf  # only the top_k largest stay
    p = np.exp(z - z.max())
    return int(rng.choice(len(p), p=p / p.sum()))


def generate(
    params: dict[str, np.ndarray],
    config: GPTConfig,
    prompt_ids: object,
    n_new: int,
    *,
    temperature: float = 1.0,
    top_k: int | None = None,
    seed: int = 0,
) -> np.ndarray:
    """prompt_ids (n,) -> (n + n_new,) ids, decoded one token at a time with a KV cache per layer.

    temperature 0 is greedy (argmax); otherwise tokens are drawn from softmax(logits / temperature), restricted
    to the top_k most likely when top_k is given, from np.random.default_rng(seed). Past n_ctx tokens the
    context slides: learned positions shift with the window, so every cached key goes stale, and each further
    token is computed from the last n_ctx tokens afresh.
    """
    check_params(params, config)
    prompt = check_tokens("prompt_ids", prompt_ids, config, ndim=1)
    if check_nonnegative_int("n_new", n_new) > MAX_NEW:
        raise ValueError(f"n_new: expected at most {MAX_NEW:,d} tokens per call, got {n_new}")
    temperature, top_k = _check_sampling(temperature, top_k)
    rng = np.random.default_rng(check_nonnegative_int("seed", seed))
    ids = [int(t) for t in prompt]
    layers = [attn_params(params, config, i) for i in range(config.n_layer)]
    caches = [KVCache() for _ in range(config.n_layer)]
    # One token's products are vector-sized: a second BLAS thread only adds waiting, a lot of it on a busy machine.
    with one_blas_thread():
        for pos, token in enumerate(ids[:-1]):  # the prompt fills the caches; its last token is decoded below
            _decode_token(params, config, layers, caches, token, pos)
        for _ in range(n_new):
            if len(ids) <= config.n_ctx:
                next_logits = _decode_token(params, config, layers, caches, ids[-1], len(ids) - 1)
            else:
                window = np.array(ids[-config.n_ctx :])[None]  # (1, n_ctx)
                next_logits = _forward(params, config, window)[0][0, -1]
            ids.append(_pick(next_logits, temperature, top_k, rng))
    return np.array(ids, dtype=np.int64)
