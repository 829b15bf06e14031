"""`kafpy transactions`: its argument checks (Kafka 3.0's), --abort's and
--describe-producers' included. The
operations against a broker are in tests/integration/test_transactions.py and
tests/integration/test_two_phase_commit.py."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from kafpy.cli.transactions import command

B = ["--bootstrap-server", "127.0.0.1:1"]


@pytest.mark.parametrize(
    "args,message",
    [
        ([*B], "Command must include exactly one action: --list, --describe, --describe-producers, --find-hanging, --abort"),
        ([*B, "--list", "--abort"], "exactly one action"),
        ([*B, "--abort", "--topic", "t"], "Option --abort requires --topic and --partition"),
        ([*B, "--describe-producers", "--partition", "0"],
         "Option --describe-producers requires --topic and --partition"),
        ([*B, "--abort", "--topic", "t", "--partition", "0"],
         "The transaction to abort must be identified either with --start-offset (for brokers on "
         "3.0 or above) or with --producer-id, --producer-epoch, and --coordinator-epoch (for "
         "older brokers)"),
        ([*B, "--abort", "--topic", "t", "--partition", "0", "--producer-id", "5"],
         "Missing required argument --producer-epoch"),
        ([*B, "--abort", "--topic", "t", "--partition", "0", "--producer-id", "5",
          "--producer-epoch", "1"], "Missing required argument --coordinator-epoch"),
    ],
)  # fmt: skip
def test_argument_checks(args: list[str], message: str) -> None:
    result = CliRunner().invoke(command, args)
    assert result.exit_code == 1 and message in result.output
