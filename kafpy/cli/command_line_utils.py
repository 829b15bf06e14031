"""What every `kafpy` admin command shares, after Kafka's `kafka.utils.CommandLineUtils`.

A usage or runtime failure is one line on stderr and exit status 1 (`OneLineError`,
`AdminCommand`); library log lines stay off the terminal (`quiet_logging`); an async
command body runs with every failure turned into that one line (`run_command`), on a
metadata store opened for it if the command works through `--zookeeper` (`run_on_store`);
`--command-config` files become the admin client's options (`admin_client_options`), and
client security settings a ClientSecurity (`client_security`); a client's properties file
(`--producer.config`, `--consumer.config`) is read by `load_config_file`;
repeatable `KEY=VALUE` options become properties (`parse_key_value_args`), read with
`property_flag`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any

import click

from kafpy.client.client_config import ClientConfig, ClientConfigError, Expected
from kafpy.client.client_security import ClientSecurity
from kafpy.common.errors import InvalidConfigurationError
from kafpy.common.properties import PropertiesError, load_properties
from kafpy.metadata.kafka_zk_client import KafkaZkClient
from kafpy.metadata.store_factory import create_store
from kafpy.security.ssl_configs import SSL_CONFIG_DEF

CONNECTION_TIMEOUT_MS = 30000


def parse_overrides(values: tuple[str, ...]) -> dict[str, str]:
    """`--override key=value` options as a dict (a later one wins); BadParameter for one
    that is not key=value."""
    out: dict[str, str] = {}
    for v in values:
        key, sep, value = v.partition("=")
        if not sep or not key.strip():
            raise click.BadParameter(f"'{v}' is not of the form key=value", param_hint="--override")
        out[key.strip()] = value.strip()
    return out


class OneLineError(click.ClickException):
    """A failure shown to the user as one line on stderr, exit status 1."""

    exit_code = 1

    def show(self, file: Any = None) -> None:
        click.echo(self.format_message(), err=True)


class AdminCommand(click.Command):
    """A click command whose usage errors are one line (with a pointer to --help)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)
        except click.UsageError as e:
            raise OneLineError(f"{e.format_message()} (see 'kafpy {self.name} --help')") from None


def quiet_logging() -> None:
    """Keep library log lines (kazoo's reconnection warnings) off the terminal: the command's
    own output and its one-line error are what the user reads."""
    root = logging.getLogger()
    if not root.handlers:
        root.addHandler(logging.NullHandler())


def run_command(
    main: Callable[[], Awaitable[None]], error_prefix: str, *, interrupt_is_error: bool = True
) -> None:
    """Run the coroutine function `main` to completion; any other failure becomes a
    OneLineError starting with `error_prefix` (a OneLineError of `main` is shown as it
    is). An interrupt is a failure too, unless `interrupt_is_error` is False: then it just
    ends the command, as Ctrl-C ends Kafka's console producer and consumer."""

    async def body() -> None:
        await main()

    quiet_logging()
    try:
        asyncio.run(body())
    except KeyboardInterrupt:
        if interrupt_is_error:
            raise OneLineError(f"{error_prefix}interrupted") from None
    except OneLineError:
        raise
    except Exception as e:  # every failure is reported as one line, never a traceback
        message = str(e) or type(e).__name__
        raise OneLineError(f"{error_prefix}{message}") from None


def run_on_store(
    zookeeper: str, body: Callable[[KafkaZkClient], Awaitable[None]], error_prefix: str
) -> None:
    """Open the store at `zookeeper`, run `body`, close; any failure becomes a OneLineError."""

    async def main() -> None:
        store = create_store(zookeeper, None, connection_timeout_ms=CONNECTION_TIMEOUT_MS)
        await store.start()
        try:
            await body(KafkaZkClient(store))
        finally:
            await store.close()

    run_command(main, error_prefix)


def parse_key_value_args(pairs: Iterable[str], option: str, command: str) -> dict[str, str]:
    """The properties given as `KEY=VALUE` by the repeatable `option` of `kafpy <command>`
    (Kafka's CommandLineUtils.parseKeyValueArgs); the value may contain '='. A pair
    without '=' or without a key is a OneLineError."""
    props: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise OneLineError(
                f"Invalid {option} '{pair}': expected KEY=VALUE (see 'kafpy {command} --help')"
            )
        props[key.strip()] = value
    return props


def property_flag(props: Mapping[str, str], key: str, default: bool) -> bool:
    """The boolean property `key`: true only when it says true (any case), as Kafka reads it."""
    return props.get(key, str(default)).strip().lower() == "true"


def unescape(text: str) -> str:
    """Separators given on the command line may be written as \\t, \\n, \\r."""
    return text.replace("\\t", "\t").replace("\\n", "\n").replace("\\r", "\r")


