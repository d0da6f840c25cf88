"""The notebooks in notebooks/ run from top to bottom in a real kernel, and are committed clean."""

import nbformat
import pytest
from nbclient import NotebookClient
from repo_paths import ROOT

NOTEBOOKS = ROOT / "notebooks"
NAMES = ["quickstart.ipynb", "llm_judges.ipynb", "agents_and_workflows.ipynb"]


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
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
