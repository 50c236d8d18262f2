"""What ``check`` accepts as "close enough": one relative gap, or an allowance per criterion.

Two forms, the same on the command line (``--tolerance``), in ``--batch``
lines (``"tolerance"``) and in :mod:`kipopt.testing`:

* a number ``X >= 0``: the relative gap of the rule's (scalar) objective to the
  exact bound, ``|objective - bound| / max(1, |objective|) <= X``;
* ``NAME=V,NAME=V`` (a string, or a JSON object ``{"NAME": V}``) for a rule
  with criteria (``metrics.criteria``: ``cross_rack`` and ``revoked`` for
  ``balanced``, ``cross_rack`` for ``range``, the stages of ``joint``, ...):
  each criterion may exceed the exact optimum's value of that criterion by
  ``V`` (an absolute count), or by ``V%`` of ``max(1, optimum's value)``;
  criteria not named may not exceed it at all.

>>> parse_tolerance("cross_rack=0,revoked=2").allowance("revoked", 10)
2.0
>>> parse_tolerance({"revoked": "10%"}).allowance("revoked", 30), parse_tolerance("revoked=10%").to_json()
(3.0, {'revoked': '10%'})
>>> parse_tolerance("0.01").relative, parse_tolerance(0).to_json()
(0.01, 0.0)
>>> parse_tolerance("revoked=-1")
Traceback (most recent call last):
kipopt.errors.InstanceError: --tolerance: revoked: must be a number >= 0 (or N%), got '-1'
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping

from .errors import InstanceError

FIELD = "--tolerance"


@dataclass(frozen=True)
class Allowance:
    """How far one criterion may exceed the optimum's: ``value`` counts, or ``value`` percent of it."""

    value: float
    percent: bool = False

    def of(self, optimum: float) -> float:
        return self.value * max(1.0, abs(optimum)) / 100 if self.percent else self.value

    def to_json(self) -> float | str:
        if self.percent:
            return f"{_number_text(self.value)}%"
        return int(self.value) if self.value.is_integer() else self.value


@dataclass(frozen=True)
class Tolerance:
    """A relative gap on the objective (``criteria`` None), or an allowance per named criterion."""

    relative: float = 0.0
    criteria: Mapping[str, Allowance] | None = field(default=None)
    where: str = field(default=FIELD, compare=False)  # the field it was read from, named by its errors

    @property
    def per_criterion(self) -> bool:
        return self.criteria is not None

    def allowance(self, name: str, optimum: float) -> float:
        found = (self.criteria or {}).get(name)
        return 0.0 if found is None else found.of(optimum)

    def check_names(self, rule: str, names: list[str] | None) -> None:
        """Refuse criteria the rule does not have (or any, for a rule without criteria)."""
        if not self.per_criterion:
            return
        if not names:
            raise InstanceError(self.where, f"rule {rule} has no criteria; give one relative gap such as 0.01")
        unknown = [n for n in self.criteria if n not in names]
        if unknown:
            raise InstanceError(self.where, f"rule {rule} has no criterion {unknown[0]!r}; its criteria: "
                                            f"{', '.join(names)}")

    def to_json(self) -> float | dict:
        if self.criteria is None:
            return self.relative
        return {name: a.to_json() for name, a in self.criteria.items()}


def parse_tolerance(value: Any, where: str = FIELD) -> Tolerance:
    """A :class:`Tolerance` from a number, a ``Tolerance``, ``"X"``, ``"NAME=V,..."`` or ``{"NAME": V}``."""
    if isinstance(value, Tolerance):
        return value
    if isinstance(value, bool):
        raise InstanceError(where, f"must be a number >= 0 or NAME=V,...; got {value!r}")
    if isinstance(value, (int, float)):
        return Tolerance(_relative(value, where), where=where)
    if isinstance(value, Mapping):
        if not value:
            raise InstanceError(where, "an object of criteria needs at least one NAME: V")
        return Tolerance(criteria={_name(k, where): _allowance(v, f"{where}: {k}") for k, v in value.items()},
                         where=where)
    if isinstance(value, str):
        text = value.strip()
        if "=" not in text:
            try:
                number = float(text)
            except ValueError:
                raise InstanceError(where, f"not a number nor NAME=V,NAME=V: {value!r}") from None
            return Tolerance(_relative(number, where), where=where)
        pairs: dict[str, Allowance] = {}
        for item in text.split(","):
            name, sep, amount = item.partition("=")
            if not sep:
                raise InstanceError(where, f"{item.strip()!r} is not NAME=V (e.g. cross_rack=0,revoked=2)")
            name = _name(name.strip(), where)
            if name in pairs:
                raise InstanceError(where, f"criterion {name!r} given twice")
            pairs[name] = _allowance(amount.strip(), f"{where}: {name}")
        return Tolerance(criteria=pairs, where=where)
    from ._read import _kind
    raise InstanceError(where, f"must be a number >= 0 or NAME=V,...; got {_kind(value)}")


def _relative(number: float, where: str) -> float:
    if isinstance(number, int) and number > 10**18:   # beyond float: a relative gap that large allows anything
        raise InstanceError(where, f"must be a finite number >= 0 of at most 18 digits, got {len(str(number))} digits")
    if not (number >= 0 and math.isfinite(number)):
        raise InstanceError(where, f"must be a finite number >= 0, got {number}")
    return float(number)


def _name(name: Any, where: str) -> str:
    if not isinstance(name, str) or not name or not name.replace("_", "").isalnum():
        raise InstanceError(where, f"{name!r} is not a criterion name")
    return name


def _allowance(amount: Any, where: str) -> Allowance:
    text = amount if isinstance(amount, str) else None
    percent = text is not None and text.endswith("%")
    try:
        number = float(text[:-1] if percent else text) if text is not None else float(amount)
        if isinstance(amount, bool):
            raise ValueError
    except (TypeError, ValueError):
        number = math.nan
    if not (number >= 0 and math.isfinite(number)):
        raise InstanceError(where, f"must be a number >= 0 (or N%), got {amount!r}")
    return Allowance(number, percent)


def _number_text(x: float) -> str:
    return str(int(x)) if x.is_integer() else repr(x)
