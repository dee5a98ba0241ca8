"""The two tracks: every lesson's metadata, its size, its takeaways, its links, and the pages built from them."""

import ast
import json
import re

import pytest

from mha_lesson.aids import glossary as gl
from mha_lesson.aids import lessons as ls

PATHS = ls.lesson_paths()
ALL_NOTEBOOKS = sorted(ls.NOTEBOOKS.glob("*.ipynb"))
CORE_WORDS = 1_550  # "at most about 1,500 words" of prose before Going deeper
# "at most about 60 minutes"; raised to 75 because a fresh reader measured the main parts of lessons 14 (75 minutes)
# and 19 (85, before its evidence lists moved to Going deeper) in the issue-32 review, and stated minutes follow them.
DEEPER_MINUTES = 75
# The deeper lessons a fresh reader timed (aids.lessons.DEEPER_READER_MINUTES): they state those minutes within 15%.
READER_MINUTES = ls.DEEPER_READER_MINUTES


def headings(nb: dict) -> list[tuple[int, str]]:
    """(cell index, heading line) for every level-2 heading in a Markdown cell."""
    return [
        (i, line)
        for i, c in enumerate(nb["cells"])
        if c["cell_type"] == "markdown"
        for line in ls.cell_text(c).splitlines()
        if line.startswith("## ")
    ]


@pytest.mark.parametrize("path", PATHS, ids=lambda p: p.stem)
def test_every_lesson_states_its_track_and_minutes(path):
    lesson = ls.read_lesson(path)  # raises, naming the notebook, when the metadata is missing or malformed
    assert lesson.title, path.name


def test_the_core_path_fits_its_budget_and_the_tracks_are_in_reading_order():
    lessons = ls.read_lessons()
    assert ls.core_path_minutes(lessons) <= ls.CORE_BUDGET_MINUTES
    tracks = [x.track for x in lessons]
    assert tracks[0] == "start" and tracks[-1] == "review"
    core = [i for i, t in enumerate(tracks) if t == "core"]
    assert core == list(range(1, len(core) + 1)), "the core lessons come first, right after the start page"
    assert "capstone" in lessons[core[-1]].stem, "the core path ends with the capstone"


@pytest.mark.parametrize("path", PATHS, ids=lambda p: p.stem)
def test_lesson_size_fits_its_track(path):
    lesson, nb = ls.read_lesson(path), ls.load(path)
    if lesson.track == "core":
        words = ls.prose_words(ls.worked_cells(nb))
        assert words <= CORE_WORDS, f"{words} words of prose before '## Going deeper' (at most about 1,500)"
        assert 5 <= lesson.minutes <= 30, lesson.minutes
    elif lesson.track == "deeper":
        assert lesson.minutes <= DEEPER_MINUTES, lesson.minutes


@pytest.mark.parametrize("path", PATHS, ids=lambda p: p.stem)
def test_stated_minutes_agree_with_the_estimate(path):
    # The rule's largest error against a reader's measured minutes is 39% (see mha_lesson.aids.lessons): 40% of the
    # stated minutes leaves it that margin. This bound is looser than the 15% a measured lesson keeps to its reader.
    lesson, nb = ls.read_lesson(path), ls.load(path)
    if path.stem in ls.READER_MINUTES:  # a timed core lesson: its reader's minutes bind (the test below)
        return
    if path.stem in READER_MINUTES:
        measured = READER_MINUTES[path.stem]
        assert abs(lesson.minutes - measured) <= 0.15 * measured, (lesson.minutes, measured)
        return
    estimate = ls.estimate_minutes(nb)
    assert abs(lesson.minutes - estimate) <= max(5, 0.4 * lesson.minutes), (lesson.minutes, estimate)


def test_a_measured_lesson_states_its_readers_minutes_within_15_percent():
    """The reader's minutes (aids.lessons.READER_MINUTES, who and when in READER) against what each lesson states;
    1 minute is allowed where 15% is less (the start page: 8.5 minutes, the mean of 7 and 10)."""
    assert "newcomer" in ls.READER and "issue 31" in ls.READER
    core = {x.stem: x for x in ls.read_lessons() if x.track in ("start", "core")}
    assert set(ls.READER_MINUTES) == set(core), "every core lesson and the start page have a reader's minutes"
    for stem, measured in ls.READER_MINUTES.items():
        stated = core[stem].minutes
        assert abs(stated - measured) <= max(1, ls.READER_TOLERANCE * measured), (stem, stated, measured)
    # 5, not less: a core lesson states at most 30 minutes (the capstone, read in 35, states 30)
    assert abs(sum(ls.READER_MINUTES.values()) - ls.core_path_minutes(list(core.values()))) <= 5


