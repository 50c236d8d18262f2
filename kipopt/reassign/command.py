"""The ``kipopt reassign`` options and what the command does with them (``kipopt/cli.py`` registers it)."""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

from kipopt._write import unwritable
from kipopt.cli_types import _positive_float, _positive_int, _process_count
from kipopt.errors import InstanceError
from kipopt.reassign.kafka_files import load_json, read_assignment, read_log_dirs, read_rack_map
from kipopt.reassign.plan import (Scenario, brokers_with_racks, int_list, make_plan, name_list, rack_and_brokers)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--current", required=True, metavar="FILE",
                   help="the current assignment, as kafka-reassign-partitions.sh --generate prints it (- for stdin)")
    p.add_argument("--brokers", default=None, metavar="ID,ID", help="the cluster's brokers (default: those in "
                   "--current; an empty broker already in the cluster is named here or in --add-brokers)")
    p.add_argument("--racks", default=None, metavar="FILE", help='rack map {"<id>": "<rack>"} or {"brokers": '
                   '[{"id", "rack"}]} (it may name brokers still to be added)')
    p.add_argument("--disable-rack-aware", action="store_true",
                   help="place without racks (as Kafka's option; needed when only some brokers have a rack)")
    p.add_argument("--sizes", default=None, metavar="FILE", help="kafka-log-dirs.sh --describe JSON")
    p.add_argument("--add-brokers", default=None, metavar="ID[:RACK],...")
    p.add_argument("--add-rack", default=None, metavar="RACK=ID,ID,...")
    p.add_argument("--decommission", default=None, metavar="ID,ID", help="every replica on them moves")
    p.add_argument("--exclude-brokers", default=None, metavar="ID,ID",
                   help="left out of the placement (as left out of Kafka's --broker-list)")
    p.add_argument("--replication-factor", type=_positive_int, default=None)
    p.add_argument("--pin", default=None, metavar="TOPIC[:PARTITION],...", help="left exactly as they are")
    p.add_argument("--topics", default=None, metavar="TOPIC,...", help="only these topics")
    p.add_argument("--minimize", choices=("moves", "bytes"), default="moves",
                   help="moves (the rule's definition) or bytes moved (needs --sizes)")
    p.add_argument("--order", choices=("kip", "operators"), default="kip",
                   help="kip: replica balance, leader balance, moves (KIP-36's rule spread); operators: replica "
                        "balance, moves, then leaders (spread_moves_first: a leader change moves no data)")
    p.add_argument("--out", default=None, metavar="DIR", help="write DIR/reassignment.json (for --execute) and "
                   "DIR/rollback.json; without it both documents go into the printed summary")
    p.add_argument("--time-limit", type=_positive_float, default=None, help="seconds, for all topics together")
    p.add_argument("--threads", type=_process_count, default=None)


def scenario_of(args: argparse.Namespace) -> Scenario:
    racks = read_rack_map(load_json(args.racks, "--racks"), "--racks") if args.racks else {}
    add = brokers_with_racks(args.add_brokers, "--add-brokers") if args.add_brokers else {}
    added_by = dict.fromkeys(add, "--add-brokers")
    if args.add_rack:
        for b, rack in rack_and_brokers(args.add_rack, "--add-rack").items():
            if b in add:
                raise InstanceError("--add-rack", f"broker {b} is also in --add-brokers")
            add[b] = rack
            added_by[b] = "--add-rack"
    if args.minimize == "bytes" and not args.sizes:
        raise InstanceError("--minimize", "bytes needs --sizes (kafka-log-dirs.sh --describe JSON)")
    if args.order == "operators" and args.minimize == "bytes":
        raise InstanceError("--order", "operators with --minimize bytes is not offered yet")
    return Scenario(
        brokers=int_list(args.brokers, "--brokers") if args.brokers else None, racks=racks, add_brokers=add,
        decommission=int_list(args.decommission, "--decommission") if args.decommission else (),
        exclude=int_list(args.exclude_brokers, "--exclude-brokers") if args.exclude_brokers else (),
        replication_factor=args.replication_factor,
        pin=name_list(args.pin, "--pin") if args.pin else (),
        topics=name_list(args.topics, "--topics") if args.topics else None,
        by_bytes=args.minimize == "bytes", moves_first=args.order == "operators", time_limit=args.time_limit,
        threads=args.threads, rack_aware=not args.disable_rack_aware, added_by=added_by)


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Read the files, plan, write the two Kafka files; the summary to print."""
    scenario = scenario_of(args)
    current = read_assignment(load_json(args.current, "--current"), "--current")
    sizes = read_log_dirs(load_json(args.sizes, "--sizes", tool_output=True), "--sizes") if args.sizes else None
    plan = make_plan(current, scenario, sizes)
    out = dict(plan.summary)
    if args.out:
        out["files"] = _write(args.out, plan)
    else:
        out["reassignment"], out["rollback"] = plan.reassignment, plan.rollback
    return out


def _write(folder: str, plan: Any) -> dict[str, str]:
    """``folder/reassignment.json`` and ``folder/rollback.json``; none when no partition changes (Kafka's
    ``--execute`` refuses an empty list), and then none left from an earlier plan either."""
    files = {name: os.path.join(folder, f"{name}.json") for name in ("reassignment", "rollback")}
    try:
        os.makedirs(folder, exist_ok=True)
        if not plan.reassignment["partitions"]:
            for path in files.values():
                if os.path.isfile(path):
                    os.remove(path)
            return {}
        for name, doc in (("reassignment", plan.reassignment), ("rollback", plan.rollback)):
            with open(files[name], "w", encoding="utf-8") as handle:
                json.dump(doc, handle, separators=(",", ":"))
                handle.write("\n")
    except OSError as exc:
        raise InstanceError("--out", f"cannot write {folder}: {unwritable(folder, exc)}") from None
    return files
