"""Wires the records package's fixtures (tests/unit/records/fixtures.py)."""

from tests.unit.records.fixtures import kafka_python_codecs  # noqa: F401
