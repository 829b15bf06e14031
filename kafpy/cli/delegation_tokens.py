"""`kafpy delegation-tokens`: create, renew, expire and describe delegation tokens
(kafka-delegation-tokens.sh, Kafka 2.8's DelegationTokenCommand).

`--bootstrap-server B --command-config F` and exactly one action:
`--create --max-life-time-period MS [--renewer-principal User:bob ...]`,
`--renew --hmac H --renew-time-period MS`, `--expire --hmac H --expiry-time-period MS`,
`--describe [--owner-principal User:alice ...]`. The command config holds the client's
security settings: tokens are only served on authenticated (SASL or two-way SSL)
connections. Output lines are Kafka's, the token table included (dates in local time).
"""

from __future__ import annotations

import base64
import binascii
from datetime import datetime

import click

from kafpy.cli.command_line_utils import (
    AdminCommand,
    OneLineError,
    load_command_config,
    run_command,
)
from kafpy.client.admin_client import AdminClient
from kafpy.security.delegation_token_cache import DelegationToken
from kafpy.security.kafka_principal import KafkaPrincipal

_ROW = "{:<15} {:<30} {:<15} {:<25} {:<15} {:<15} {:<15}"
_ACTIONS = ("create", "renew", "expire", "describe")
_INVALID = {  # options each action refuses (Kafka's checkInvalidArgs)
    "create": ("hmac", "renew-time-period", "expiry-time-period", "owner-principal"),
    "renew": ("renewer-principal", "max-life-time-period", "expiry-time-period", "owner-principal"),
    "expire": ("renewer-principal", "max-life-time-period", "renew-time-period", "owner-principal"),
    "describe": ("renewer-principal", "max-life-time-period", "hmac", "renew-time-period",
                 "expiry-time-period"),
}  # fmt: skip
_REQUIRED = {
    "create": ("max-life-time-period",),
    "renew": ("hmac", "renew-time-period"),
    "expire": ("hmac", "expiry-time-period"),
    "describe": (),
}


def _date(ms: int) -> str:
    """Java's SimpleDateFormat("yyyy-MM-dd'T'HH:mm") in local time."""
    return datetime.fromtimestamp(ms / 1000).strftime("%Y-%m-%dT%H:%M")


def _java_list(items: list[str]) -> str:
    return "[" + ", ".join(items) + "]"


def token_table(tokens: list[DelegationToken]) -> str:
    """Kafka's printToken: a header line, then one line per token."""
    out = "\n" + _ROW.format("TOKENID", "HMAC", "OWNER", "RENEWERS", "ISSUEDATE", "EXPIRYDATE",
                             "MAXDATE")  # fmt: skip
    for token in tokens:
        info = token.token_info
        out += "\n" + _ROW.format(
            info.token_id, token.hmac_as_base64_string, str(info.owner),
            _java_list(info.renewers_as_string()), _date(info.issue_timestamp),
            _date(info.expiry_timestamp), _date(info.max_timestamp),
        ) + "\n"  # fmt: skip
    return out


def _principals(values: tuple[str, ...], option: str) -> list[KafkaPrincipal]:
    try:
        return [KafkaPrincipal.from_string(v.strip()) for v in values]
    except ValueError as e:
        raise OneLineError(f"--{option}: {e}") from None


