"""Build the paper from the benchmark: ``data`` (Spark run → compact Parquet), ``tables``, ``pdf``.

    python paper/make_paper.py data  [--grid paper/grid.toml] [--out paper-bench-out]
    python paper/make_paper.py tables [--data paper/data/results.parquet] [--into paper/generated]
    python paper/make_paper.py pdf    (tables and figures first, then latexmk)

``data`` runs ``kipopt bench`` (resumable: rerun the same command after an
interruption and only the missing items run) and keeps the columns the paper
reads in ``paper/data/results.parquet`` (zstd). ``tables`` writes every
LaTeX table, the macro file ``numbers.tex`` (every number the text cites) and
the figures (PDF and PNG) from that Parquet alone; ``pdf`` then builds
``paper/kipopt.pdf`` with latexmk and pdflatex, or names the Debian package
that is missing and exits 2. The tables are a pure function of the Parquet
and of two small JSON files beside it: ``conformance.json`` (written by
``paper/conformance.py``, every committed Java vector replayed on its port)
and ``kafka_python.json`` (written by ``paper/case_kafka_python.py``, the
client-library case study), whose tables and numbers live in
``paper/paper_extras.py``; tests/test_paper.py regenerates them all and
compares with the committed ones.

The steps live in modules beside this one (``paper/`` is on ``sys.path``), and this module re-exports
their names: ``paper_data.py`` (paths, the ``data`` step, :func:`load`), ``paper_tex.py`` (LaTeX cells,
number formats, :func:`tabular`), ``paper_tables.py`` (the benchmark tables), ``paper_numbers.py`` (the
numbers the text cites, ``numbers.tex``) and ``paper_figures.py``. This module is the command line:
:func:`render` and :func:`write_tables` put the generated files together, :func:`build_pdf` runs latexmk.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable

from kipopt.bench.scaling import (NOISE_FLOOR_SECONDS, SCALING_AXES, family_scaling,  # noqa: F401 (re-exported)
                                  scaling_ratios)

PAPER = Path(__file__).resolve().parent
if str(PAPER) not in sys.path:
    sys.path.insert(0, str(PAPER))  # the modules beside it; paper_extras.py imports its helpers back by name
if __name__ == "__main__":
    sys.modules.setdefault("make_paper", sys.modules[__name__])  # one copy when run as a script
# the modules beside this one, re-exported (tests and paper_extras.py read them here)
from paper_data import (BENCH_OUT, COLUMNS, DATA, GENERATED, GRID, JAVA_REFERENCE, METRIC_KEYS,  # noqa: E402,F401
                        ROOT, SCALING_FAMILIES, compact, grid_rows, load, run_data)
from paper_figures import _draw_scaling, figures  # noqa: E402,F401
from paper_numbers import GRID_SIZES, numbers, numbers_tex  # noqa: E402,F401
from paper_tables import (criteria_table, findings_table, grid_table, scaling_family_table,  # noqa: E402,F401
                          scaling_frame, scaling_table, staging_table, summary_table)
from paper_tex import code, count, num, pct, seconds, tabular, tex_escape  # noqa: E402,F401

TABLES = ("grid", "summary", "criteria", "staging", "scaling",
          *(f"scaling-{family}" for family in SCALING_FAMILIES), "findings", "conformance", "clients", "numbers")
"""The generated ``.tex`` files (``numbers.tex`` holds the macros the text cites)."""

TEX_PACKAGES = {
    "latexmk": "latexmk", "pdflatex": "texlive-latex-base", "amsmath.sty": "texlive-latex-base",
    "amssymb.sty": "texlive-base", "hyperref.sty": "texlive-latex-base", "graphicx.sty": "texlive-latex-base",
    "geometry.sty": "texlive-latex-base", "booktabs.sty": "texlive-latex-recommended",
    "microtype.sty": "texlive-latex-recommended", "lmodern.sty": "lmodern",
    "ptmr7t.tfm": "texlive-fonts-recommended", "placeins.sty": "texlive-latex-extra",
}
"""What ``make paper`` needs from TeX, and the Debian package that provides it."""


def render(rows: Any, data_dir: Path = DATA.parent) -> dict[str, str]:
    """Every generated ``.tex`` file's text, by name: a pure function of the rows and, for the conformance
    and case-study tables, of the JSON files of :mod:`paper_extras` in ``data_dir``."""
    from paper_extras import (CLIENTS, CONFORMANCE, clients_table, conformance_table, exact_numbers,
                              largest_scaling_numbers, side_numbers)
    makers: dict[str, Callable[[Any], str]] = {
        "grid": grid_table, "summary": summary_table, "criteria": criteria_table, "staging": staging_table,
        "scaling": scaling_table, "findings": findings_table,
        **{f"scaling-{f}": (lambda r, f=f: scaling_family_table(r, f)) for f in SCALING_FAMILIES},
        "conformance": lambda r: conformance_table(data_dir), "clients": lambda r: clients_table(data_dir),
        "numbers": lambda r: numbers_tex(numbers(r) | exact_numbers(r) | largest_scaling_numbers(r)
                                               | side_numbers(data_dir))}
    sources = {"conformance": f"paper/data/{CONFORMANCE} (paper/conformance.py)",
               "clients": f"paper/data/{CLIENTS} (paper/case_kafka_python.py)"}
    return {name: (text if name == "numbers" else
                   f"% Generated by paper/make_paper.py from {sources.get(name, 'paper/data/results.parquet')}: "
                   "do not edit.\n" + text)
            for name, text in ((name, makers[name](rows)) for name in TABLES)}


def write_tables(data: Path, into: Path, with_figures: bool = True) -> list[Path]:
    rows = load(data)
    into.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in render(rows, data.parent).items():
        path = into / f"{name}.tex"
        path.write_text(text, encoding="utf-8")
        written.append(path)
    if with_figures:
        written += figures(rows, into)
    return written


def missing_tex() -> list[tuple[str, str]]:
    """(file, Debian package) for every piece of the TeX toolchain this machine lacks."""
    missing = [(tool, TEX_PACKAGES[tool]) for tool in ("latexmk", "pdflatex") if shutil.which(tool) is None]
    if shutil.which("kpsewhich") is None:
        return missing or [("kpsewhich", "texlive-binaries")]
    for name, package in TEX_PACKAGES.items():
        if "." in name and not subprocess.run(["kpsewhich", name], capture_output=True, text=True).stdout.strip():
            missing.append((name, package))
    return missing


def build_pdf() -> int:
    missing = missing_tex()
    if missing:
        packages = sorted({p for _, p in missing})
        print("make_paper: tables and figures are written, but the PDF needs TeX: missing "
              + ", ".join(f"{name} ({package})" for name, package in missing)
              + f"; install with: sudo apt-get install {' '.join(packages)}", file=sys.stderr)
        return 2
    command = ["latexmk", "-pdf", "-interaction=nonstopmode", "-halt-on-error", "-file-line-error", "kipopt.tex"]
    done = subprocess.run(command, cwd=PAPER, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if done.returncode != 0:
        print(done.stdout[-4000:], file=sys.stderr)
        print(f"make_paper: latexmk failed (exit {done.returncode}); log in paper/kipopt.log", file=sys.stderr)
        return 1
    print(f"make_paper: wrote {PAPER / 'kipopt.pdf'}", file=sys.stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="make_paper.py", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    data = sub.add_parser("data", help="run the paper grid with kipopt bench and compact its Parquet")
    data.add_argument("--grid", type=Path, default=GRID)
    data.add_argument("--out", type=Path, default=BENCH_OUT)
    data.add_argument("--data", type=Path, default=DATA)
    data.add_argument("--kipopt", default=str(Path(sys.executable).with_name("kipopt")))
    data.add_argument("--no-run", dest="run", action="store_false",
                      help="do not run the bench; compact the part files already in --out")
    for name in ("tables", "pdf"):
        p = sub.add_parser(name, help="write tables and figures" + (", then build the PDF" if name == "pdf" else ""))
        p.add_argument("--data", type=Path, default=DATA)
        p.add_argument("--into", type=Path, default=GENERATED)
    args = parser.parse_args(argv)
    if args.command == "data":
        return run_data(args.grid, args.out, args.data, args.kipopt, args.run)
    if not args.data.exists():
        print(f"make_paper: no data at {args.data}; run `make paper-data` first", file=sys.stderr)
        return 2
    for path in write_tables(args.data, args.into):
        print(f"make_paper: wrote {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}", file=sys.stderr)
    return build_pdf() if args.command == "pdf" else 0


if __name__ == "__main__":
    sys.exit(main())
