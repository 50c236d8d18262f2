"""Adapters that run third-party Kafka client libraries' assignors on kipopt instances.

They are the plumbing of the downstream example in ``docs/oracle.md``
(``notebooks/downstream_kafka_python.ipynb``): each turns a consumers
instance into the library's own inputs, calls its assignor and returns a
solution object that ``kipopt check``, ``check --batch`` and
:mod:`kipopt.testing` read. The libraries are optional (``pip install
kipopt[clients]``); importing an adapter without its library raises
``ModuleNotFoundError``.
"""
