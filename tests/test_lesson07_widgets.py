"""Lesson 7's cross-attention explorer: controls change the numbers and the picture; a causal tick in
cross-attention keeps the picture and says in the readout that it is not applied."""

import numpy as np

from mha_lesson.demos import connections as conn
from mha_lesson.widgets import connections as wc


def test_cross_attention_explorer_colours_an_n_q_by_n_kv_block():
    ex = wc.cross_attention_explorer()
    assert ex.error is None
    before = ex.image.value
    ex.set(n_q=3, n_kv=9)
    assert ex.data["weights"].shape == (conn.X_H, 3, 9)
    for i, (im, w) in enumerate(zip(ex.images, ex.data["weights"], strict=True)):
        np.testing.assert_array_equal(im.get_array(), w)  # exactly the (n_q, n_kv) map, no padding cells
        assert im.axes.get_xlim() == (-0.5, 8.5) and im.axes.get_ylim() == (2.5, -0.5)  # the axes fit the map
        shown = [t.get_text() for t in im.axes.get_xticklabels() if -0.5 < t.get_position()[0] < 8.5]
        assert shown == [f"x{j}" for j in range(9)]
        assert im.axes.get_title() == f"head {i}: (3 × 9) weights"
    assert ex.image.value != before
    assert "(2, 3, 9)" in ex.text.value and "output: (3, 16)" in ex.text.value


def test_cross_attention_explorer_self_mode_and_causal():
    ex = wc.cross_attention_explorer()
    png, height = ex.image.value, ex.text.layout.min_height
    ex.controls["causal"].value = True  # causal in cross-attention mode: the same picture, a warning in the readout
    assert ex.error is None and ex.image.layout.display is None and ex.image.value == png
    assert "not applied" in ex.text.value and ex.text.value.count("<br>") == 1 and ex.text.layout.min_height == height
    assert ex.data["weights"].shape == (conn.X_H, 4, 6) and not ex.data["causal"]
    ex.controls["mode"].value = "self-attention"
    assert ex.error is None and ex.controls["n_kv"].disabled
    assert ex.controls["n_kv"].value == ex.controls["n_q"].value == 4  # one sequence: the greyed slider shows n_q
    assert "keys and values x" not in ex.text.value and "any other length" not in ex.text.value
    w = ex.data["weights"]
    assert w.shape == (conn.X_H, 4, 4) and np.all(np.triu(w, k=1) == 0)
    keys = [t.get_text() for t in ex.images[0].axes.get_xticklabels()]
    assert keys[:2] == ["y0", "y1"] and "decoder" in ex.images[0].axes.get_xlabel()  # one sequence: y on both axes
    ex.controls["n_q"].value = 7
    assert ex.controls["n_kv"].value == 7 and ex.data["weights"].shape == (conn.X_H, 7, 7)
    ex.set(causal=False, mode="cross-attention")  # the learner's n_kv = 6 comes back
    assert not ex.controls["n_kv"].disabled and ex.data["weights"].shape == (conn.X_H, 7, 6)
    assert ex.controls["n_kv"].value == 6


def test_cross_attention_title_counts_the_sequences_of_the_mode():
    ex = wc.cross_attention_explorer()
    assert ex.suptitle.get_text().startswith("two random sequences (decoder y, encoder x)")
    png = ex.image.value
    ex.controls["mode"].value = "self-attention"
    assert ex.suptitle.get_text().startswith("one random sequence y")  # one sequence: queries, keys and values
    assert ex.image.value != png
    ex.controls["mode"].value = "cross-attention"
    assert ex.suptitle.get_text().startswith("two random sequences") and ex.image.value == png
