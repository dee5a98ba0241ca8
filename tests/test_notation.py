"""No raw caret where a learner reads: W^O, W_i^Q and R^2 as HTML superscripts in exercise feedback and the quiz,
maths in the start page and figure labels, Unicode in the static site's plain-text titles (issue 30)."""

import ast
import html
import re
from pathlib import Path

import pytest

from mha_lesson import notation
from mha_lesson.aids import concept_map as cm
from mha_lesson.aids import lessons
from mha_lesson.exercises import Feedback, lesson03, lesson06
from mha_lesson.widgets.quiz import Quiz
from website import conf
from website.build import index_page

PACKAGE = Path(notation.__file__).parent


@pytest.mark.parametrize(
    ("typed", "shown"),
    [
        ("W^O", "W<sup>O</sup>"),
        ("X W_i^Q has", "X W<sub>i</sub><sup>Q</sup> has"),
        ("head_i W^O_i.", "head_i W<sup>O</sup><sub>i</sub>."),
        ("R^2 = 1", "R<sup>2</sup> = 1"),
        ("by base^(-2j/d_k) radians", "by base<sup>−2j/d_k</sup> radians"),
        ("||v W^O||", "||v W<sup>O</sup>||"),
        ("(R^-T = R)", "(R<sup>−T</sup> = R)"),
        ("W_i^Kᵀ", "W<sub>i</sub><sup>K</sup>ᵀ"),
        ("(W^K M)^T", "(W<sup>K</sup> M)<sup>T</sup>"),
        ("$W^O$ and `a ^ b`", "$W^O$ and `a ^ b`"),  # maths for MathJax and code keep their text
    ],
)
def test_html_scripts_writes_superscripts_and_subscripts(typed, shown):
    assert notation.html_scripts(typed) == shown


def test_html_scripts_without_mathjax_and_plain_scripts():
    assert notation.html_scripts("Lesson 06: The output projection $W^O$", mathjax=False).endswith("W<sup>O</sup>")
    assert notation.plain_scripts("The output projection $W^O$") == "The output projection Wᴼ"
    assert notation.plain_scripts("$x^{2}$ and R^2") == "x² and R²"
    with pytest.raises(ValueError, match=r"'\^Q'"):  # Unicode has no superscript capital Q
        notation.plain_scripts("$W^Q$")


def test_raw_carets_ignores_maths_and_code_only():
    assert notation.raw_carets("$W^O$, $$a^2$$, `x ^ y`, W<sup>O</sup>") == []
    assert len(notation.raw_carets("the $W^O$ block W^O_i")) == 1


def strings(path: Path) -> list[str]:
    """The string literals of a module but its docstrings; an f-string's {...} stands as the word 'x'."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docs = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.FunctionDef | ast.ClassDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    out, parts = [], set()
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            out.append("".join(v.value if isinstance(v, ast.Constant) else "x" for v in node.values))
            parts |= {id(v) for v in node.values}
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs | parts:
            out.append(node.value)
    return out


@pytest.mark.parametrize("path", sorted((PACKAGE / "exercises").glob("lesson*.py")), ids=lambda p: p.stem)
def test_every_exercise_message_shows_no_raw_caret(path):
    """Each hint or remark a check can return, as the notebook shows it (Feedback's HTML)."""
    for text in strings(path):
        shown = Feedback(False, text)._repr_html_()
        assert notation.raw_carets(shown) == [], (text, shown)


def test_feedback_from_a_check_shows_superscripts():
    shown = lesson06.check_block_shape((512, 64))._repr_html_()  # W^Q's shape, not W^O_i's
    assert "W<sub>i</sub><sup>Q</sup>" in shown and "W<sup>O</sup><sub>i</sub>" in shown and "^" not in shown
    feedback = lesson03.check_head_shape((10, 64))
    assert "W^Q" in feedback.message and "X W<sup>Q</sup>" in feedback._repr_html_()  # plain text keeps the caret
    assert html.escape("<") in Feedback(False, "a < b, W^O")._repr_html_()  # still escaped


@pytest.mark.parametrize("path", sorted((PACKAGE / "plots").glob("*.py")), ids=lambda p: p.stem)
def test_figure_text_in_the_plots_shows_no_raw_caret(path):
    """Every title, label and legend the plotting modules write (a lone "^" is matplotlib's triangle marker)."""
    for text in strings(path):
        assert text == "^" or notation.raw_carets(text) == [], text


def test_lesson_titles_and_the_start_page_show_no_raw_caret():
    found = lessons.read_lessons()
    for text in [ls.title for ls in found] + [lessons.curriculum_markdown(found), lessons.routes_markdown()]:
        assert notation.raw_carets(text) == [], text
    assert notation.raw_carets(cm.markdown_table()) == []
    assert "$W^O$" in cm.LESSONS["06_output_projection"]


def test_the_sites_sidebar_and_tab_titles_are_plain_text():
    home = index_page(lessons.read_lessons())
    entries = re.findall(r"^(.+) <\d\d_\w+>$", home, re.MULTILINE)
    assert len(entries) == len(lessons.read_lessons())
    assert "The output projection Wᴼ · " in home and not [e for e in entries if "$" in e or "^" in e]
    context = {
        "title": 'Lesson 6: The output projection <span class="math notranslate nohighlight">\\(W^O\\)</span>',
        "pagetitle": "Lesson 6: The output projection W^O",
    }
    conf._plain_titles(None, "06_output_projection", "page.html", context, None)
    assert context == {"title": "Lesson 6: The output projection Wᴼ", "pagetitle": "Lesson 6: The output projection Wᴼ"}


def test_the_quiz_shows_card_headings_and_answers_without_caret_or_dollar():
    page = Quiz().static_html()
    assert "W<sup>O</sup>" in page and notation.raw_carets(page) == [] and "$" not in page
    quiz = Quiz([card for card in Quiz().cards if "$" in card.section][:1])
    assert "The output projection W<sup>O</sup>" in quiz.progress.value
