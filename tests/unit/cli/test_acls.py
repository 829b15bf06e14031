"""`kafpy acls` option handling: every kafka-acls.sh flag in --help, usage errors as one
line naming the fix, before anything is connected to."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from kafpy.cli.acls import command


def test_help_documents_every_flag() -> None:
    result = CliRunner().invoke(command, ["--help"], terminal_width=200)
    assert result.exit_code == 0
    for flag in (
        "--bootstrap-server", "--command-config", "--authorizer-properties", "--authorizer",
        "--add", "--remove", "--list", "--allow-principal", "--deny-principal", "--allow-host",
        "--deny-host", "--operation", "--topic", "--group", "--cluster", "--transactional-id",
        "--resource-pattern-type", "--producer", "--consumer", "--idempotent", "--force",
        "--principal",
    ):  # fmt: skip
        assert flag in result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--list"], 'Missing required argument "[authorizer-properties]"'),
        (["--bootstrap-server", "b:1", "--authorizer", "AclAuthorizer", "--list"],
         "Only one of --bootstrap-server or --authorizer must be specified"),
        (["--command-config", "f", "--authorizer-properties", "zookeeper.connect=z", "--list"],
         "The --command-config option can only be used with --bootstrap-server option"),
        (["--bootstrap-server", "b:1", "--add", "--topic", "t", "--allow-principal", "bob"],
         "Invalid principal 'bob': expected the form 'User:name' (type, colon, name)"),
        (["--bootstrap-server", "b:1", "--add", "--topic", "t", "--allow-principal", "User:bob",
          "--operation", "Jump"], "Unknown operation 'Jump'"),
        (["--bootstrap-server", "b:1", "--add", "--cluster", "--allow-principal", "User:bob",
          "--operation", "Read"], "ResourceType CLUSTER only supports operations"),
        (["--bootstrap-server", "b:1", "--add", "--topic", "t", "--allow-principal", "User:bob",
          "--resource-pattern-type", "any"],
         "A '--resource-pattern-type' value of 'ANY' is not valid when adding acls."),
    ],
)  # fmt: skip
def test_usage_errors_are_one_line_before_connecting(args: list[str], message: str) -> None:
    result = CliRunner().invoke(command, args)
    assert result.exit_code == 1
    assert message in result.output
    assert result.output.rstrip().endswith("(see 'kafpy acls --help')")
    assert len(result.output.splitlines()) == 1
