"""The quiz widget's state machine, driven without a browser: through its methods and through its buttons."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mha_lesson.aids.flashcards import Card, load_deck, parse_deck
from mha_lesson.widgets.quiz import Quiz, quiz

DECK = "#flashcards/t\n## Lesson 02: A\n" + "\n".join(f"Q{i}? :: A{i} <b>&</b>" for i in range(5))
CARDS = parse_deck(DECK)


def enabled(q: Quiz) -> set[str]:
    return {name for name, b in q.buttons.items() if not b.disabled}


def test_order_is_a_permutation_fixed_by_the_seed():
    q = Quiz(CARDS, seed=0)
    expected = np.random.default_rng([0, 1]).permutation(5).tolist()
    assert q.pool == q.queue == expected
    assert Quiz(CARDS, seed=0).queue == q.queue
    assert any(Quiz(CARDS, seed=s).queue != q.queue for s in range(1, 5))


def test_start_shows_the_first_card_with_its_answer_hidden():
    q = Quiz(CARDS)
    assert q.current is CARDS[q.queue[0]] and not q.revealed
    assert f"Q{q.queue[0]}?" in q.question.value and q.answer.value == ""
    assert "Card 1 of 5" in q.progress.value and "Lesson 02: A" in q.progress.value
    assert enabled(q) == {"reveal", "skip", "restart"}


def test_reveal_shows_the_escaped_answer_and_enables_marking():
    q = Quiz(CARDS)
    q.reveal()
    assert f"A{q.queue[0]} &lt;b&gt;&amp;&lt;/b&gt;" in q.answer.value
    assert enabled(q) == {"right", "wrong", "skip", "restart"}


def test_marking_records_the_card_and_moves_to_the_next():
    q = Quiz(CARDS)
    first, second = q.queue[:2]
    q.reveal()
    q.mark(True)
    assert q.results == {first: True} and q.current is CARDS[second] and not q.revealed
    q.reveal()
    q.mark(False)
    assert q.score == (1, 2) and q.wrong == [second]
    assert "Card 3 of 5" in q.progress.value and "1 right, 1 wrong" in q.progress.value
    assert "retry" in enabled(q)


def test_marking_before_revealing_is_refused():
    q = Quiz(CARDS)
    with pytest.raises(ValueError, match="mark: expected the answer to be revealed first"):
        q.mark(True)
    assert q.results == {}


def test_skip_moves_the_card_to_the_back_without_marking_it():
    q = Quiz(CARDS)
    order = list(q.queue)
    q.reveal()
    q.skip()
    assert q.queue == order[1:] + order[:1] and q.results == {} and not q.revealed


def test_finishing_shows_the_score_and_only_restart_buttons():
    q = Quiz(CARDS)
    for i in range(5):
        q.reveal()
        q.mark(i % 2 == 0)
    assert q.finished and q.current is None and q.score == (3, 5)
    assert "You got 3 of 5 right (60%)" in q.question.value and "Round 1 done" in q.progress.value
    assert enabled(q) == {"restart", "retry"}
    with pytest.raises(ValueError, match="reveal: expected a card on screen"):
        q.reveal()


def test_retry_wrong_ones_starts_a_round_with_exactly_those_cards():
    q = Quiz(CARDS)
    for i in range(5):
        q.reveal()
        q.mark(i != 1)
    missed = q.wrong
    q.restart(wrong_only=True)
    assert q.round == 2 and q.pool == missed and q.results == {} and len(q.queue) == 1
    assert "Card 1 of 1" in q.progress.value and enabled(q) == {"reveal", "restart"}
    q.reveal()
    q.mark(True)
    with pytest.raises(ValueError, match="wrong_only: expected at least one card marked wrong"):
        q.restart(wrong_only=True)


def test_restart_reshuffles_with_the_next_round_seed():
    q = Quiz(CARDS, seed=7)
    q.reveal()
    q.mark(False)
    q.restart()
    assert q.round == 2 and q.results == {}
    assert q.queue == np.random.default_rng([7, 2]).permutation(5).tolist()


def test_buttons_drive_the_same_transitions_as_the_methods():
    by_buttons, by_methods = Quiz(CARDS, seed=3), Quiz(CARDS, seed=3)
    for name, action in [
        ("reveal", by_methods.reveal),
        ("wrong", lambda: by_methods.mark(False)),
        ("skip", by_methods.skip),
        ("reveal", by_methods.reveal),
        ("right", lambda: by_methods.mark(True)),
        ("restart", by_methods.restart),
    ]:
        by_buttons.buttons[name].click()
        action()
        assert (by_buttons.queue, by_buttons.results, by_buttons.revealed) == (
            by_methods.queue,
            by_methods.results,
            by_methods.revealed,
        )
        assert by_buttons.question.value == by_methods.question.value


def test_a_click_that_does_not_apply_shows_a_message_instead_of_a_traceback():
    q = Quiz(CARDS)
    q.buttons["right"].click()  # disabled in the page; a programmatic click still reaches the handler
    assert "expected the answer to be revealed first" in q.message.value and q.results == {}
    q.buttons["reveal"].click()
    assert q.message.value == ""


def test_display_bundle_has_the_live_widget_and_a_static_list_of_every_card():
    q = Quiz(CARDS)
    bundle = q._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert bundle["text/html"].count("<li>") == 5 and "&lt;b&gt;" in bundle["text/html"]


def test_default_quiz_uses_the_series_deck():
    assert quiz().cards == load_deck()
    with pytest.raises(ValueError, match="cards: expected at least one card"):
        Quiz([])


@given(st.lists(st.sampled_from(["reveal", "right", "wrong", "skip", "restart", "retry"]), max_size=40))
def test_any_sequence_of_clicks_keeps_the_state_consistent(clicks):
    q = Quiz(CARDS[:4], seed=1)
    for name in clicks:
        if not q.buttons[name].disabled:
            q.buttons[name].click()
            assert q.message.value == ""  # an enabled button always applies
        assert len(q.results) + len(q.queue) == len(q.pool)
        assert set(q.results).isdisjoint(q.queue) and set(q.results) | set(q.queue) == set(q.pool)
        assert q.score == (sum(q.results.values()), len(q.results))
        assert q.buttons["right"].disabled == q.buttons["wrong"].disabled == (not q.revealed)
        assert q.buttons["reveal"].disabled == (q.finished or q.revealed)
        assert q.buttons["retry"].disabled == (not q.wrong)
        assert isinstance(q.current, Card) != q.finished
