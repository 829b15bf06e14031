"""`kafpy leader-election` option checks, with kafka-leader-election.sh 2.8's messages: each
refusal is one line on stderr and exit status 1, before anything is sent."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from kafpy.cli.leader_election import command

B = ["--bootstrap-server", "127.0.0.1:1"]


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(command, list(args))
    return result.exit_code, result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--election-type", "preferred", "--all-topic-partitions"],
         "Missing required option(s): bootstrap-server"),
        ([*B, "--all-topic-partitions"], "Missing required option(s): election-type"),
        ([*B, "--election-type", "preferred"],
         "One and only one of the following options is required: topic, all-topic-partitions, "
         "path-to-json-file"),
        ([*B, "--election-type", "preferred", "--all-topic-partitions", "--topic", "t",
          "--partition", "0"],
         "One and only one of the following options is required: topic, all-topic-partitions, "
         "path-to-json-file"),
        ([*B, "--election-type", "preferred", "--topic", "t"],
         "Missing required option(s): partition"),
        ([*B, "--election-type", "preferred", "--all-topic-partitions", "--partition", "0"],
         "Option partition is only allowed if topic is used"),
        ([*B, "--election-type", "dirty", "--all-topic-partitions"],
         "Invalid election type 'dirty': use preferred or unclean"),
        (["--zookeeper", "127.0.0.1:1", "--election-type", "unclean", "--all-topic-partitions"],
         "--zookeeper runs preferred elections only; use --bootstrap-server for unclean"),
    ],
)  # fmt: skip
def test_option_errors(args: list[str], message: str) -> None:
    assert run(*args) == (1, f"{message} (see 'kafpy leader-election --help')\n")


def test_json_file_errors(tmp_path: Path) -> None:
    path = tmp_path / "election.json"
    entries = [{"topic": "t", "partition": 1}, {"topic": "t", "partition": 1}]
    path.write_text(json.dumps({"partitions": entries}))
    args = [*B, "--election-type", "preferred", "--path-to-json-file", str(path)]
    assert run(*args) == (1, "Replica election data contains duplicate partitions: t-1\n")
    path.write_text(json.dumps({"topics": []}))
    assert run(*args) == (
        1,
        f'Replica election data is missing "partitions" field in {path}\n',
    )
    path.write_text(json.dumps({"partitions": [{"topic": "t", "partition": "1"}]}))
    code, output = run(*args)
    assert code == 1 and 'needs a string "topic" and an integer "partition"' in output


def test_admin_config_keys_kafpy_cannot_honour_are_refused(tmp_path: Path) -> None:
    config = tmp_path / "admin.properties"
    config.write_text("security.protocol=SASL_SSL\nrequest.timeout.ms=5000\n")
    code, output = run(*B, "--admin.config", str(config), "--election-type", "preferred",
                       "--all-topic-partitions")  # fmt: skip
    assert code == 1
    assert output.startswith(f"sasl.mechanism in {config} is GSSAPI, which needs a Kerberos login")
    config.write_text("ssl.keystore.location=/k.jks\nsocket.connection.setup.timeout.ms=1\n")
    code, output = run(*B, "--admin.config", str(config), "--election-type", "preferred",
                       "--all-topic-partitions")  # fmt: skip
    assert code == 1
    assert output.startswith(
        f"kafpy's admin client does not support socket.connection.setup.timeout.ms (from {config});"
    )
