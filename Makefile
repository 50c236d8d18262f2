# The commands of the README: `make bench` (set up, then run the Spark
# optimality-gap benchmark on the small default grid; writes bench-out/: the Parquet
# results, summary.md, summary.csv, gaps.png and time_vs_size.png), `make test`, and the
# paper: `make paper-data` (the paper's production-scale grid on Spark, paper/grid.toml: 98 min 23 s measured on
# the 2-core machine; resumable; compacted into paper/data/results.parquet; PAPER_GRID=paper/grid-small.toml
# for the small grid, about 15 minutes) and `make paper` (tables,
# figures and paper/kipopt.pdf from that Parquet; the PDF needs Debian's latexmk,
# texlive-latex-base, texlive-latex-recommended, texlive-latex-extra, texlive-fonts-recommended and lmodern).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PAPER_GRID ?= paper/grid.toml
PAPER_OUT ?= paper-bench-out

.PHONY: setup bench test paper paper-data paper-tables

# an editable install leaves the package without bytecode (and PYTHONDONTWRITEBYTECODE, set on some machines,
# keeps Python from writing it): compiled here, every kipopt command starts about 0.15 s sooner
setup: $(VENV)/.installed
	$(BIN)/python -m compileall -q kipopt formulations solvers datasets > /dev/null

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@

bench: setup
	$(BIN)/kipopt bench --out bench-out

test: setup
	$(BIN)/python -m pytest -q

paper-data: setup
	$(BIN)/python paper/make_paper.py data --grid $(PAPER_GRID) --out $(PAPER_OUT)

paper-tables: setup
	$(BIN)/python paper/make_paper.py tables

paper: setup
	$(BIN)/python paper/make_paper.py pdf