def test_estimate_counts_reading_code_figures_explorers_and_exercises():
    def md(text):
        return {"cell_type": "markdown", "source": text}

    def code(text):
        return {"cell_type": "code", "source": text}

    nb = {"cells": [md("word " * 1800), code("x = 1"), code("fig, ax = plt.subplots()"), code("tiled_explorer()")]}
    assert ls.counts(nb) == {
        "words": 1800,
        "code cells": 3,
        "figures": 1,
        "explorers": 1,
        "exercises": 0,
        "functions": 0,
    }
    assert ls.estimate_minutes(nb) == round(10 + 3 * 0.4 + 2 + 2)  # 15.2 -> 15
    nb["cells"] += [code("layer_diagram(3)"), code("ex.check_one(a)"), code("ex.check_two(b)")]
    nb["cells"] += [md("## Going deeper"), md("word " * 5000), code("ex.check_three(c)")]
    # the layer's picture is a code cell, not a figure; Going deeper is left out
    assert ls.counts(nb) == {
        "words": 1800,
        "code cells": 6,
        "figures": 1,
        "explorers": 1,
        "exercises": 2,
        "functions": 0,
    }
    assert ls.estimate_minutes(nb) == round(10 + 6 * 0.4 + 2 + 2 + 2 * 4)  # 24.4 -> 24
    # a function the learner writes from scratch (the capstone's my_...) adds 3 minutes; a helper the cell defines not
    nb["cells"].insert(-3, code("def my_split(x, h):\n    return None\n\n\ndef my_merge(x):\n    return None\n"))
    nb["cells"].insert(-3, code("def helper(x):\n    return x\n"))
    assert ls.counts(nb)["functions"] == 2 and ls.counts(nb)["code cells"] == 8
    assert ls.estimate_minutes(nb) == round(10 + 8 * 0.4 + 2 + 2 + 2 * 4 + 2 * 3)  # 31.2 -> 31


def _md(text):
    return {"cell_type": "markdown", "source": text}


def _code(text):
    return {"cell_type": "code", "source": text}


def test_sections_cut_the_worked_part_at_its_headings_and_share_out_its_minutes():
    nb = {
        "cells": [
            _md("# Lesson 1: T\n\n" + "w " * 100),
            _code("x = 1"),
            _md("## 1. First\n" + "w " * 360 + "\n## 2. Second\n" + "w " * 180),  # a heading inside a cell
            _code("fig, ax = plt.subplots()"),
            _md("## Exercises\n### Exercise 1\n" + "w " * 90),
            _code("ex.check_one(a)"),
            _md("### Exercise 2\n"),
            _code("ex.check_two(b)"),
            _md("## Recap in Hinglish\n" + "w " * 90),
            _md("## Going deeper\n" + "w " * 9000),
        ]
    }
    assert ls.section_headings(nb) == [
        "1. First",
        "2. Second",
        "Exercises",
        "Exercise 1",
        "Exercise 2",
        "Recap in Hinglish",
    ]
    assert ls.prose_words(ls.section_cells(nb, "1. First")) == 3 + 360  # its heading line counts too
    second = ls.section_cells(nb, "2. Second")
    assert ls.prose_words(second) == 3 + 180 and [c["cell_type"] for c in second] == ["markdown", "code"]
    assert len(ls.section_cells(nb, "Exercises")) == 5 and len(ls.section_cells(nb, "Exercise 1")) == 2  # 5 pieces
    # the opening and the level-2 sections partition the worked part: their minutes add up to the lesson's
    level2 = ["1. First", "2. Second", "Exercises", "Recap in Hinglish"]
    parts = [ls.raw_minutes(nb, [c for lv, _, c in ls.pieces(nb) if lv == 1])]
    parts += [ls.raw_minutes(nb, ls.section_cells(nb, h)) for h in level2]
    assert sum(parts) == pytest.approx(ls.raw_minutes(nb))
    assert ls.stop_minutes(nb, 30, ()) == pytest.approx(30 * (1 - parts[-1] / sum(parts)))  # all but the recap
    with pytest.raises(ValueError, match="^heading: expected one of"):
        ls.section_cells(nb, "3. Third")


