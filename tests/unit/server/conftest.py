"""Wires the server package's fixtures (tests/unit/server/fixtures.py)."""

from tests.unit.server.fixtures import broker  # noqa: F401
