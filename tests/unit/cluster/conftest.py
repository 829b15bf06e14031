"""Wires the server package's broker fixture (tests/unit/server/fixtures.py) for partition tests."""

from tests.unit.server.fixtures import broker  # noqa: F401
