"""Every lesson runs top to bottom in a fresh kernel with no error output, twice with the same results."""

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def execute(path: Path) -> nbformat.NotebookNode:
    """Run a notebook in a fresh kernel with notebooks/ as the working directory."""
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}).execute()
    return nb


@pytest.mark.notebook
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs_without_errors(path):
    nb = execute(path)
    for i, cell in enumerate(nb.cells):
        for out in cell.get("outputs", []):
            assert out.get("output_type") != "error", f"cell {i}: {out.get('ename')}: {out.get('evalue')}"
            if out.get("output_type") == "stream" and out.get("name") == "stderr":
                assert "Traceback" not in out["text"] and "Warning" not in out["text"], f"cell {i}: {out['text']}"
