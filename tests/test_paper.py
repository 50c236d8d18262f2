"""The paper is built from its data: stale tables, hand-typed findings and uncovered methods fail here.

Nothing in this file needs TeX: the tables, figures and macros are regenerated into a temporary folder
from the committed Parquet and compared with the committed ``paper/generated`` files.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import re
import sys
import tomllib
from pathlib import Path

import pytest

from kipopt import methods as registry
from kipopt.bench import pipeline as P
from kipopt.bench.grid import load_grid

PAPER = Path(__file__).resolve().parent.parent / "paper"
PRODUCTION_GRID = PAPER / "grid.toml"


def _make_paper():
    spec = importlib.util.spec_from_file_location("make_paper", PAPER / "make_paper.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["make_paper"] = module
    spec.loader.exec_module(module)
    return module


M = _make_paper()
import paper_extras as X  # noqa: E402  (importable once make_paper put paper/ on the path)


def _packaged(kind: str) -> dict:
    """The methods or rules of kipopt's own providers (other tests register extra ones in this process)."""
    found = {}
    for name in registry._providers():
        for x in getattr(importlib.import_module(name), kind, ()):
            found[x.name] = x
    return found


@pytest.fixture(scope="module")
def rows():
    return M.load(M.DATA)


def test_generated_tables_match_the_committed_parquet(rows):
    """Regenerating from paper/data/results.parquet gives exactly the committed .tex files."""
    for name, text in M.render(rows).items():
        committed = (M.GENERATED / f"{name}.tex").read_text(encoding="utf-8")
        assert text == committed, f"paper/generated/{name}.tex is stale: run `make paper-tables`"


def test_figures_are_written(rows, tmp_path):
    written = M.write_tables(M.DATA, tmp_path)
    for name in ("gaps", "scaling", "staging"):
        for suffix in ("pdf", "png"):
            assert (tmp_path / f"{name}.{suffix}") in written and (tmp_path / f"{name}.{suffix}").stat().st_size > 0


def _findings(tex: str) -> str:
    """Every findings block (there may be several), joined."""
    blocks = re.findall(r"% BEGIN FINDINGS.*?% END FINDINGS", tex, flags=re.S)
    assert blocks, "no findings block"
    return "\n".join(block[: -len("% END FINDINGS")] for block in blocks)


def test_findings_cite_only_generated_numbers():
    """Between the findings markers every number comes from \\kipnum (numbers.tex), never typed by hand;
    every key cited exists in numbers.tex."""
    findings = _findings((PAPER / "kipopt.tex").read_text(encoding="utf-8"))
    body = "\n".join(line.split("%", 1)[0] if not line.lstrip().startswith("% BEGIN") else ""
                     for line in findings.splitlines())
    cited = re.findall(r"\\kipnum\{([^}]*)\}", body)
    assert cited, "the findings cite no generated number"
    defined = set(re.findall(r"\\@namedef\{kipnum@([^}]*)\}", (M.GENERATED / "numbers.tex").read_text()))
    assert set(cited) <= defined, f"cited but not generated: {sorted(set(cited) - defined)}"
    stripped = re.sub(r"\\(kipnum|ref|label|input|includegraphics|cite|texttt)(\[[^]]*\])?\{[^}]*\}", "", body)
    stripped = re.sub(r"(KIP|KAFKA)-\d+", "", stripped)  # proposal and issue names, not results
    typed = re.findall(r".{0,30}\d.{0,30}", stripped)
    assert not typed, f"hand-typed digits in the findings: {typed[:5]}"


def test_findings_report_every_kafka_port(rows):
    """The findings table has a line for every registered kafka.* port on its own rule."""
    table = (M.GENERATED / "findings.tex").read_text(encoding="utf-8")
    for name, method in _packaged("METHODS").items():
        if name.startswith("kafka."):
            line = f"{M.code(name)} & {M.code(method.rule)} &"
            assert line in table, f"{name} on {method.rule} is missing from the findings: rerun `make paper-data`"


@pytest.mark.parametrize("path", ["grid.toml", "grid-small.toml"])
def test_paper_grid_covers_every_method_and_rule(path):
    """Every registered method is in the paper grid and the small one, every rule is some method's, tasks score
    on joint."""
    grid = load_grid(str(PAPER / path))
    listed = {m for family in grid.families for m in family.methods}
    methods = _packaged("METHODS")
    assert set(methods) <= listed, f"add to paper/grid.toml: {sorted(set(methods) - listed)}"
    ruled = {methods[m].rule for m in listed}
    assert set(_packaged("RULES")) <= ruled | {r for f in grid.families for r in f.score_rules}
    tasks = next(f for f in grid.families if f.family == "tasks")
    assert tasks.score_rules == ("joint",)
    assert all(len(f.seeds) >= 3 for f in grid.families), "several seeds per point"


