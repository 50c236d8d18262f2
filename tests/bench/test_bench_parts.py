"""Part files that cannot be read are not done; temporaries of dead writers are removed; a method run
ended by an interrupt records nothing."""

from __future__ import annotations

import os
import signal

import pytest

from kipopt.bench import method_run as M
from kipopt.bench import pipeline as P
from kipopt.bench.results import remove_orphan_temporaries, scan_parts
from kipopt.bench.session import check_master
from kipopt.errors import InstanceError


def test_a_part_file_that_is_not_whole_parquet_is_not_done(tmp_path):
    out = str(tmp_path)
    P.write_part(out, "whole", [])
    folder = tmp_path / P.RESULTS_DIR
    (folder / "empty.parquet").write_bytes(b"")
    data = (folder / "whole.parquet").read_bytes()
    (folder / "cut.parquet").write_bytes(data[:len(data) // 2])
    assert P.done_items(out) == {"whole"}
    assert sorted(os.path.basename(p) for p in scan_parts(out)[1]) == ["cut.parquet", "empty.parquet"]
    P.write_part(out, "empty", [])  # a rerun replaces it
    assert P.done_items(out) == {"whole", "empty"}


def test_temporaries_of_writers_that_are_gone_are_removed(tmp_path):
    folder = tmp_path / P.RESULTS_DIR
    folder.mkdir()
    dead = 2**22 + 12345  # above pid_max's default: no such process
    (folder / f".item1.{dead}.140000.tmp").write_bytes(b"half")
    (folder / f".item2.{os.getpid()}.140000.tmp").write_bytes(b"being written")
    (folder / ".abc.123.tmp").write_bytes(b"not a writer's name")
    assert remove_orphan_temporaries(str(tmp_path)) == 1
    assert sorted(os.listdir(folder)) == [".abc.123.tmp", f".item2.{os.getpid()}.140000.tmp"]


@pytest.mark.parametrize("how", ["raise", "signal"])
def test_a_method_run_ended_by_an_interrupt_is_no_row(monkeypatch, how):
    """Ctrl-C reaches the whole process group, the method's child included: recording it as the method's
    error would write the item's part file, and a resumed run would never run it again."""
    def interrupted(*args, **kwargs):
        if how == "raise":
            raise KeyboardInterrupt
        os.kill(os.getpid(), signal.SIGTERM)

    monkeypatch.setattr(M, "_solve_here", interrupted)
    with pytest.raises(KeyboardInterrupt, match="ended by"):
        M.run_method(None, "kafka.adminutils", 5.0, 1.0, 0, 1)


@pytest.mark.parametrize("master", ["local", "local[*]", "local[4]", "local[2,3]", "local-cluster[2,1,1024]",
                                    "spark://host:7077", "spark://a:1,b:2", "yarn", "k8s://https://h:443"])
def test_spark_master_urls_are_accepted(master):
    check_master(master)


@pytest.mark.parametrize("master", ["foo", "local[0]", "local[]", "locla", "local[2", "yarn-client", "spark://",
                                    "mesos://h:5050", "",
                                    # Spark reads counts as Java ints and ports as TCP ports: these passed the
                                    # check, Spark refused them and kipopt ended with py4j's traceback (exit 1)
                                    "local[2147483648]", "local[*,2147483648]", "spark://host:notaport",
                                    "spark://host:99999", "spark://host:0", "spark://host"])
def test_other_master_urls_are_refused_naming_the_option(master):
    with pytest.raises(InstanceError, match=r"^--master: .* is not a Spark master URL"):
        check_master(master)
