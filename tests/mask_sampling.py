"""Random boolean masks for property tests (a module of its own: two conftest.py files share one name)."""


def random_mask(rng, target):
    """A boolean mask that broadcasts to target (..., n_q, n_kv): some dimensions 1, leading ones maybe dropped."""
    # The structure comes from rng rather than from hypothesis draws, whose bias toward simple values
    # would mostly give all-False masks of size 1; rng is seeded from a draw, so runs stay deterministic.
    shape = tuple(n if rng.random() < 0.7 else 1 for n in target)[rng.integers(0, len(target) - 1) :]
    mask = rng.random(shape) < rng.choice([0.3, 0.6, 0.9, 0.0, 1.0], p=[0.3, 0.3, 0.2, 0.1, 0.1])
    if shape[-2] > 1 and rng.random() < 0.4:
        mask[..., rng.integers(shape[-2]), :] = False  # one query that may attend to nothing
    return mask