def test_every_section_a_route_names_is_a_heading_of_that_lessons_worked_part():
    for route in ls.ROUTES:
        for stem, sections in route.stops:
            path = ls.NOTEBOOKS / f"{stem}.ipynb"
            assert path.exists(), f"route {route.name}: no lesson {stem}"
            nb = ls.load(path)
            lines = {
                line[line.index(" ") + 1 :].strip()
                for c in ls.worked_cells(nb)
                if c["cell_type"] == "markdown"
                for line in ls.cell_text(c).splitlines()
                if line.startswith(("## ", "### "))
            }
            for heading in sections:
                assert heading in lines, f"route {route.name}: {stem} has no heading {heading!r} before Going deeper"


def test_the_routes_fit_their_names_and_reach_the_mask_and_a_working_layer():
    budgets = {"2 hours": 120, "90 minutes": 90}
    assert [r.name for r in ls.ROUTES] == list(budgets)
    for route in ls.ROUTES:
        minutes = ls.route_minutes(route)
        assert 0.85 * budgets[route.name] <= minutes <= 1.05 * budgets[route.name], (route.name, minutes)
        stops = dict(route.stops)
        assert "1. The causal mask for decoders" in stops["07_causal_mask"] or stops["07_causal_mask"] == ()
        assert "Stage 1: one head" in stops["09_capstone"]  # the learner's own attention, checked
        assert "Stage 2: the whole layer" in stops["09_capstone"]  # and the learner's own multi-head layer
        assert set(ls.ATTENTION[1:]) <= set(stops["04_scaled_dot_product_attention"])  # heads, and why scaled
        assert [s for s, _ in route.stops] == sorted(s for s, _ in route.stops)  # in reading order
    assert ls.route_minutes(ls.ROUTES[1]) < ls.route_minutes(ls.ROUTES[0]) < ls.core_path_minutes(ls.read_lessons())


def test_a_stops_own_minutes_are_fitted_on_the_route_readers_and_each_route_read_comes_out_within_15_percent():
    """route_stop_minutes() is the route readers' mean minutes beyond each stop's share of its lesson, over every stop
    they read; with it, every route read states its reader's total within 15%."""
    beyond = []
    for reading in ls.ROUTE_READINGS:
        assert "route reader" in reading.reader and len(reading.stops) == len(reading.minutes)
        for (stem, sections), measured in zip(reading.stops, reading.minutes, strict=True):
            path = ls.NOTEBOOKS / f"{stem}.ipynb"
            beyond.append(measured - ls.stop_minutes(ls.load(path), ls.read_lesson(path).minutes, sections, stem))
    assert len(beyond) == 32 and ls.route_stop_minutes() == pytest.approx(sum(beyond) / len(beyond), abs=0.05)
    for reading in ls.ROUTE_READINGS:
        stated, read = ls.route_minutes(ls.Route("read", "", reading.stops)), sum(reading.minutes)
        assert abs(stated - read) <= 0.15 * read, (reading.reader, stated, read)


def test_the_extra_a_route_offers_is_what_both_routes_leave_out():
    for stem, sections in ls.ROUTE_EXTRA.stops:
        headings = ls.section_headings(ls.load(ls.NOTEBOOKS / f"{stem}.ipynb"))
        assert set(sections) <= set(headings), stem
        assert all(stem not in dict(route.stops) for route in ls.ROUTES), stem
    block = ls.routes_markdown()
    assert f"With about {ls.route_minutes(ls.ROUTE_EXTRA)} minutes more" in block and "$W^O$ in blocks" in block


def test_a_readers_section_minutes_name_the_lessons_headings_and_add_up_to_that_readers_minutes():
    fifth = dict(zip(ls.CORE_STEMS, ls.READERS["fifth"], strict=True))
    assert "fifth" in ls.SECTION_READER
    for stem, measured in ls.SECTION_MINUTES.items():
        nb = ls.load(ls.NOTEBOOKS / f"{stem}.ipynb")
        assert set(measured) - {""} <= set(ls.section_headings(nb)), stem
        assert sum(measured.values()) == fifth[stem], stem
    # a route's share of a measured lesson follows the reader, not the rule: lesson 7's exercises took them 3 of 26
    nb = ls.load(ls.NOTEBOOKS / "07_causal_mask.ipynb")
    assert ls.stop_minutes(nb, 26, ("Exercises",), "07_causal_mask") == pytest.approx(6)  # opening 3 + 3
    assert ls.stop_minutes(nb, 26, (), "07_causal_mask") == pytest.approx(26)


