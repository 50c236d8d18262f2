"""JSON Schemas of the instance families, shipped for projects in other languages."""

from __future__ import annotations

import json
from importlib import resources

from ..errors import InstanceError
from ..instance import FAMILIES


def schema(family: str) -> dict:
    """The JSON Schema (draft 2020-12) of one instance family."""
    if family not in FAMILIES:
        raise InstanceError("FAMILY", f"unknown family {family!r}; one of {', '.join(FAMILIES)}")
    return json.loads(resources.files(__package__).joinpath(f"{family}.json").read_text("utf-8"))
