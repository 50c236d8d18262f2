"""One time budget for a whole run: a :class:`Deadline` made where the run starts and passed down.

Kept free of heavy imports (no numpy, no HiGHS) so the registry and the
command line can make one; ``kipopt.formulations.highs`` re-exports it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

MIN_SOLVER_SECONDS = 0.01
"""The least time limit handed to HiGHS (it rejects 0); an expired deadline still gets this much."""


@dataclass(frozen=True)
class Deadline:
    """An instant on ``time.perf_counter()``'s clock by which a whole run must end (``None``: never).

    Made once where the run starts (the command line starts it before reading
    the instance) and passed down, so model building and every solve share one
    budget: each solve gets :meth:`remaining`, not the full limit again.

    >>> Deadline.never().remaining() is None, Deadline.after(None).expired
    (True, False)
    >>> d = Deadline.after(60.0); 59 < d.remaining() <= 60, d.expired
    (True, False)
    >>> Deadline.after(-1.0).expired
    True
    """

    at: float | None = None

    @staticmethod
    def never() -> Deadline:
        return Deadline(None)

    @staticmethod
    def after(seconds: float | None, start: float | None = None) -> Deadline:
        """``seconds`` from ``start`` (default now); ``None`` seconds: no deadline."""
        if seconds is None:
            return Deadline(None)
        return Deadline((time.perf_counter() if start is None else start) + seconds)

    def remaining(self) -> float | None:
        """Seconds left (may be negative), or ``None`` without a deadline."""
        return None if self.at is None else self.at - time.perf_counter()

    @property
    def expired(self) -> bool:
        return self.at is not None and time.perf_counter() >= self.at

    def limit(self, time_limit: float | None = None) -> float | None:
        """The time limit for one solve: the smaller of ``time_limit`` and what is left (at least
        :data:`MIN_SOLVER_SECONDS`)."""
        left = self.remaining()
        if left is None:
            return time_limit
        left = max(MIN_SOLVER_SECONDS, left)
        return left if time_limit is None else min(time_limit, left)