def test_start_page_routes_are_generated_and_sit_outside_the_table():
    nb = ls.load(ls.NOTEBOOKS / f"{ls.START_PAGE}.ipynb")
    i, block = ls.generated_block(nb, ls.ROUTES_BEGIN, ls.ROUTES_END)
    assert block == ls.routes_markdown(), "run: python -m mha_lesson.aids.lessons --write"
    assert i != ls.generated_block(nb, ls.BEGIN, ls.END)[0]
    for route in ls.ROUTES:
        assert f"{route.name}: about {ls.route_minutes(route)} min" in block


@pytest.mark.parametrize("path", PATHS, ids=lambda p: p.stem)
def test_english_takeaways_come_right_before_the_hinglish_recap(path):
    nb = ls.load(path)
    heads = [h for _, h in headings(nb)]
    assert heads.count("## Key takeaways") == 1, heads
    k = heads.index("## Key takeaways")
    assert heads[k + 1] == "## Recap in Hinglish", heads
    cell = next(c for c in nb["cells"] if "## Key takeaways" in ls.cell_text(c))
    bullets = [line for line in ls.cell_text(cell).splitlines() if line.startswith("- ")]
    assert 3 <= len(bullets) <= 6, bullets


@pytest.mark.parametrize("path", PATHS, ids=lambda p: p.stem)
def test_going_deeper_follows_the_recap_in_a_core_lesson(path):
    lesson, nb = ls.read_lesson(path), ls.load(path)
    heads = [h for _, h in headings(nb)]
    deeper = [i for i, h in enumerate(heads) if h.startswith("## Going deeper")]
    if lesson.track != "core":
        return
    assert len(deeper) <= 1
    if deeper:
        assert heads.index("## Recap in Hinglish") < deeper[0], "the optional part comes after the lesson's recap"


@pytest.mark.parametrize("path", ALL_NOTEBOOKS, ids=lambda p: p.stem)
def test_no_lesson_quotes_a_note_the_learner_has_never_seen(path):
    text = path.read_text(encoding="utf-8").lower()
    for phrase in ("study note", "seed note"):
        assert phrase not in text, phrase


@pytest.mark.parametrize("path", PATHS, ids=lambda p: p.stem)
def test_markdown_code_cells_hold_a_sentence_not_paragraphs(path):
    for i, cell in enumerate(ls.load(path)["cells"]):
        src = ls.cell_text(cell)
        if cell["cell_type"] != "code" or "Markdown(" not in src:
            continue
        tree = ast.parse("\n".join(line for line in src.splitlines() if not line.lstrip().startswith(("%", "!"))))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Markdown":
                words = sum(
                    len(s.value.split())
                    for s in ast.walk(node)
                    if isinstance(s, ast.Constant) and isinstance(s.value, str)
                )
                assert words <= 40, f"cell {i}: Markdown(...) with {words} words: prose goes in Markdown cells"


@pytest.mark.parametrize("path", ALL_NOTEBOOKS, ids=lambda p: p.stem)
def test_no_cell_displays_what_show_source_returns(path):
    """show_source displays its listing and returns None: display(show_source(f)) prints a stray "None"."""
    for i, c in enumerate(ls.load(path)["cells"]):
        if c["cell_type"] == "code":
            assert not re.search(r"display\(\s*(mha\.)?show_source\(", ls.cell_text(c)), f"cell {i}"


@pytest.mark.parametrize("path", ALL_NOTEBOOKS, ids=lambda p: p.stem)
def test_every_link_to_a_notebook_and_a_glossary_term_resolves(path):
    anchors = {t.anchor for t in gl.TERMS}
    text = "\n".join(ls.cell_text(c) for c in ls.load(path)["cells"] if c["cell_type"] == "markdown")
    for target, anchor in re.findall(r"\]\(([\w.-]+\.ipynb)(?:#([^)\s]*))?\)", text):
        assert (ls.NOTEBOOKS / target).exists(), f"link to {target}, which is not in notebooks/"
        if target == gl.page().name and anchor:
            assert anchor in anchors | {gl.ANCHOR}, f"glossary link #{anchor}: no such term"


