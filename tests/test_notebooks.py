"""The notebooks are the tutorials: each runs top to bottom (on small inputs) and its own checks hold."""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbclient import NotebookClient

from kipopt.bench import pipeline as P
from kipopt.bench import summary as S
from kipopt.bench.grid import DEFAULT_GENERATOR

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"


def execute(name: str) -> tuple[str, int]:
    """Run every cell of ``notebooks/<name>``; return its printed text and the number of images.

    Fails on any cell error. Inputs are shrunk through the environment variables each notebook reads.
    """
    path = NOTEBOOKS / name
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=120, kernel_name="python3",
                   resources={"metadata": {"path": str(NOTEBOOKS)}}).execute()
    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.get("outputs", [])]
    errors = [o for o in outputs if o.output_type == "error"]
    assert not errors, errors
    text = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    return text, sum("image/png" in o.get("data", {}) for o in outputs)


def test_kip925_rack_aware(monkeypatch):
    """The notebook asserts port == exact itself, the exact assignment breaks no rule, and the per-rack
    plot is drawn."""
    monkeypatch.setenv("KIPOPT_NB_TASKS", "60")
    monkeypatch.setenv("KIPOPT_NB_CLIENTS", "8")
    text, images = execute("kip925_rack_aware.ipynb")
    assert "equal optimum" in text
    exact_line = next(line for line in text.splitlines() if line.startswith("exact.rack_active") and "moved" in line)
    assert exact_line.endswith("broken rules: none")
    assert images >= 1, "the per-rack traffic plot is missing"


def test_kip36_replica_placement(monkeypatch):
    """The notebook asserts that exact.spread is never worse than either placer, before and after a rack is
    added, and it draws the per-broker plots."""
    monkeypatch.setenv("KIPOPT_NB_PARTITIONS", "48")
    text, images = execute("kip36_replica_placement.ipynb")
    assert "exact.spread: optimal" in text and "exact.spread moves" in text
    assert images >= 2, "the per-broker plots are missing"


def _tiny_results(out: Path) -> None:
    """Two generated task instances, each run through the real pipeline step of one executor."""
    settings = P.ItemSettings(str(out), grace=5.0, threads=1, generator=DEFAULT_GENERATOR, providers=())
    methods = (("kafka.rack_active", 30.0), ("exact.rack_active", 30.0))
    for seed, tasks in ((1, 8), (2, 16)):
        params = (("clients", 3), ("tasks", tasks))
        item = P.WorkItem(f"nb{seed}", f"nb{seed}", "tasks", params, seed, methods)
        P.run_item(item, settings)


def test_bench_results(tmp_path, monkeypatch):
    """The notebook reads a results folder and asserts that its table matches kipopt's summary."""
    _tiny_results(tmp_path)
    assert len(S.load_results(str(tmp_path))) == 4
    monkeypatch.setenv("KIPOPT_BENCH_OUT", str(tmp_path))
    text, images = execute("bench_results.ipynb")
    assert "2 work items, 4 method runs" in text
    assert "exact.rack_active" in text and "kafka.rack_active" in text
    assert images == 2


def test_kip441_708_high_availability(monkeypatch):
    """Three fed-back rebalances of kafka.ha against exact.lag_active, then kafka.tag_standby against
    exact.tag_standby per task; the notebook asserts exact <= Kafka and no broken rule at every step."""
    monkeypatch.setenv("KIPOPT_NB_TASKS", "24")
    monkeypatch.setenv("KIPOPT_NB_CLIENTS", "4")
    text, images = execute("kip441_708_high_availability.ipynb")
    assert "summary: 3 rebalances checked, exact never worse than Kafka" in text
    assert text.count("probing rebalance needed:") == 3
    assert images >= 2, "the level plot or the per-task tag plot is missing"


def test_joint_staging(monkeypatch):
    """The notebook asserts that exact.joint is optimal at every stage and never worse than kafka.ha in
    lexicographic order, prints the staging table and draws the per-stage plot."""
    monkeypatch.setenv("KIPOPT_NB_TASKS", "40")
    monkeypatch.setenv("KIPOPT_NB_CLIENTS", "6")
    text, images = execute("joint_staging.ipynb")
    assert "first falls short" in text and "kafka.ha" in text
    assert images == 1


def test_kip881_consumers(monkeypatch):
    """The notebook runs every registered consumer method, asserts that each keeps its rule and stays above
    the exact optimum (or bound) of its rule, and draws the comparison."""
    monkeypatch.setenv("KIPOPT_NB_PARTITIONS", "60")
    monkeypatch.setenv("KIPOPT_NB_MEMBERS", "8")
    text, images = execute("kip881_consumers.ipynb")
    assert "every method keeps its rule" in text
    assert "exact.range" in text and "exact.balanced" in text
    assert images >= 1, "the comparison plot is missing"


def test_tour(monkeypatch):
    """Load, solve, check, plot: the notebook asserts exact <= port on three rules and that Kafka's cycle
    canceling passes the oracle with tolerance 0."""
    monkeypatch.setenv("KIPOPT_NB_TASKS", "24")
    monkeypatch.setenv("KIPOPT_NB_CLIENTS", "4")
    text, images = execute("tour.ipynb")
    assert "exact never worse than the port: yes" in text
    assert "kafka.rack_active    on rack_active  : feasible True, gap 0.0000, within tolerance 0: True" in text
    assert images >= 1, "the per-client plot is missing"


def test_every_notebook_opens_with_its_question():
    """Each tutorial's first cell is markdown that states the question it answers."""
    for path in sorted(NOTEBOOKS.glob("*.ipynb")):
        first = nbformat.read(path, as_version=4).cells[0]
        assert first.cell_type == "markdown" and "**The question.**" in first.source, path.name


def test_downstream_kafka_python(monkeypatch):
    """kafka-python's assignors through check --batch and kipopt.testing (skipped without kipopt[clients]):
    the notebook prints the table of what kipopt finds."""
    import pytest
    pytest.importorskip("kafka.coordinator.assignors.range", reason="kafka-python absent: pip install kipopt[clients]")
    monkeypatch.setenv("KIPOPT_NB_GROUPS", "4")
    text, _ = execute("downstream_kafka_python.ipynb")
    table = text[text.index("assignor "):]
    for name in ("range", "roundrobin", "sticky", "cooperative-sticky"):
        assert f"\n{name} " in table
    assert "kipopt check --batch: " in text and "first crash:" in text
