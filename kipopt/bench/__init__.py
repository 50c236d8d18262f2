"""The optimality-gap benchmark on Spark (``kipopt bench``).

* :mod:`.grid` reads and validates the grid file (TOML);
* :mod:`.pipeline` runs the work items on Spark, one Parquet part file per item under
  ``<out>/results/``: :mod:`.items` expands the grid into items, :mod:`.method_run` runs one method in
  a child with a hard deadline, :mod:`.executor` turns one item into its result rows, :mod:`.results`
  reads and writes the part files;
* :mod:`.summary` reads the results back: the summary tables;
* :mod:`.gaps` splits every run into its rule's criteria, each gap in its own
  unit, with bootstrap intervals of the medians;
* :mod:`.report` writes ``summary.md`` and ``summary.csv``; :mod:`.plots` the PNGs;
* :mod:`.scaling` gives seconds against size per family, unfinished runs apart (the paper's scaling);
* :mod:`.cli` is the ``kipopt bench`` command.

See ``kipopt/bench/README.md`` for the grid format and for running on a cluster.
"""