def test_lessons_link_their_neighbours():
    for prev, nxt in zip(PATHS, PATHS[1:], strict=False):
        text = "\n".join(ls.cell_text(c) for c in ls.load(prev)["cells"] if c["cell_type"] == "markdown")
        assert f"]({nxt.name})" in text, f"{prev.name} does not link to the next lesson, {nxt.name}"


def test_start_page_table_is_generated_from_the_metadata():
    nb = ls.load(ls.NOTEBOOKS / f"{ls.START_PAGE}.ipynb")
    _, block = ls.generated_block(nb, ls.BEGIN, ls.END)
    assert block == ls.curriculum_markdown(ls.read_lessons()), "run: python -m mha_lesson.aids.lessons --write"
    lessons = ls.read_lessons()
    assert f"about {ls.core_path_minutes(lessons)} minutes" in block
    for lesson in lessons[1:]:
        assert f"]({lesson.stem}.ipynb) | {lesson.minutes} min |" in block


def test_start_page_table_shows_each_deeper_lessons_needs_and_each_lesson_states_them_first():
    lessons = ls.read_lessons()
    _, block = ls.generated_block(ls.load(ls.NOTEBOOKS / f"{ls.START_PAGE}.ipynb"), ls.BEGIN, ls.END)
    stems = {x.number: x.stem for x in lessons}
    for lesson in lessons:
        if lesson.track != "deeper":
            continue
        row = next(line for line in block.splitlines() if f"]({lesson.stem}.ipynb) |" in line)
        needs = row.rstrip(" |").rsplit(" | ", 1)[1]
        linked = [int(k) for k in re.findall(r"\[(\d+)\]\(\d\d_", needs)]
        assert linked == list(lesson.needs), (lesson.stem, row)
        if not lesson.needs:
            assert needs == "the core path only", row
        first = ls.cell_text(ls.load(ls.NOTEBOOKS / f"{lesson.stem}.ipynb")["cells"][0])
        line = next((x for x in first.split("\n\n") if x.startswith("**Needs:**")), "")
        assert line, f"{lesson.stem}: the first cell does not state what it needs"
        for k in lesson.needs:
            assert f"]({stems[k]}.ipynb)" in line, f"{lesson.stem}: its first cell does not name lesson {k}"
    assert "in any order" not in block.split("### The deeper track")[1].split("\n")[0]


def test_a_lessons_needs_are_earlier_lessons_listed_once(tmp_path):
    path = tmp_path / "14_x.ipynb"
    for needs, ok in (
        ([12, 13], True),
        ([15], False),
        ([14], False),
        ([13, 12], False),
        ([12, 12], False),
        ("12", False),
    ):
        meta = {"mha_lesson": {"track": "deeper", "minutes": 30, "needs": needs}}
        path.write_text(
            json.dumps({"cells": [{"cell_type": "markdown", "source": "# Lesson 14: X"}], "metadata": meta})
        )
        if ok:
            assert ls.read_lesson(path).needs == tuple(needs)
        else:
            with pytest.raises(ValueError, match="14_x.ipynb: expected needs"):
                ls.read_lesson(path)
    for lesson in ls.read_lessons():  # the committed lessons: every need is an earlier deeper lesson
        assert all(10 <= k < lesson.number for k in lesson.needs), lesson


def test_curriculum_markdown_puts_each_lesson_in_its_track():
    lessons = [
        ls.Lesson("00_start", "Start", "start", 10),
        ls.Lesson("01_a", "A", "core", 20),
        ls.Lesson("02_b", "B", "deeper", 50),
        ls.Lesson("03_r", "R", "review", 20),
    ]
    text = ls.curriculum_markdown(lessons)
    core, deeper = text.split("### The deeper track")
    assert "about 30 minutes" in core and "[A](01_a.ipynb) | 20 min" in core and "02_b" not in core
    assert "1 hours 10 minutes" in deeper and "02_b" in deeper and "03_r" in deeper


def test_read_lesson_names_the_notebook_and_what_is_wrong(tmp_path):
    path = tmp_path / "05_x.ipynb"
    path.write_text('{"cells": [], "metadata": {"mha_lesson": {"track": "core", "minutes": 0}}}', encoding="utf-8")
    with pytest.raises(ValueError, match=r"05_x.ipynb: expected minutes as a positive integer, got 0"):
        ls.read_lesson(path)
    path.write_text('{"cells": [], "metadata": {}}', encoding="utf-8")
    with pytest.raises(ValueError, match=r"05_x.ipynb: expected notebook metadata 'mha_lesson'"):
        ls.read_lesson(path)


