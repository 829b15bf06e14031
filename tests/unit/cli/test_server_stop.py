"""Which processes `kafpy server-stop` takes for kafpy brokers."""

from __future__ import annotations

import pytest

from kafpy.cli.server_stop import is_broker_command_line


@pytest.mark.parametrize(
    ("argv", "broker"),
    [
        (["/venv/bin/python", "-m", "kafpy", "server", "--override", "broker.id=1"], True),
        (["/venv/bin/python3.11", "/venv/bin/kafpy", "server", "config/server.properties"], True),
        (["/venv/bin/kafpy", "server"], True),
        (["kafpy", "server", "config/server.properties"], True),
        (["/venv/bin/python", "-m", "kafpy", "server-stop"], False),
        (["/venv/bin/python", "-m", "kafpy", "topics", "--list"], False),
        (["grep", "kafpy", "server"], False),
        (["vim", "kafpy", "server"], False),
        (["/venv/bin/python", "-m", "pytest", "-k", "kafpy", "server"], False),
        ([], False),
    ],
)
def test_is_broker_command_line(argv: list[str], broker: bool) -> None:
    assert is_broker_command_line(argv) is broker
