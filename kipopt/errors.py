"""Errors that the command line turns into one line and exit status 2."""

from __future__ import annotations


class KipoptError(Exception):
    """Base class for every error kipopt reports to a user without a traceback."""


class InstanceError(KipoptError, ValueError):
    """A malformed instance, solution or argument, naming the offending field.

    >>> str(InstanceError("clients.p1.capacity", "must be an integer >= 1, got 0"))
    'clients.p1.capacity: must be an integer >= 1, got 0'
    """

    def __init__(self, field: str, message: str):
        self.field = field
        self.message = message
        super().__init__(f"{field}: {message}")


class InputTypeError(InstanceError, TypeError):
    """A Python argument of the wrong type (a list where an instance or a solution goes): an
    :class:`InstanceError` for the caller of ``kipopt.testing``, and a :class:`TypeError` as Python's own are.

    >>> str(InputTypeError("instance", "not an instance, a JSON object or a path: list"))
    'instance: not an instance, a JSON object or a path: list'
    """


class MethodError(KipoptError):
    """A method that cannot run on a valid instance (e.g. no unique current owner)."""


class NotApplicableError(InstanceError):
    """A valid instance that a method does not apply to; ``reason`` starts with the field concerned.

    >>> str(NotApplicableError("kafka.x", "members[1].owned[0]: claimed twice"))
    'members[1].owned[0]: claimed twice'
    """

    def __init__(self, method: str, reason: str):
        field, _, message = reason.partition(": ")
        super().__init__(field, message or reason)
        self.method = method
        self.reason = reason
