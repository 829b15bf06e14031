"""The shared CLI helpers: --command-config files as admin client options, KEY=VALUE
options as properties."""

from __future__ import annotations

import pytest

from kafpy.cli.command_line_utils import (
    OneLineError,
    admin_client_options,
    load_command_config,
    parse_key_value_args,
    property_flag,
    run_command,
    unescape,
)
from kafpy.client.client_security import SaslCredentials
from kafpy.security.local_pki import TestPki


def test_admin_client_configs_become_client_options() -> None:
    warnings: list[str] = []
    options = admin_client_options(
        {
            "client.id": "ops",
            "request.timeout.ms": "5000",
            "retries": "2",
            "retry.backoff.ms": "50",
            "socket.connection.setup.timeout.ms": "3000",
            "security.protocol": "plaintext",
            "bootstrap.servers": "elsewhere:9092",
            "metadata.max.age.ms": "1000",
            "acks": "all",
        },
        "admin.properties",
        warnings.append,
    )
    assert options == {
        "client_id": "ops",
        "request_timeout_ms": 5000,
        "retries": 2,
        "retry_backoff_ms": 50,
        "connect_timeout_ms": 3000,
    }
    assert warnings == [
        "WARNING: The configuration 'acks' in admin.properties isn't used by kafpy's admin client."
    ]


@pytest.mark.parametrize(
    ("config", "message"),
    [
        (
            {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "GSSAPI"},
            "sasl.mechanism in f is GSSAPI, which needs a Kerberos login",
        ),
        ({"security.protocol": "SASL_PLAINTEXT"}, "sasl.mechanism in f is GSSAPI"),
        (
            {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN"},
            "SASL needs credentials in f: set sasl.jaas.config",
        ),
        (
            {"sasl.jaas.config": "x", "ssl.keystore.location": "k"},
            "sasl.jaas.config in f cannot be honoured with security.protocol=PLAINTEXT",
        ),
        (
            {
                "security.protocol": "SSL",
                "ssl.truststore.type": "PEM",
                "ssl.truststore.location": "/nonexistent/ca.pem",
            },
            "ssl.truststore.location /nonexistent/ca.pem for f cannot be read",
        ),
        ({"security.providers": "p"}, "security.providers in f cannot be honoured"),
        (
            {"request.timeout.ms": "soon"},
            "Invalid value soon for configuration request.timeout.ms in f",
        ),
        ({"retries": "-1"}, "Invalid value -1 for configuration retries in f"),
    ],
)
def test_refused_configs(config: dict[str, str], message: str) -> None:
    with pytest.raises(OneLineError) as info:
        admin_client_options(config, "f", print)
    assert info.value.format_message().startswith(message)


def test_sasl_settings_become_the_clients_security() -> None:
    jaas = (
        "org.apache.kafka.common.security.scram.ScramLoginModule required "
        'username="alice" password="alice-secret";'
    )
    options = admin_client_options(
        {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-256",
         "sasl.jaas.config": jaas}, "f", print,
    )  # fmt: skip
    security = options["security"]
    assert security.security_protocol == "SASL_PLAINTEXT"
    assert security.sasl == SaslCredentials("SCRAM-SHA-256", "alice", "alice-secret")
    librdkafka_style = admin_client_options(
        {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
         "sasl.username": "bob", "sasl.password": "pw"}, "f", print,
    )  # fmt: skip
    assert librdkafka_style["security"].sasl == SaslCredentials("PLAIN", "bob", "pw")


def test_ssl_configs_become_the_client_security(test_pki: TestPki) -> None:
    warnings: list[str] = []
    config = {
        "security.protocol": "SSL",
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(test_pki.ca_certificate),
        "ssl.endpoint.identification.algorithm": "",
        "client.id": "ops",
    }
    options = admin_client_options(config, "admin.properties", warnings.append)
    security = options.pop("security")
    assert options == {"client_id": "ops"} and warnings == []
    assert security.security_protocol == "SSL" and security.ssl is not None
    assert security.ssl.check_hostname is False


def test_load_command_config() -> None:
    assert load_command_config(None, print) == {}
    with pytest.raises(OneLineError, match="Cannot read properties file"):
        load_command_config("/nonexistent/admin.properties", print)


def test_key_value_args_become_properties() -> None:
    props = parse_key_value_args(
        [" print.key =true", "key.separator==", "null.literal=", "a=1", "a=2"], "--property", "x"
    )
    assert props == {"print.key": "true", "key.separator": "=", "null.literal": "", "a": "2"}
    for bad in ("print.key", "=true", " =1"):
        with pytest.raises(OneLineError) as e:
            parse_key_value_args(["a=1", bad], "--consumer-property", "console-consumer")
        assert e.value.message == (
            f"Invalid --consumer-property '{bad}': expected KEY=VALUE "
            "(see 'kafpy console-consumer --help')"
        )


def test_flag_properties() -> None:
    props = {"yes": " TRUE ", "no": "yes"}
    assert property_flag(props, "yes", False) and not property_flag(props, "no", True)
    assert property_flag(props, "missing", True) and not property_flag(props, "missing", False)
    assert unescape("\\t|\\n|\\r") == "\t|\n|\r"


def test_run_command_makes_every_failure_one_line() -> None:
    async def fails() -> None:
        raise TimeoutError()

    async def refuses() -> None:
        raise OneLineError("Invalid --x 'y' (see 'kafpy x --help')")

    async def interrupted() -> None:
        raise KeyboardInterrupt

    with pytest.raises(OneLineError) as e:
        run_command(fails, "Error while executing x command : ")
    assert e.value.message == "Error while executing x command : TimeoutError"
    # the command's own one-line error is not prefixed again
    with pytest.raises(OneLineError) as e:
        run_command(refuses, "Error while executing x command : ")
    assert e.value.message == "Invalid --x 'y' (see 'kafpy x --help')"
    with pytest.raises(OneLineError) as e:
        run_command(interrupted, "Error: ")
    assert e.value.message == "Error: interrupted"
    # a console tool stops quietly on Ctrl-C
    run_command(interrupted, "Error: ", interrupt_is_error=False)