def test_production_grid_has_production_sizes_scenarios_and_seeds():
    """Issue 22's grid (paper/grid.toml, the paper's production-scale grid): production
    sizes, >= 20 seeds per cell (>= 5 in the largest), standbys 0-2, tags 0-2, static members and double
    claims, and every operator scenario of the replicas family."""
    grid = load_grid(str(PRODUCTION_GRID))
    cells = {f.family: [(dict(p), seeds) for p, seeds in f.cells()] for f in grid.families}

    def values(family, name):
        return {p.get(name) for p, _ in cells[family]}

    for family, size, low, high in (("tasks", "tasks", 100, 10_000), ("consumers", "partitions", 1_000, 100_000),
                                    ("replicas", "partitions", 1_000, 100_000)):
        sizes = values(family, size)
        assert min(sizes) <= low and max(sizes) >= high, family
        for params, seeds in cells[family]:
            assert len(seeds) >= (5 if params[size] == max(sizes) or params[size] >= high / 10 else 20), params
    assert values("tasks", "num_standby_replicas") >= {0, 1, 2} and values("tasks", "tags") >= {0, 1, 2}
    assert max(values("tasks", "clients")) >= 1000
    assert {0.0, 0.5} <= values("consumers", "static_members") and max(values("consumers", "conflicts")) > 0
    assert values("consumers", "subscriptions") == {"equal", "mixed"} and max(values("consumers", "members")) >= 1000
    scenarios = {("fresh" if not p.get("added_brokers") and not p.get("decommissioned_brokers") else
                  "decommission" if p.get("decommissioned_brokers") else
                  "add a rack" if p.get("added_racks") else "add brokers") for p, _ in cells["replicas"]}
    assert scenarios == {"fresh", "add brokers", "decommission", "add a rack"}
    assert max(values("replicas", "brokers")) >= 300


def test_committed_data_is_the_paper_grid(rows):
    """Every item of the committed Parquet belongs to paper/grid.toml and every grid method has rows."""
    items = P.expand(load_grid(str(M.GRID)))
    assert set(rows["item_id"]) <= {it.item_id for it in items}, "paper/data is from another grid: make paper-data"
    methods = {m for it in items for m, _ in it.methods}
    assert methods <= set(rows["method"]), f"no rows for {sorted(methods - set(rows['method']))}"
    assert set(rows.columns) >= set(M.COLUMNS)


def test_lexicographic_rules_report_criteria(rows):
    """spread, joint, lag_active and tag_standby rows carry each criterion's own gap."""
    for rule in ("spread", "joint", "lag_active", "tag_standby"):
        part = rows[(rows["rule"] == rule) & rows["status"].isin(["optimal", "feasible"])]
        assert len(part) and part["criteria"].notna().all(), rule


def test_compact_keeps_only_the_paper_columns():
    import pandas as pd
    frame = pd.DataFrame([{c: None for c in P.result_schema().names} | {
        "item_id": "a", "family": "tasks", "rule": "joint", "method": "kafka.ha",
        "metrics": '{"first_shortfall": "traffic", "shortfall": 3, "seconds_build": 1.5}'}])
    out = M.compact(frame)
    assert list(out.columns) == list(M.COLUMNS)
    assert out["metrics"][0] == '{"first_shortfall": "traffic", "shortfall": 3}'


def test_scored_objective_beyond_int64_is_written(tmp_path):
    """A lexicographic scalar can exceed int64 (joint on 1,000 tasks); the item's part file must still be
    written rather than failing the Spark job."""
    huge = (1001 ** 6) * 7
    run = P.MethodRun("feasible", 1.0, None, 0.1, metrics={"scored": {"joint": {
        "objective": huge, "violations": 0, "criteria": {"caught_up": 7, "traffic": 3}}}})
    exact = P.MethodRun("optimal", float(huge - 1), float(huge - 1), 0.1,
                        metrics={"criteria": {"caught_up": 7, "traffic": 2}})
    row = P._scored_row({"item_id": "x", "family": "tasks"}, "kafka.ha", 10.0, registry.rules()["joint"], run, exact)
    path = P.write_part(str(tmp_path), "x", [row])
    assert Path(path).exists() and row["objective"] == float(huge)


def test_missing_tex_names_the_package(monkeypatch, capsys):
    monkeypatch.setattr(M.shutil, "which", lambda tool: None)
    assert M.build_pdf() == 2
    err = capsys.readouterr().err
    assert "latexmk (latexmk)" in err and "texlive-latex-base" in err and "apt-get install" in err


def test_tex_escape_and_numbers_file():
    assert M.tex_escape("a_b & 5%") == r"a\_b \& 5\%"
    text = M.numbers_tex({"rack_active/kafka.rack_active/optimal": r"100.0\%"})
    assert r"\@namedef{kipnum@rack_active/kafka.rack_active/optimal}{100.0\%}" in text
    assert tomllib.loads((PAPER / "grid.toml").read_text())["families"]


