"""`kafpy console`'s options: refusals before it serves anything, and a taken port."""

from __future__ import annotations

import socket
from pathlib import Path

from click.testing import CliRunner

from kafpy.cli.console import command


def test_bootstrap_server_is_required() -> None:
    result = CliRunner().invoke(command, [])
    assert result.exit_code == 1
    assert "Missing option '--bootstrap-server'" in result.output
    assert "see 'kafpy console --help'" in result.output


def test_security_settings_the_client_cannot_honour_are_refused(tmp_path: Path) -> None:
    config = tmp_path / "client.properties"
    config.write_text("security.protocol=SASL_SSL\nsasl.mechanism=GSSAPI\n")
    result = CliRunner().invoke(
        command, ["--bootstrap-server", "127.0.0.1:9092", "--command-config", str(config)]
    )
    assert result.exit_code == 1
    assert "GSSAPI" in result.output and "Traceback" not in result.output


def test_a_bad_client_setting_names_the_key(tmp_path: Path) -> None:
    config = tmp_path / "client.properties"
    config.write_text("request.timeout.ms=soon\n")
    result = CliRunner().invoke(
        command, ["--bootstrap-server", "127.0.0.1:9092", "--command-config", str(config)]
    )
    assert result.exit_code == 1
    assert "Invalid value soon for configuration request.timeout.ms" in result.output


def test_a_port_in_use_is_one_line_naming_the_option() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = CliRunner().invoke(
            command, ["--bootstrap-server", "127.0.0.1:9092", "--port", str(port)]
        )
    assert result.exit_code == 1
    assert result.output.startswith(f"Cannot listen on 127.0.0.1:{port}: ")
    assert result.output.rstrip().endswith("Choose another --port.")
    assert "Traceback" not in result.output
