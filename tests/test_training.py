"""The numpy trainer: one head against two on two lookups, one layer against two on induction, and its contract."""

import math

import numpy as np
import pytest

from mha_lesson import training


@pytest.fixture(scope="module")
def two_lookups():
    """The default two_lookups run with one head and with two (seed 0)."""
    return {h: training.train("two_lookups", h=h) for h in (1, 2)}


def test_one_head_makes_one_lookup_two_heads_make_both(two_lookups):
    one, two = two_lookups[1], two_lookups[2]
    assert one.accuracy < 0.5 and two.accuracy > 0.95  # both lookups right at once
    # One head gets one lookup (nearly always right) and mostly guesses the other.
    per_lookup = one.trainer.readout_accuracy()
    assert per_lookup.max() > 0.9 and per_lookup.min() < 0.5
    assert two.trainer.readout_accuracy().min() > 0.95
    # Its one convex average has to cover both offsets, so it splits its attention between them.
    weights = one.attention[0, 0]  # (n, n)
    rows = np.arange(2, weights.shape[0])
    assert weights[rows, rows - 1].mean() > 0.3 and weights[rows, rows - 2].mean() > 0.3


def test_the_result_holds_what_the_issue_lists(two_lookups):
    r = two_lookups[2]
    assert r.losses.shape == (1500,) and np.isfinite(r.losses).all()
    assert r.losses[-100:].mean() < 0.05 < 5 < r.losses[0]  # starts near 2 ln(16) = 5.5, ends near 0
    assert r.config == {
        "task": "two_lookups",
        "h": 2,
        "seed": 0,
        "layers": 1,
        "d_model": 16,
        "n": 16,
        "vocab": 16,
        "steps": 1500,
        "lr": 1e-2,
        "batch": 64,
    }
    assert r.attention.shape == (1, 2, 16, 16)
    np.testing.assert_allclose(r.attention.sum(axis=-1), 1, atol=1e-5)
    assert np.all(np.triu(r.attention, k=1) == 0)  # causal: no weight on later tokens
    assert 0 <= r.accuracy <= 1 and r.seconds > 0 and r.checkpoints == {}


def test_same_seed_gives_the_same_losses_to_the_last_bit():
    a, b = (training.train("two_lookups", h=2, seed=3, steps=60) for _ in range(2))
    np.testing.assert_array_equal(a.losses, b.losses)
    np.testing.assert_array_equal(a.attention, b.attention)
    c = training.train("two_lookups", h=2, seed=4, steps=60)
    assert not np.array_equal(a.losses, c.losses)


def test_a_stopped_trainer_continues_exactly_where_train_would_be():
    full = training.train("induction", h=2, layers=2, steps=40)
    trainer = training.Trainer("induction", h=2, layers=2, steps=40)
    seen = []
    trainer.run(40, lambda step, loss, t: seen.append((step, loss)) or step < 15)  # Stop after step 15
    assert [s for s, _ in seen] == list(range(1, 16)) and len(trainer.losses) == 15
    trainer.run(25)  # train again: the remaining steps
    np.testing.assert_array_equal(trainer.losses, full.losses)
    np.testing.assert_array_equal(trainer.attention(), full.attention)


def test_a_callback_returning_false_stops_train_early():
    r = training.train("two_lookups", h=4, steps=500, callback=lambda step, loss, t: step < 7)
    assert len(r.losses) == 7 and r.config["steps"] == 500


def test_checkpoints_record_the_model_as_it_learns():
    r = training.train("induction", h=2, layers=2, steps=30, checkpoints=[0, 10, 30])
    assert sorted(r.checkpoints) == [0, 10, 30]
    for step, c in r.checkpoints.items():
        assert c.step == step and c.attention.shape == (2, 2, 24, 24) and 0 <= c.accuracy <= 1
    assert r.checkpoints[0].loss > r.checkpoints[30].loss
    np.testing.assert_array_equal(r.checkpoints[30].attention, r.attention)
    for bad in ([31], [-1], [2.5], [True]):
        with pytest.raises(ValueError, match="^checkpoints:"):
            training.train("induction", h=2, steps=30, checkpoints=bad)


def test_two_layers_learn_induction_where_one_layer_cannot():
    one = training.train("induction", h=2, layers=1, steps=400)
    two = training.train("induction", h=2, layers=2, steps=400)
    loss_one, loss_two = one.trainer.evaluate()[0], two.trainer.evaluate()[0]
    # Measured (seed 0): one layer 0.42 right, loss 1.9; two layers 0.92 right, loss 0.35.
    assert two.accuracy > 0.85 and one.accuracy < 0.6
    assert loss_two < loss_one / 3
    assert two.attention.shape == (2, 2, 24, 24)


def test_two_lookups_batches_ask_for_the_tokens_one_and_two_back():
    b = training.make_batch("two_lookups", np.random.default_rng(0), 5, 7, 4)
    assert b.tokens.shape == (5, 7) and b.targets.shape == b.weights.shape == (5, 7, 2)
    for j, back in enumerate(training.LOOKUPS):
        np.testing.assert_array_equal(b.targets[:, back:, j], b.tokens[:, :-back])
        assert np.all(b.weights[:, :back, j] == 0)  # no token that far back yet
        assert math.isclose(b.weights[..., j].sum(), 1, rel_tol=1e-6)


