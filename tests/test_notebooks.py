"""Every lesson runs top to bottom in a fresh kernel with no error output."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


@pytest.mark.notebook
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs_without_errors(path, executed_notebook):
    nb = executed_notebook(path)  # a cell that raises fails here, naming the notebook and the cell
    for i, cell in enumerate(nb.cells):
        for out in cell.get("outputs", []):
            assert out.get("output_type") != "error", f"cell {i}: {out.get('ename')}: {out.get('evalue')}"
            if out.get("output_type") == "stream" and out.get("name") == "stderr":
                assert "Traceback" not in out["text"] and "Warning" not in out["text"], f"cell {i}: {out['text']}"


def _listings(cell) -> int:
    """How many syntax-highlighted source listings a cell's outputs hold."""
    return sum(
        1
        for out in cell.get("outputs", [])
        if out.get("output_type") in ("display_data", "execute_result")
        and 'class="highlight' in str(out.get("data", {}).get("text/html", ""))
    )


@pytest.mark.notebook
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_listing_a_lesson_asks_for_appears_in_its_output(path, executed_notebook):
    nb = executed_notebook(path)
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        calls = len(re.findall(r"\bshow_source\(", cell.source))
        assert _listings(cell) >= calls, f"cell {i}: {calls} show_source calls, {_listings(cell)} listings shown"
