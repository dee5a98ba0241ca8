"""The headless runner the notebook tests share (benchmarks.notebooks): order kept, a failing notebook named."""

import nbformat
import pytest

from benchmarks.notebooks import execute_all


def _code_notebook(tmp_path, name: str, source: str):
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell(source)]
    path = tmp_path / f"{name}.ipynb"
    nbformat.write(nb, path)
    return path


def test_execute_all_yields_every_notebook_in_the_order_given(tmp_path):
    # The first is the slowest, so with two kernels at a time the second finishes first: the order must not follow.
    paths = [
        _code_notebook(tmp_path, "slow", "import time; time.sleep(1.5); print('slow')"),
        _code_notebook(tmp_path, "fast", "print('fast')"),
        _code_notebook(tmp_path, "third", "print(6 * 7)"),
    ]
    printed = [nb.cells[0].outputs[0]["text"].strip() for nb in execute_all(paths, workers=2)]
    assert printed == ["slow", "fast", "42"]


def test_execute_all_names_the_notebook_whose_cell_failed(tmp_path):
    paths = [_code_notebook(tmp_path, "fine", "1"), _code_notebook(tmp_path, "broken", "1 / 0")]
    with pytest.raises(RuntimeError, match=r"^broken\.ipynb: a cell failed"):
        list(execute_all(paths, workers=2))
