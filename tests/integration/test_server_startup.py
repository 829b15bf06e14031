"""`kafpy server` start-up as a user meets it: configurations it must refuse, and a broker
that answers admin requests the moment its port accepts connections."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from kafpy.network.bound_ports import read_bound_ports
from kafpy.testing.wait import wait_until
from tests.fixtures.broker import KafpyBroker, free_port

# generous: a create that is answered at all is answered in well under a second
CREATE_TOPICS_RESULT_TIMEOUT_S = 20.0


def _run_server(tmp_path: Path, overrides: dict[str, str]) -> subprocess.CompletedProcess[str]:
    args = [sys.executable, "-m", "kafpy", "server"]
    for key, value in {"broker.id": "0", "log.dirs": str(tmp_path / "logs"), **overrides}.items():
        args += ["--override", f"{key}={value}"]
    return subprocess.run(args, capture_output=True, text=True, timeout=60)


def _listening(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), 1).close()
    except OSError:
        return False
    return True


_SSL_ONLY = {"security.inter.broker.protocol": "SSL"}
_PEM_KEYSTORE = {**_SSL_ONLY, "ssl.keystore.type": "PEM", "ssl.keystore.location": "{missing}"}


@pytest.mark.parametrize(
    ("listeners", "extra", "message"),
    [
        ("SSL://127.0.0.1:{port}", _SSL_ONLY, "listener SSL uses TLS but has no key store"),
        ("SSL://127.0.0.1:{port}", _PEM_KEYSTORE,
         "ssl.keystore.location {missing} for listener SSL cannot be read: No such file"),
        ("SSL://127.0.0.1:{port}", {**_SSL_ONLY, "ssl.keystore.location": "{missing}"},
         "ssl.keystore.type=JKS for listener SSL cannot be read by kafpy"),
        (
            "PLAINTEXT://127.0.0.1:{port},SSL://127.0.0.1:{port2}",
            {"ssl.keystore.type": "PEM", "listener.name.ssl.ssl.keystore.location": "{missing}"},
            "ssl.keystore.location {missing} for listener SSL cannot be read",
        ),
        # Kafka's default mechanism, GSSAPI, needs its keys
        ("SASL_PLAINTEXT://127.0.0.1:{port}", {"security.inter.broker.protocol": "SASL_PLAINTEXT"},
         "Listener SASL_PLAINTEXT uses SASL mechanism GSSAPI but has no JAAS configuration"),
        # OAUTHBEARER needs its JAAS entry; a Java callback class is refused by name
        ("SASL_PLAINTEXT://127.0.0.1:{port}",
         {"security.inter.broker.protocol": "SASL_PLAINTEXT",
          "sasl.enabled.mechanisms": "OAUTHBEARER",
          "sasl.mechanism.inter.broker.protocol": "OAUTHBEARER"},
         "Listener SASL_PLAINTEXT enables SASL mechanism OAUTHBEARER but has no JAAS "
         "configuration for it"),
        ("SASL_PLAINTEXT://127.0.0.1:{port}",
         {"security.inter.broker.protocol": "SASL_PLAINTEXT",
          "sasl.enabled.mechanisms": "OAUTHBEARER",
          "sasl.mechanism.inter.broker.protocol": "OAUTHBEARER",
          "listener.name.sasl_plaintext.oauthbearer.sasl.server.callback.handler.class":
              "io.strimzi.kafka.oauth.server.JaasServerOauthValidatorCallbackHandler"},
         "names the Java class io.strimzi.kafka.oauth.server.JaasServerOauthValidatorCallbackHandler, "
         "which kafpy cannot run"),
        (
            "EXTERNAL://127.0.0.1:{port}",
            {"listener.security.protocol.map": "EXTERNAL:SASL_PLAINTEXT",
             "inter.broker.listener.name": "EXTERNAL", "sasl.enabled.mechanisms": "PLAIN",
             "sasl.mechanism.inter.broker.protocol": "PLAIN"},
            "Listener EXTERNAL enables SASL mechanism PLAIN but has no JAAS configuration",
        ),
        (
            "SASL_PLAINTEXT://127.0.0.1:{port}",
            {"security.inter.broker.protocol": "SASL_PLAINTEXT",
             "sasl.enabled.mechanisms": "SCRAM-SHA-256", "sasl.mechanism.inter.broker.protocol": "PLAIN"},
            "sasl.mechanism.inter.broker.protocol (PLAIN) must be included in sasl.enabled.mechanisms",
        ),
        (
            "SASL_PLAINTEXT://127.0.0.1:{port}",
            {"security.inter.broker.protocol": "SASL_PLAINTEXT",
             "sasl.enabled.mechanisms": "SCRAM-SHA-256",
             "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-256"},
            "no JAAS configuration gives this broker's username and password",
        ),
        (
            "PLAINTEXT://127.0.0.1:{port},SSL://127.0.0.1:{port2}",
            {"security.inter.broker.protocol": "SSL"},
            "listener SSL uses TLS but has no key store",
        ),
        (
            "PLAINTEXT://127.0.0.1:{port},INTERNAL://127.0.0.1:{port2}",
            {"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,INTERNAL:SSL",
             "inter.broker.listener.name": "INTERNAL"},
            "listener INTERNAL uses TLS but has no key store",
        ),
        (
            "PLAINTEXT://127.0.0.1:{port},SSL://127.0.0.1:{port2}",
            {"security.inter.broker.protocol": "SSL", "inter.broker.listener.name": "SSL"},
            "Only one of inter.broker.listener.name and security.inter.broker.protocol",
        ),
        ("PLAINTEXT://127.0.0.1:{port},OTHER://127.0.0.1:{port2}", {},
         "No security protocol defined for listener OTHER"),
        ("PLAINTEXT://127.0.0.1:{port},PLAINTEXT://127.0.0.1:{port2}", {}, "different name"),
        (
            "PLAINTEXT://127.0.0.1:{port},INTERNAL://127.0.0.1:{port}",
            {"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT"},
            "Each listener must have a different port",
        ),
        ("PLAINTEXT://127.0.0.1:{port}", {"inter.broker.listener.name": "INTERNAL"},
         "inter.broker.listener.name must be a listener name defined in advertised.listeners"),
    ],
)  # fmt: skip
def test_a_listener_kafpy_cannot_honour_stops_the_broker_at_start_up(
    tmp_path: Path, listeners: str, extra: dict[str, str], message: str
) -> None:
    port, port2 = free_port(), free_port()
    names = {"port": port, "port2": port2, "missing": tmp_path / "missing.pem"}
    overrides = {k: v.format(**names) for k, v in extra.items()}
    result = _run_server(tmp_path, {"listeners": listeners.format(**names), **overrides})
    assert result.returncode != 0
    assert message.format(**names) in result.stderr
    assert "Created listener" not in result.stderr
    assert not _listening(port) and not _listening(port2)


def _start_without_waiting(broker: KafpyBroker) -> None:
    """Start `kafpy server` and return as soon as its port accepts a connection."""
    broker.data_dir.mkdir(parents=True, exist_ok=True)
    process = broker.launcher.spawn_process(broker.command())

    def accepting() -> dict[str, int] | None:
        assert process.poll() is None, broker.log_tail()
        ports = read_bound_ports(broker.bound_ports_path)
        return ports if ports is not None and _listening(ports["PLAINTEXT"]) else None

    broker.launcher.ports = wait_until(
        accepting, 60, "the port", interval_s=0.005, context=broker.log_tail
    )


def test_create_topics_the_moment_the_port_accepts_never_hangs(tmp_path: Path) -> None:
    for attempt in range(20):
        broker = KafpyBroker(tmp_path / f"broker-{attempt}")
        try:
            _start_without_waiting(broker)
            admin = AdminClient({"bootstrap.servers": broker.bootstrap})
            futures = admin.create_topics([NewTopic("sp", 2, 1), NewTopic("out", 1, 1)])
            for name, future in futures.items():
                try:
                    assert future.result(CREATE_TOPICS_RESULT_TIMEOUT_S) is None
                except Exception as e:
                    pytest.fail(f"attempt {attempt}: creating {name}: {e}\n{broker.log_tail()}")
        finally:
            broker.stop()


def test_start_up_logs_the_configuration_and_warns_of_unknown_keys(
    kafpy_broker_factory: Callable[..., KafpyBroker],
) -> None:
    broker = kafpy_broker_factory({"num.partitons": "3"})
    broker.stop()
    text = broker.log_path.read_text()
    assert (
        "The configuration 'num.partitons' was supplied but isn't a known config. "
        "(kafpy.server.KafkaConfig)" in text
    )
    block = text[text.index("KafkaConfig values: \n") :]
    assert "\tnum.partitions = 1\n" in block
    assert "\tlisteners = PLAINTEXT://127.0.0.1:0\n" in block
    assert "num.partitons =" not in block


def test_the_broker_logs_its_event_loop_lag_at_shutdown(
    kafpy_broker_factory: Callable[..., KafpyBroker],
) -> None:
    broker = kafpy_broker_factory()
    broker.stop()
    lines = [line for line in broker.log_path.read_text().splitlines() if "Event loop lag" in line]
    assert len(lines) == 1
    assert "INFO [LoopLagProbe id=0] Event loop lag over " in lines[0]
    assert "generation-2 garbage collections, the longest" in lines[0]
