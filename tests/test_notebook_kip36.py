"""notebooks/kip36_replica_placement.ipynb runs top to bottom on a small cluster and its own checks hold."""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbclient import NotebookClient

NOTEBOOK = Path(__file__).resolve().parent.parent / "notebooks" / "kip36_replica_placement.ipynb"


def test_notebook_runs(monkeypatch):
    """Every cell executes; the notebook asserts that exact.spread is never worse than either placer, before
    and after a rack is added, and it draws the per-broker plots."""
    monkeypatch.setenv("KIPOPT_NB_PARTITIONS", "48")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(nb, timeout=120, kernel_name="python3",
                   resources={"metadata": {"path": str(NOTEBOOK.parent)}}).execute()
    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.get("outputs", [])]
    assert not [o for o in outputs if o.output_type == "error"]
    text = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert "exact.spread: optimal" in text and "exact.spread moves" in text
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(images) >= 2, "the per-broker plots are missing"
