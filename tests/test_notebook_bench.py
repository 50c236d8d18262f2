"""notebooks/bench_results.ipynb runs top to bottom on a tiny results folder made here."""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
from nbclient import NotebookClient

from kipopt.bench import pipeline as P
from kipopt.bench import summary as S
from kipopt.bench.grid import DEFAULT_GENERATOR

NOTEBOOK = Path(__file__).resolve().parent.parent / "notebooks" / "bench_results.ipynb"


def _tiny_results(out: Path) -> None:
    """Two generated task instances, each run through the real pipeline step of one executor."""
    settings = P.ItemSettings(str(out), grace=5.0, threads=1, generator=DEFAULT_GENERATOR, providers=())
    methods = (("kafka.rack_active", 30.0), ("exact.rack_active", 30.0))
    for seed, tasks in ((1, 8), (2, 16)):
        params = (("clients", 3), ("tasks", tasks))
        item = P.WorkItem(f"nb{seed}", f"nb{seed}", "tasks", params, seed, methods)
        P.run_item(item, settings)


def test_notebook_reproduces_the_summary(tmp_path, monkeypatch):
    """Executes every cell; the notebook itself asserts that its table matches kipopt's summary."""
    _tiny_results(tmp_path)
    assert len(S.load_results(str(tmp_path))) == 4
    monkeypatch.setenv("KIPOPT_BENCH_OUT", str(tmp_path))
    nb = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(nb, timeout=120, kernel_name="python3",
                   resources={"metadata": {"path": str(NOTEBOOK.parent)}}).execute()
    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.get("outputs", [])]
    assert not [o for o in outputs if o.output_type == "error"]
    text = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert "2 work items, 4 method runs" in text
    assert "exact.rack_active" in text and "kafka.rack_active" in text
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(images) == 2
