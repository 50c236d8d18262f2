"""The registry finds one method or rule without importing every provider (``kipopt.methods._named``)."""

from __future__ import annotations


def test_registry_names_are_unique_across_providers():
    """``methods._named`` returns the first provider's method or rule of a name without importing the
    rest: that equals the full registry only while no name is registered twice."""
    import importlib
    from collections import Counter

    from kipopt import methods as registry
    for kind in ("METHODS", "RULES"):
        names = Counter(x.name for p in registry._providers() for x in getattr(importlib.import_module(p), kind, ()))
        assert [n for n, k in names.items() if k > 1] == [], kind
    for name, m in registry.methods().items():
        assert registry.get_method(name) is m
    for name, rule in registry.rules().items():
        assert registry.get_rule(name, rule.family) is rule


def test_solve_imports_only_its_provider(tmp_path):
    """``kipopt solve --method exact.rack_active`` imports the first provider alone: no port, no other
    family's model, nothing of pandas, scipy, networkx or pulp."""
    import json
    import subprocess
    import sys

    from kipopt.datasets import generate
    from kipopt.instance import to_dict
    path = tmp_path / "i.json"
    path.write_text(json.dumps(to_dict(generate("tasks", 1, tasks=24, clients=6))))
    probe = ("import json, sys\nfrom kipopt.cli import main\nstatus = main(sys.argv[1:])\n"
             "print(json.dumps({'status': status, 'modules': sorted(sys.modules)}), file=sys.stderr)\n")
    run = subprocess.run([sys.executable, "-c", probe, "solve", str(path), "--method", "exact.rack_active"],
                         capture_output=True, text=True, timeout=120)
    report = json.loads(run.stderr.strip().splitlines()[-1])
    assert report["status"] == 0, run.stderr
    modules = set(report["modules"])
    assert not {m for m in modules if m.startswith("kipopt.solvers.")}
    assert not modules & {"pandas", "scipy", "networkx", "pulp", "pyspark", "kipopt.formulations.replicas.spread"}