def test_glossary_is_the_review_lessons_last_section_generated_from_its_terms():
    gl.check_terms()
    review = ls.load(gl.page())
    i, block = ls.generated_block(review, gl.BEGIN, gl.END)
    assert block == gl.glossary_markdown(), "run: python -m mha_lesson.aids.glossary --write"
    assert i == len(review["cells"]) - 1 and ls.read_lesson(gl.page()).track == "review"
    start = ls.load(ls.NOTEBOOKS / "00_start_here.ipynb")["cells"]
    link = f"]({gl.page().name}#{gl.ANCHOR})"
    assert any(link in ls.cell_text(c) for c in start if c["cell_type"] == "markdown")


def lesson_words(stem: str) -> str:
    """A lesson's cells (prose and code) in lower case with whitespace collapsed, without the generated glossary."""
    text = "\n".join(ls.cell_text(c) for c in ls.load(ls.NOTEBOOKS / f"{stem}.ipynb")["cells"])
    if gl.BEGIN in text:
        text = text[: text.index(gl.BEGIN)] + text[text.index(gl.END) :]
    return re.sub(r"\s+", " ", text.lower())


@pytest.mark.parametrize("term", gl.TERMS, ids=lambda t: t.term)
def test_every_glossary_entry_points_at_a_lesson_that_uses_the_term(term):
    words = lesson_words(term.lesson)
    for spelling in term.spelled or (term.term,):
        assert spelling in words, f"{term.lesson} never writes {spelling!r}"


def test_the_glossary_pointers_the_issue_found_wrong_now_point_where_the_term_is_used():
    by_term = {t.term: t.lesson for t in gl.TERMS}
    assert "logit" not in lesson_words("04_scaled_dot_product_attention")
    assert by_term["logit"] != "04_scaled_dot_product_attention"
    assert by_term["residual stream"] == "13_training_heads"  # lesson 13 introduces it, before lesson 14


@pytest.mark.parametrize(
    ("term", "message"),
    [
        (gl.Term("Residual", "x", "01_one_head_is_not_enough"), "lower-case"),
        (gl.Term("w^o", "x", "06_output_projection"), "lower-case"),  # a heading with a raw caret
        (gl.Term("x", "x", "99_nowhere"), "existing lesson"),
        (gl.TERMS[0], "twice"),
    ],
)
def test_check_terms_names_what_is_wrong(term, message):
    with pytest.raises(ValueError, match=message):
        gl.check_terms((*gl.TERMS, term))


def test_the_review_counts_the_softmax_as_lesson_10_does_and_quizzes_one_part():
    from mha_lesson import cost

    cells = ls.load(gl.page())["cells"]
    prose = " ".join(ls.cell_text(c) for c in cells if c["cell_type"] == "markdown")
    assert re.findall(r"\$(\d)\\,h\\,n\^2\$ FLOPs as lesson 10 counts it", prose) == [str(cost.SOFTMAX_OPS_PER_WEIGHT)]
    assert "$h n^2$ work" not in prose
    code = "\n".join(ls.cell_text(c) for c in cells if c["cell_type"] == "code")
    assert "quiz(seed" not in code and "select_cards(cards, track=" in code and "quiz_minutes(" in code


def test_lesson_4_cites_the_transformer_papers_footnote_for_the_variance_argument():
    nb = ls.load(ls.NOTEBOOKS / "04_scaled_dot_product_attention.ipynb")
    section = ls.section_cells(nb, "4. Sharp rows, and why divide by √d_k")  # the core section with the argument
    cell = next(ls.cell_text(c) for c in section if r"\mathrm{Var}(q \cdot k) = d_k" in ls.cell_text(c))
    assert r"\mathrm{Var}(q \cdot k) = d_k" in cell and "section 3.2.1, footnote 4" in cell


def test_the_readme_states_the_routes_minutes_the_start_page_computes():
    readme = " ".join((ls.NOTEBOOKS.parent / "README.md").read_text(encoding="utf-8").split())  # lines joined
    two_hours, ninety = (ls.route_minutes(route) for route in ls.ROUTES)
    assert f"**2 hours** (about {two_hours} minutes" in readme and f"**90 minutes** (about {ninety}:" in readme
    assert f"as the next {ls.route_minutes(ls.ROUTE_EXTRA)} minutes" in readme
    assert f"a fitted allowance of {ls.route_stop_minutes():g} minutes a stop" in readme
