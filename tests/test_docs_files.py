"""The README, the Makefile and the schemas agree with each other and with the repository's files."""

from __future__ import annotations

import glob
import re
from pathlib import Path

import pytest

from kipopt.instance import FAMILIES
from kipopt.schemas import schema

ROOT = Path(__file__).resolve().parents[1]

EXAMPLE_OUTPUTS = {"vectors/", "plan/", "plan/reassignment.json", "plan/rollback.json"}
"""Paths the README names as what a command writes (``kipopt vectors ... --out vectors/``, ``kipopt reassign ... --out plan/``), not as files."""


def _readme() -> str:
    return (ROOT / "README.md").read_text(encoding="utf-8")


def _makefile() -> str:
    return (ROOT / "Makefile").read_text(encoding="utf-8")


def _path_words(text: str) -> set[str]:
    """Repository paths named in Markdown: link targets, and words with a slash in code spans and
    code blocks. The Layout tree (a ``text`` block of names relative to their parents) is left out."""
    text = re.sub(r"```text\n.*?```", "", text, flags=re.S)
    found = {link for link in re.findall(r"\]\(([^)#\s]+)\)", text) if not link.startswith(("http:", "https:"))}
    spans = re.findall(r"`([^`\n]+)`", text) + re.findall(r"```\w*\n(.*?)```", text, flags=re.S)
    for span in spans:
        for word in span.split():
            word = word.strip("(),;:\"'")
            if "/" in word and re.fullmatch(r"[\w.\-/*]+", word) and not word.startswith("/"):
                found.add(word)
    return found


def _ignored(path: str) -> bool:
    """Whether git ignores ``path`` by a line of .gitignore (the generated outputs: bench-out/, the PDF)."""
    lines = (ROOT / ".gitignore").read_text(encoding="utf-8").split()
    return path in lines or path.rstrip("/") + "/" in lines


def _missing(paths: set[str]) -> list[str]:
    return sorted(p for p in paths if not glob.glob(str(ROOT / p)) and not _ignored(p) and p not in EXAMPLE_OUTPUTS)


def test_readme_names_only_files_that_exist():
    found = _path_words(_readme())
    assert {"docs/instance-format.md", "kipopt/bench/README.md", "paper/grid.toml"} <= found
    assert _missing(found) == []


def test_makefile_names_only_files_that_exist():
    text = _makefile()
    found = set(re.findall(r"(?<![\w./$(-])((?:[\w.-]+/)+[\w.*-]*|[\w-]+\.(?:py|toml|parquet|tex|pdf))", text))
    assert {"paper/make_paper.py", "paper/grid.toml", "pyproject.toml"} <= found
    assert _missing(found) == []


def test_the_path_check_catches_a_missing_file():
    assert _missing(_path_words("see [`spec/instance-format.md`](spec/instance-format.md)")) == \
        ["spec/instance-format.md"]


def _tex_packages(text: str) -> set[str]:
    return set(re.findall(r"\b(latexmk|lmodern|texlive-[\w-]+)\b", text))


def test_readme_and_makefile_list_the_same_tex_packages():
    import importlib.util
    spec = importlib.util.spec_from_file_location("make_paper_for_docs", ROOT / "paper" / "make_paper.py")
    make_paper = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(make_paper)
    readme, makefile = _tex_packages(_readme()), _tex_packages(_makefile())
    assert readme == makefile
    # texlive-base comes with texlive-latex-base, which both name
    assert set(make_paper.TEX_PACKAGES.values()) - {"texlive-base"} <= readme


def test_readme_and_makefile_quote_the_same_paper_data_time():
    pattern = r"\d+ min \d+ s|\d+(?:\.\d+)?-\d+(?:\.\d+)? h"   # a measured time, or a projected range
    readme = re.findall(pattern, next(line for line in _readme().splitlines() if "make paper-data" in line
                                      and "#" in line))
    makefile = re.findall(pattern, re.sub(r"\n#\s*", " ", _makefile()))
    assert readme and readme == makefile[:1]


@pytest.mark.parametrize("family", FAMILIES)
def test_schema_descriptions_point_to_files_in_the_repository(family):
    named = re.findall(r"[\w-]+/[\w./-]+\.md", schema(family)["description"])
    assert named and all((ROOT / p).exists() for p in named), named


def test_readme_describes_schema_check_as_what_it_prints():
    line = next(line for line in _readme().splitlines() if line.startswith("kipopt schema check"))
    assert schema("check")["title"].startswith("kipopt check verdict")
    assert "check verdict" in line and "every document" not in line


def test_oracle_docs_case_study_table_is_the_committed_run():
    """docs/oracle.md §5 quotes paper/data/kafka_python.json (written by paper/case_kafka_python.py)."""
    import json

    run = json.loads((ROOT / "paper" / "data" / "kafka_python.json").read_text())
    lines = (ROOT / "docs" / "oracle.md").read_text().splitlines()
    for row in run["rows"]:
        cells = next([c.strip() for c in line.strip("|").split("|")] for line in lines
                     if line.startswith(f"| `{row['assignor']}` |"))
        assert cells[1] == f"`{row['rule']}`"
        assert cells[2].split()[0] == str(row["crashed"])
        if row["answered"]:
            assert cells[3] == str(row["broken"])
            assert cells[4] == f"{row['above_optimum']} / {row['groups']}"
            assert cells[5] == f"+{row['worst_excess']}"
            assert cells[6].startswith(f"{row['same_as_java']} / {row['groups']}")
        assert cells[7] == str(row["hash_seed_dependent"])