def test_induction_batches_repeat_the_first_k_tokens_and_score_only_the_copy():
    b = training.make_batch("induction", np.random.default_rng(1), 200, 24, 32)
    scored = b.weights[..., 0] > 0
    assert math.isclose(b.weights.sum(), 1, rel_tol=1e-6)
    lengths = []
    for tokens, target, where in zip(b.tokens, b.targets[..., 0], scored, strict=True):
        t = np.flatnonzero(where)
        k = t[0]  # the copy starts at k, and positions k .. 2k-2 are scored
        np.testing.assert_array_equal(t, np.arange(k, 2 * k - 1))
        np.testing.assert_array_equal(tokens[k : 2 * k], tokens[:k])
        np.testing.assert_array_equal(target[t], tokens[t + 1 - k])  # the token after the earlier occurrence
        lengths.append(k)
    assert set(lengths) == set(range(training.REPEAT[0], training.REPEAT[1] + 1))


@pytest.mark.parametrize(("task", "layers"), [("two_lookups", 2), ("induction", 2)])
def test_the_whole_model_gradient_matches_central_differences(monkeypatch, task, layers):
    monkeypatch.setattr(training, "DTYPE", np.float64)  # float64, so differences of 1e-6 are exact enough
    sizes = {"d_model": 4, "n": 8, "vocab": 5}
    rng = np.random.default_rng(0)
    model = training.init_model(task, 2, layers, **sizes, rng=rng)
    batch = training.make_batch(task, rng, 3, sizes["n"], sizes["vocab"])
    loss, grad = training.loss_and_grads(model, batch)
    assert grad.shape == model.flat.shape and grad.dtype == np.float64
    start = model.flat.copy()
    for _ in range(3):  # random directions through every parameter at once
        u = rng.normal(size=start.shape)
        model.flat[:] = start + 1e-6 * u  # model.flat is what every parameter array views
        up = training.loss_and_grads(model, batch)[0]
        model.flat[:] = start - 1e-6 * u
        down = training.loss_and_grads(model, batch)[0]
        assert abs((up - down) / 2e-6 - grad @ u) < 1e-6 * (1 + abs(grad @ u))


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_a_diverging_run_stops_with_a_clear_message():
    with pytest.raises(FloatingPointError, match=r"^loss: became nan at step \d+: training diverged"):
        training.train("two_lookups", h=2, steps=20, lr=1e30)


@pytest.mark.parametrize(
    ("kwargs", "argument"),
    [
        ({"task": "three_lookups"}, "task"),
        ({"h": 3}, "h"),
        ({"h": 0}, "h"),
        ({"steps": 0}, "steps"),
        ({"lr": 0}, "lr"),
        ({"lr": -1e-3}, "lr"),
        ({"lr": float("nan")}, "lr"),
        ({"lr": "fast"}, "lr"),
        ({"layers": 0}, "layers"),
        ({"seed": -1}, "seed"),
        ({"batch": 0}, "batch"),
        ({"vocab": 1}, "vocab"),
        ({"n": 2}, "n"),
        ({"d_model": 15, "h": 1}, "d_model"),
        ({"d_ff": 64}, "d_ff"),
    ],
)
def test_bad_arguments_name_the_argument(kwargs, argument):
    args = {"task": "two_lookups", "h": 2} | kwargs
    with pytest.raises(ValueError, match=rf"^{argument}:"):
        training.train(args.pop("task"), **args)


def test_attention_on_a_chosen_sequence_checks_the_tokens():
    trainer = training.Trainer("two_lookups", h=2, steps=1)
    tokens = np.arange(16) % 16
    assert trainer.attention(tokens).shape == (1, 2, 16, 16)
    for bad in (np.arange(15), np.full(16, 16), np.full(16, 1.0)):
        with pytest.raises(ValueError, match="^tokens:"):
            trainer.attention(bad)


@pytest.mark.parametrize(
    "grad",
    [None, "abc", np.zeros(3) + 1j, np.full(3, np.nan), np.array([0.0, np.inf, 0.0]), np.float64(1.0), np.zeros(2),
     np.zeros((1, 3))],
    ids=["None", "a string", "complex", "NaN", "inf", "a scalar", "too short", "extra dim"],
)  # fmt: skip
def test_adam_step_refuses_a_bad_gradient_and_leaves_params_alone(grad):
    params = np.array([1.0, 2.0, 3.0])
    adam = training.Adam(params, 0.1)
    with pytest.raises(ValueError, match="^grad: expected .*got"):
        adam.step(grad)
    assert params.tolist() == [1.0, 2.0, 3.0] and adam.t == 0


@pytest.mark.parametrize(
    "kwargs, argument",
    [({"steps": -1}, "steps"), ({"steps": 1.5}, "steps"), ({"steps": True}, "steps"), ({"steps": None}, "steps"),
     ({"steps": 1, "callback": "print"}, "callback")],
)  # fmt: skip
def test_trainer_run_names_a_bad_argument_before_any_step(kwargs, argument):
    trainer = training.Trainer("two_lookups", h=2, steps=1, batch=2)
    with pytest.raises(ValueError, match=rf"^{argument}: expected .*got"):
        trainer.run(**kwargs)
    assert trainer.losses == []