def test_citation_cff_has_the_required_keys():
    """CITATION.cff parses and has what CFF 1.2.0 requires (validated with cffconvert when it was written)."""
    import yaml
    data = yaml.safe_load((PAPER.parent / "CITATION.cff").read_text(encoding="utf-8"))
    assert data["cff-version"] == "1.2.0"
    assert data["message"] and data["title"] and data["authors"]
    assert all("name" in a or "family-names" in a for a in data["authors"])


TEX = (PAPER / "kipopt.tex").read_text(encoding="utf-8")


def test_every_cited_number_is_generated():
    """Every \\kipnum anywhere in the paper exists in numbers.tex (an unknown key stops the build)."""
    defined = set(re.findall(r"\\@namedef\{kipnum@([^}]*)\}", (M.GENERATED / "numbers.tex").read_text()))
    cited = set(re.findall(r"\\kipnum\{([^}]*)\}", TEX))
    assert cited <= defined, sorted(cited - defined)


def test_every_reference_is_cited_and_every_citation_has_a_reference():
    items = set(re.findall(r"\\bibitem\{([^}]*)\}", TEX))
    cited = {key.strip() for group in re.findall(r"\\cite\{([^}]*)\}", TEX) for key in group.split(",")}
    assert items == cited, f"uncited: {sorted(items - cited)}, missing: {sorted(cited - items)}"


def test_floats_stay_beside_their_text():
    """Floats may go here, top, bottom or on a float page, and all are placed before the references."""
    placements = re.findall(r"\\begin\{(?:table|figure)\}(\[[^]]*\])?", TEX)
    assert placements and all(p in ("[htbp]", "[t]", "[tbp]") for p in placements), placements
    assert "placeins" in TEX and TEX.index("\\FloatBarrier") < TEX.index("\\begin{thebibliography}")


def test_every_input_and_figure_exists():
    for name in re.findall(r"\\(?:input|fittable)\{([^}]*)\}", TEX):
        if name != "#1":
            assert (PAPER / (name if name.endswith(".tex") else name + ".tex")).exists(), name
    for name in re.findall(r"\\includegraphics(?:\[[^]]*\])?\{([^}]*)\}", TEX):
        assert (PAPER / name).exists(), name
    # \InputIfFileExists does not add .tex: without it an existing file is silently skipped
    assert all(name.endswith(".tex") for name in re.findall(r"\\InputIfFileExists\{([^}]*)\}", TEX))


def test_conformance_counts_come_from_a_rerun():
    """paper/data/conformance.json is what paper/conformance.py answers now: every committed Java vector
    replayed on its port, and every port identical on every case."""
    spec = importlib.util.spec_from_file_location("paper_conformance", PAPER / "conformance.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["paper_conformance"] = module
    spec.loader.exec_module(module)
    fresh = [vars(r) for r in module.run_all()]
    committed = json.loads((M.DATA.parent / X.CONFORMANCE).read_text())["records"]
    assert fresh == committed, "paper/data/conformance.json is stale: run python paper/conformance.py"
    assert all(r["identical"] == r["cases"] > 0 for r in fresh)
    sources = {r["source"] for r in fresh}
    found = {str(p.relative_to(PAPER.parent)) for p in (PAPER.parent / "tests").rglob("data/*.json")
             if "vectors" in p.name or "java" in p.name or "kafka_outputs" in p.name}
    assert found <= sources, f"committed vectors not replayed: {sorted(found - sources)}"


def test_case_study_covers_every_kafka_python_assignor():
    """The case-study JSON has a row per kafka-python assignor of the adapter, with consistent counts."""
    from kipopt.clients.kafka_python import ASSIGNORS
    found = json.loads((M.DATA.parent / X.CLIENTS).read_text())
    assert [r["assignor"] for r in found["rows"]] == list(ASSIGNORS)
    for r in found["rows"]:
        assert r["answered"] + r["crashed"] == r["groups"]
        counted = [r["broken"], r["above_optimum"], r["proven"]] + ([r["same_as_java"]] if r["same_as_java"] else [])
        assert all(0 <= n <= r["answered"] for n in counted) and 0 <= r["hash_seed_dependent"] <= r["groups"]
        assert (r["worst_excess"] > 0) == (r["above_optimum"] > 0)
        assert r["rule"] == ASSIGNORS[r["assignor"]].rule


def test_labels_are_unique_across_the_paper_and_its_notes():
    """LaTeX takes the last of two equal labels: a \\ref to the first would silently point elsewhere."""
    texts = [PAPER / "kipopt.tex", *sorted((PAPER / "notes").glob("*.tex"))]
    labels = [label for path in texts for label in re.findall(r"\\label\{([^}]*)\}", path.read_text())]
    assert len(labels) == len(set(labels)), sorted({x for x in labels if labels.count(x) > 1})