# Kafka admin client configs kafpy's client honours, and its keyword argument for each.
_ADMIN_CLIENT_CONFIGS = {
    "client.id": "client_id",
    "request.timeout.ms": "request_timeout_ms",
    "retries": "retries",
    "retry.backoff.ms": "retry_backoff_ms",
    "socket.connection.setup.timeout.ms": "connect_timeout_ms",
}
# Read by Kafka's admin client too, and harmless to leave to kafpy's behaviour: the command
# line's --bootstrap-server wins, and the others tune timing and buffers only.
_IGNORED_ADMIN_CLIENT_CONFIGS = {
    "bootstrap.servers",
    "client.dns.lookup",
    "connections.max.idle.ms",
    "default.api.timeout.ms",
    "metadata.max.age.ms",
    "receive.buffer.bytes",
    "reconnect.backoff.max.ms",
    "reconnect.backoff.ms",
    "send.buffer.bytes",
    "socket.connection.setup.timeout.max.ms",
}
_UNSUPPORTED_SECURITY_PREFIXES = ("sasl.", "security.")


def client_security(config: Mapping[str, str], source: str) -> ClientSecurity:
    """The transport security (`security.protocol`, `ssl.*`) a client config file or its
    properties ask for; what kafpy's client cannot honour (SASL) or read is a OneLineError."""
    try:
        return ClientSecurity.from_config(config, source=source)
    except InvalidConfigurationError as e:
        raise OneLineError(str(e)) from None


def _config_int(key: str, value: str, source: str, client_config: ClientConfig | None) -> int:
    """The number `value` of `key` (read through `client_config` when one is given), at
    least 0; a OneLineError naming the key and `source` otherwise."""
    if client_config is None:
        try:
            number = int(value)
        except ValueError:
            raise OneLineError(
                f"Invalid value {value} for configuration {key} in {source}: "
                "not a number of type int"
            ) from None
    else:
        try:
            number = client_config.get_int(key)
        except ClientConfigError as e:
            if e.expected is not Expected.NUMBER:
                raise  # get_int checks no minimum here
            raise OneLineError(
                f"Invalid value {value} for configuration {key} in {source}: "
                "not a number of type int"
            ) from None
    if number < 0:
        raise OneLineError(
            f"Invalid value {value} for configuration {key} in {source}: "
            "the value must be at least 0"
        )
    return number


def admin_client_options(
    config: Mapping[str, str],
    source: str,
    warn: Callable[[str], None],
    client_config: ClientConfig | None = None,
) -> dict[str, Any]:
    """The KafkaClient keyword arguments for the admin client configs of a --command-config
    file (`source` names it in messages): `security.protocol` with Kafka's `ssl.*` and
    `sasl.*` client keys becomes the client's ClientSecurity; what kafpy's client cannot
    honour or read is refused, never connected without. A config kafpy does not use is
    reported through `warn`. A tool that reads the file as a producer's or consumer's
    properties passes them as `client_config`, which then reads the numbers."""
    security = client_security(config, source)
    refused = sorted(
        k
        for k in config
        if k.startswith(_UNSUPPORTED_SECURITY_PREFIXES)
        and k != "security.protocol"
        and not (security.sasl is not None and k.startswith("sasl."))
    )
    if refused:
        raise OneLineError(
            f"{', '.join(refused)} in {source} cannot be honoured with "
            f"security.protocol={security.security_protocol}: kafpy's client reads sasl.* keys "
            "only with SASL_PLAINTEXT or SASL_SSL. Set security.protocol or remove these settings."
        )
    options: dict[str, Any] = (
        {"security": security} if security.security_protocol != "PLAINTEXT" else {}
    )
    for key, value in config.items():
        if key in SSL_CONFIG_DEF and security.uses_tls:
            continue
        if key in _ADMIN_CLIENT_CONFIGS:
            name = _ADMIN_CLIENT_CONFIGS[key]
            if name == "client_id":
                options[name] = value
                continue
            options[name] = _config_int(key, value, source, client_config)
        elif key not in _IGNORED_ADMIN_CLIENT_CONFIGS and not (
            key == "security.protocol" or (security.sasl is not None and key.startswith("sasl."))
        ):
            warn(
                f"WARNING: The configuration '{key}' in {source} isn't used by kafpy's admin client."
            )
    return options


def load_config_file(path: str | None, hint: str = "") -> dict[str, str]:
    """The properties of the client config file at `path` (none when it is None); an
    unreadable file is a OneLineError, its message followed by `hint` when one is given."""
    if path is None:
        return {}
    try:
        return load_properties(path)
    except PropertiesError as e:
        raise OneLineError(f"{e} {hint}" if hint else str(e)) from None


def load_command_config(path: str | None, warn: Callable[[str], None]) -> dict[str, Any]:
    """The admin client's options from the --command-config properties file at `path`
    (none when it is None); an unreadable file or a refused setting is a OneLineError."""
    if path is None:
        return {}
    return admin_client_options(load_config_file(path), path, warn)
