"""The paper's tables and numbers beyond the benchmark summary (used by ``make_paper.py``).

* the port-conformance table and counts, from ``paper/data/conformance.json``
  (written by ``paper/conformance.py``);
* the client-library case study, from ``paper/data/kafka_python.json``
  (written by ``paper/case_kafka_python.py``);
* from the benchmark rows: how many exact runs were proven optimal, whether any
  other method beat an exact answer, and the medians at the largest scaling size.

Each is a pure function of its input, so ``tests/test_paper.py`` can regenerate
and compare them like the other tables.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from make_paper import code, count, scaling_frame, seconds, tabular, tex_escape

CONFORMANCE = "conformance.json"
"""Written by ``paper/conformance.py``: every committed Java vector replayed on its port."""
CLIENTS = "kafka_python.json"
"""Written by ``paper/case_kafka_python.py``: kafka-python's assignors checked by the oracle."""


def _side_data(data_dir: Path, name: str) -> dict:
    return json.loads((data_dir / name).read_text(encoding="utf-8"))


def conformance_table(data_dir: Path) -> str:
    """Per vector file (a header row), per port: the Java class, how outputs are compared, cases, identical."""
    records = _side_data(data_dir, CONFORMANCE)["records"]
    lines = [r"\begin{tabular}{lllrr}", r"\toprule", r"port & Kafka class & compared & cases & identical \\"]
    source = None
    for r in records:
        if r["source"] != source:
            source = r["source"]
            lines += [r"\midrule", r"\multicolumn{5}{@{}l}{\small vectors: " + code(source) + r"} \\"]
        lines.append(" & ".join([code(r["port"]), tex_escape(r["java_class"]), tex_escape(r["compared"]),
                                 count(r["cases"]), count(r["identical"])]) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}", ""]
    return "\n".join(lines)


def clients_table(data_dir: Path) -> str:
    """kafka-python's assignors: crashes, broken rules, cross-rack above the optimum, same as Java, hash seed."""
    found = _side_data(data_dir, CLIENTS)
    body = []
    for r in found["rows"]:
        crashed = count(r["crashed"]) + (f" ({tex_escape(', '.join(r['errors']))})" if r["errors"] else "")
        answered = r["answered"]
        java = "--" if r["same_as_java"] is None or not answered else f"{count(r['same_as_java'])}/{count(answered)}"
        body.append([code(r["assignor"]), code(r["rule"]), crashed,
                     count(r["broken"]) if answered else "--",
                     f"{count(r['above_optimum'])}/{count(answered)}" if answered else "--",
                     f"+{count(r['worst_excess'])}" if answered else "--", java, count(r["hash_seed_dependent"])])
    return tabular("llrrrrrr", ["assignor", "rule", "crashed", "broken", "cross-rack $>$ opt.", "worst",
                                "same as Java", "hash seed"], body)


def exact_numbers(rows: Any) -> dict[str, str]:
    """How far the exact methods can be trusted in these data: ``exact/runs`` (their applicable runs),
    ``exact/proven`` (status optimal, bound = objective), and over every other method's scored run
    (``dominance/runs``) those with a lower objective than the exact answer and no broken rule
    (``dominance/better``) or with one (``dominance/better-broken``)."""
    own = rows[(rows["method"] == rows["exact_method"]) & (rows["status"] != "not_applicable")]
    others = rows[(rows["method"] != rows["exact_method"]) & rows["status"].isin(["optimal", "feasible"])]
    broken = others["violations"].fillna(0) > 0
    return {"exact/runs": count(len(own)), "exact/proven": count(int((own["status"] == "optimal").sum())),
            "dominance/runs": count(len(others)),
            "dominance/better": count(int((others["beats_bound"].fillna(False) & ~broken).sum())),
            "dominance/better-broken": count(int((others["beats_bound"].fillna(False) & broken).sum()))}


def largest_scaling_numbers(rows: Any) -> dict[str, str]:
    """``scaling/largest/<method>``: each method's median seconds at the largest size of the scaling table."""
    frame = scaling_frame(rows)
    if frame.empty:
        return {}
    return {f"scaling/largest/{method}": seconds(value) for method, value in frame.iloc[-1].items()}


def side_numbers(data_dir: Path) -> dict[str, str]:
    """Numbers the text cites from the conformance run and the case study (``conformance/*``, ``clients/*``)."""
    records = _side_data(data_dir, CONFORMANCE)["records"]
    out = {"conformance/ports": count(len({r["port"] for r in records})),
           "conformance/files": count(len({r["source"] for r in records})),
           "conformance/cases": count(sum(r["cases"] for r in records)),
           "conformance/identical": count(sum(r["identical"] for r in records))}
    found = _side_data(data_dir, CLIENTS)
    out["clients/groups"] = count(found["seeds"][1] - found["seeds"][0] + 1)
    out["clients/version"] = tex_escape(found["version"])
    for key, value in found["shape"].items():
        out[f"clients/{key}"] = count(value) if isinstance(value, int) else tex_escape(value)
    for r in found["rows"]:
        name = r["assignor"]
        for key in ("crashed", "broken", "above_optimum", "worst_excess", "hash_seed_dependent", "answered",
                    "proven"):
            out[f"clients/{name}/{key}"] = count(r[key])
        if r["same_as_java"] is not None:
            out[f"clients/{name}/same_as_java"] = count(r["same_as_java"])
    return out
