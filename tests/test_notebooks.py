"""Every lesson runs top to bottom in a fresh kernel with no error output."""

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
