"""JSON Schemas of the instance families and of every document kipopt prints, for other languages.

Documents: ``solution`` (``solve``), ``check`` (``check`` and each ``check --batch``
verdict), ``evaluation`` (``evaluate`` and each ``evaluate --batch`` verdict),
``vector`` (one conformance vector) and ``manifest`` (a vectors folder's ``manifest.json``).
"""

from __future__ import annotations

import json

from ..errors import InstanceError
from ..instance import FAMILIES


DOCUMENTS = ("solution", "check", "evaluation", "vector", "manifest")


def schema(family: str) -> dict:
    """The JSON Schema (draft 2020-12) of one instance family or one document kipopt prints."""
    if family not in FAMILIES + DOCUMENTS:
        raise InstanceError("FAMILY", f"unknown family or document {family!r}; one of "
                                      f"{', '.join(FAMILIES + DOCUMENTS)}")
    from importlib import resources
    return json.loads(resources.files(__package__).joinpath(f"{family}.json").read_text("utf-8"))
