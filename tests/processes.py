"""Processes a test started, found by a marker variable in their environment (every process kipopt starts
inherits it: HiGHS children, Spark's JVM, PySpark's workers, CBC)."""

from __future__ import annotations

import os


def marked(marker: str, mark: str) -> list[tuple[int, str]]:
    """Live processes whose environment carries ``marker=mark`` (zombies have none and do not count), with
    their command lines."""
    needle = f"{marker}={mark}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as handle:
                if needle not in handle.read().split(b"\0"):
                    continue
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                found.append((int(entry), handle.read().replace(b"\0", b" ").decode(errors="replace")))
        except OSError:
            continue
    return found
