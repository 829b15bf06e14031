"""`kafpy schema-registry`: refusals before it reads or serves anything, and a cluster that
is not there."""

from __future__ import annotations

import socket
from pathlib import Path

from click.testing import CliRunner

from kafpy.cli.schema_registry import command


def test_the_bootstrap_servers_are_required(tmp_path: Path) -> None:
    props = tmp_path / "schema-registry.properties"
    props.write_text("listeners=http://127.0.0.1:0\n")
    result = CliRunner().invoke(command, [str(props)])
    assert result.exit_code == 1
    assert "kafkastore.bootstrap.servers" in result.output and "Traceback" not in result.output


def test_overrides_are_keys_too() -> None:
    result = CliRunner().invoke(
        command,
        ["--override", "kafkastore.bootstrap.servers=127.0.0.1:9092", "--override",
         "kafkastore.connection.url=localhost:2181"],
    )  # fmt: skip
    assert result.exit_code == 1
    assert "kafkastore.connection.url" in result.output and "not supported" in result.output


def test_an_unreachable_cluster_fails_after_the_init_timeout() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    result = CliRunner().invoke(
        command,
        ["--override", f"kafkastore.bootstrap.servers=127.0.0.1:{port}", "--override",
         "kafkastore.init.timeout.ms=1500", "--override", "listeners=http://127.0.0.1:0"],
    )  # fmt: skip
    assert result.exit_code == 1
    assert "kafpy schema-registry:" in result.output and "Traceback" not in result.output
