"""`kafpy delegation-tokens`: its argument checks (Kafka's) and the token table. The
operations against a broker are in tests/integration/test_delegation_tokens.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from kafpy.cli.delegation_tokens import command, token_table
from kafpy.security.delegation_token_cache import DelegationToken, TokenInformation
from kafpy.security.kafka_principal import KafkaPrincipal


@pytest.mark.parametrize(
    "args,message",
    [
        ([], "Command must include exactly one action"),
        (["--create", "--describe"], "exactly one action"),
        (["--create"], 'Missing required argument "[bootstrap-server, command-config, '
                       'max-life-time-period]"'),
        (["--renew", "--bootstrap-server", "h:1", "--command-config", "f", "--hmac", "x"],
         '"[renew-time-period]"'),
        (["--create", "--bootstrap-server", "h:1", "--command-config", "f",
          "--max-life-time-period", "-1", "--hmac", "x"],
         'Option "[create]" can\'t be used with option "[hmac]"'),
        (["--describe", "--bootstrap-server", "h:1", "--command-config", "f",
          "--renewer-principal", "User:b"], "can't be used with option \"[renewer-principal]\""),
    ],
)  # fmt: skip
def test_argument_checks(args: list[str], message: str) -> None:
    result = CliRunner().invoke(command, args)
    assert result.exit_code == 1 and message in result.output


def test_bad_principal_and_hmac_are_one_line_errors(tmp_path: Path) -> None:
    config = tmp_path / "c.properties"
    config.write_text("")
    base = ["--bootstrap-server", "127.0.0.1:1", "--command-config", str(config)]
    result = CliRunner().invoke(command, [*base, "--describe", "--owner-principal", "alice"])
    assert result.exit_code == 1 and "--owner-principal: Invalid principal 'alice'" in result.output
    result = CliRunner().invoke(
        command, [*base, "--renew", "--hmac", "not base64!", "--renew-time-period", "1"]
    )
    assert result.exit_code == 1 and "--hmac not base64! is not base64" in result.output


def test_token_table_is_kafkas() -> None:
    info = TokenInformation("tok", KafkaPrincipal("User", "alice"),
                            (KafkaPrincipal("User", "bob"),), 0, 0, 0)  # fmt: skip
    lines = token_table([DelegationToken(info, b"\x01\x02")]).split("\n")
    assert lines[0] == ""
    assert lines[1].split() == ["TOKENID", "HMAC", "OWNER", "RENEWERS", "ISSUEDATE",
                                "EXPIRYDATE", "MAXDATE"]  # fmt: skip
    assert lines[2].startswith("tok             AQI=                           User:alice      "
                               "[User:bob]                ")  # fmt: skip
    assert lines[3] == ""
