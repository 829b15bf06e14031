"""The shared CLI helpers: --command-config files as admin client options."""

from __future__ import annotations

import pytest

from kafpy.cli.command_line_utils import OneLineError, admin_client_options, load_command_config


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
        ({"security.protocol": "SSL"}, "security.protocol=SSL in f cannot be honoured"),
        (
            {"sasl.jaas.config": "x", "ssl.keystore.location": "k"},
            "sasl.jaas.config, ssl.keystore.location in f cannot be honoured",
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


def test_load_command_config() -> None:
    assert load_command_config(None, print) == {}
    with pytest.raises(OneLineError, match="Cannot read properties file"):
        load_command_config("/nonexistent/admin.properties", print)
