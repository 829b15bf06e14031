"""`kafpy reassign-partitions` usage errors: one line naming the problem, before anything
is contacted (the actions themselves are tested in tests/unit/admin and tests/cluster)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from kafpy.cli.reassign_partitions import command


@pytest.mark.parametrize(
    ("args", "error"),
    [
        ([], "exactly one action"),
        (["--generate", "--verify"], "exactly one action"),
        (["--list"], "Please specify --bootstrap-server"),
        (["--zookeeper", "z:2181", "--list"], "--list needs --bootstrap-server"),
        (["--bootstrap-server", "b:9092", "--zookeeper", "z:2181", "--list"], "not both"),
        (["--bootstrap-server", "b:9092", "--execute", "--throttle", "fast"],
         "--throttle must be a whole number of bytes per second, not 'fast'"),
        (["--bootstrap-server", "b:9092", "--verify", "--throttle", "10"], "go with --execute"),
        (["--bootstrap-server", "b:9092", "--execute"], "reassignment-json-file"),
        (["--bootstrap-server", "b:9092", "--execute", "--reassignment-json-file", "/nonexistent"],
         "Cannot read the file /nonexistent"),
    ],
)  # fmt: skip
def test_usage_errors(args: list[str], error: str) -> None:
    result = CliRunner().invoke(command, args)
    assert result.exit_code == 1
    assert error in result.output


def test_malformed_json_is_refused_before_connecting(tmp_path: Path) -> None:
    plan = tmp_path / "plan.json"
    plan.write_text("{not json")
    # port 1 has no broker: the file is refused before any connection is tried
    result = CliRunner().invoke(
        command,
        ["--bootstrap-server", "127.0.0.1:1", "--execute", "--reassignment-json-file", str(plan)],
    )
    assert result.exit_code == 1
    assert "not a valid JSON" in result.output
