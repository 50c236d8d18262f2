"""notebooks/kip925_rack_aware.ipynb runs top to bottom (a small instance) and its own checks hold."""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbclient import NotebookClient

NOTEBOOK = Path(__file__).resolve().parent.parent / "notebooks" / "kip925_rack_aware.ipynb"


def test_notebook_runs(monkeypatch):
    """Every cell executes; the notebook asserts port == exact itself, the exact assignment breaks no
    rule, and the per-rack plot is drawn."""
    monkeypatch.setenv("KIPOPT_NB_TASKS", "60")
    monkeypatch.setenv("KIPOPT_NB_CLIENTS", "8")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(nb, timeout=120, kernel_name="python3",
                   resources={"metadata": {"path": str(NOTEBOOK.parent)}}).execute()
    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.get("outputs", [])]
    assert not [o for o in outputs if o.output_type == "error"]
    text = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert "equal optimum" in text
    exact_line = next(line for line in text.splitlines() if line.startswith("exact.rack_active") and "moved" in line)
    assert exact_line.endswith("broken rules: none")
    assert any("image/png" in o.get("data", {}) for o in outputs), "the per-rack traffic plot is missing"
