"""The notebooks in notebooks/ run from top to bottom in a real kernel, and are committed clean."""

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
JUDGE_USAGE_BUG = pytest.mark.xfail(
    strict=True,
    reason="evaldag.eval_graph.judge_usage iterates the <id>.judge column as dicts, but items "
    "hold judge records as JSON text: run_evals with a prompt step raises AttributeError. Remove "
    "this mark once judge_usage decodes the JSON.",
)
NAMES = ["quickstart.ipynb", "llm_judges.ipynb"]


@pytest.mark.parametrize(
    "name", ["quickstart.ipynb", pytest.param("llm_judges.ipynb", marks=JUDGE_USAGE_BUG)]
)
def test_notebook_runs_without_errors(name):
    notebook = nbformat.read(NOTEBOOKS / name, as_version=4)
    client = NotebookClient(
        notebook,
        timeout=120,
        kernel_name="python3",
        resources={"metadata": {"path": str(NOTEBOOKS)}},
    )
    client.execute()  # raises CellExecutionError, with the cell and its traceback, on an error


@pytest.mark.parametrize("name", NAMES)
def test_notebook_is_committed_without_outputs(name):
    notebook = nbformat.read(NOTEBOOKS / name, as_version=4)
    nbformat.validate(notebook)
    for cell in notebook.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, cell.source[:60]