def _hmac(text: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise OneLineError(f"--hmac {text} is not base64 (the HMAC --create printed)") from None


@click.command(
    "delegation-tokens",
    cls=AdminCommand,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.option(
    "--bootstrap-server", metavar="HOST:PORT", help="REQUIRED: server(s) to use for bootstrapping."
)
@click.option(
    "--command-config",
    metavar="FILE",
    help="REQUIRED: A property file containing configs to be passed to Admin Client. "
    "Token management operations are allowed in secure mode only. This config file is "
    "used to pass security related configs.",
)
@click.option(
    "--create",
    is_flag=True,
    help="Create a new delegation token. Use --renewer-principal option to pass "
    "renewers principals.",
)
@click.option(
    "--renew",
    is_flag=True,
    help="Renew delegation token. Use --renew-time-period option to set renew time period.",
)
@click.option(
    "--expire",
    is_flag=True,
    help="Expire delegation token. Use --expiry-time-period option to expire the token.",
)
@click.option(
    "--describe",
    is_flag=True,
    help="Describe delegation tokens for the given principals. Use --owner-principal "
    "to pass owner/renewer principals. If --owner-principal option is not supplied, all "
    "the user owned tokens and tokens where user have Describe permission will be "
    "returned.",
)
@click.option(
    "--owner-principal",
    multiple=True,
    help="owner is a kafka principal. It is should be in principalType:name format.",
)
@click.option(
    "--renewer-principal",
    multiple=True,
    help="renewer is a kafka principal. It is should be in principalType:name format.",
)
@click.option(
    "--max-life-time-period",
    type=int,
    help="Max life period for the token in milliseconds. If the value is -1, then token "
    "max life time will default to a server side config value "
    "(delegation.token.max.lifetime.ms).",
)
@click.option(
    "--renew-time-period",
    type=int,
    help="Renew time period in milliseconds. If the value is -1, then the renew time "
    "period will default to a server side config value (delegation.token.expiry.time.ms).",
)
@click.option(
    "--expiry-time-period",
    type=int,
    help="Expiry time period in milliseconds. If the value is -1, then the token will get "
    "invalidated immediately.",
)
@click.option("--hmac", help="HMAC of the delegation token")
def command(bootstrap_server: str | None, command_config: str | None, create: bool, renew: bool,
            expire: bool, describe: bool, owner_principal: tuple[str, ...],
            renewer_principal: tuple[str, ...], max_life_time_period: int | None,
            renew_time_period: int | None, expiry_time_period: int | None,
            hmac: str | None) -> None:  # fmt: skip
    """Tool to create, renew, expire, or describe delegation tokens."""
    chosen = [a for a, on in zip(_ACTIONS, (create, renew, expire, describe), strict=True) if on]
    if len(chosen) != 1:
        raise OneLineError(
            "Command must include exactly one action: --create, --renew, --expire or --describe"
        )
    action = chosen[0]
    given = {
        "bootstrap-server": bootstrap_server, "command-config": command_config, "hmac": hmac,
        "owner-principal": owner_principal or None, "renewer-principal": renewer_principal or None,
        "max-life-time-period": max_life_time_period, "renew-time-period": renew_time_period,
        "expiry-time-period": expiry_time_period,
    }  # fmt: skip
    missing = [o for o in ("bootstrap-server", "command-config", *_REQUIRED[action])
               if given[o] is None]  # fmt: skip
    if missing:
        raise OneLineError(f'Missing required argument "[{", ".join(missing)}]"')
    invalid = [o for o in _INVALID[action] if given[o] is not None]
    if invalid:
        raise OneLineError(f'Option "[{action}]" can\'t be used with option "[{invalid[0]}]"')
    assert bootstrap_server is not None
    options = load_command_config(command_config, lambda m: click.echo(m, err=True))
    renewers = _principals(renewer_principal, "renewer-principal")
    owners = _principals(owner_principal, "owner-principal") if owner_principal else None
    hmac_bytes = _hmac(hmac) if hmac is not None else b""

    async def main() -> None:
        async with AdminClient.connect(bootstrap_server, **options) as admin:
            if action == "create":
                click.echo(f"Calling create token operation with renewers :"
                           f"{_java_list([str(r) for r in renewers])} , max-life-time-period :"
                           f"{max_life_time_period}")  # fmt: skip
                assert max_life_time_period is not None
                token = await admin.create_delegation_token(renewers, max_life_time_period)
                click.echo(f"Created delegation token with tokenId : {token.token_info.token_id}")
                click.echo(token_table([token]), nl=False)
            elif action == "renew":
                click.echo(f"Calling renew token operation with hmac :{hmac} , "
                           f"renew-time-period :{renew_time_period}")  # fmt: skip
                assert renew_time_period is not None
                expiry = await admin.renew_delegation_token(hmac_bytes, renew_time_period)
                click.echo(f"Completed renew operation. New expiry date : {_date(expiry)}")
            elif action == "expire":
                click.echo(f"Calling expire token operation with hmac :{hmac} , "
                           f"expire-time-period : {expiry_time_period}")  # fmt: skip
                assert expiry_time_period is not None
                expiry = await admin.expire_delegation_token(hmac_bytes, expiry_time_period)
                click.echo(f"Completed expire operation. New expiry date : {_date(expiry)}")
            else:
                if owners is None:
                    click.echo("Calling describe token operation for current user.")
                else:
                    click.echo("Calling describe token operation for owners :"
                               + _java_list([str(o) for o in owners]))  # fmt: skip
                tokens = await admin.describe_delegation_token(owners)
                click.echo(f"Total number of tokens : {len(tokens)}")
                click.echo(token_table(tokens), nl=not tokens)

    run_command(main, "Error while executing delegation token command : ")
