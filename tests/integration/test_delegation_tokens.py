"""Delegation tokens (KIP-48) against a real broker: `kafpy delegation-tokens` creates,
describes, renews and expires tokens as a SCRAM user; a client authenticates with a token
(SCRAM-SHA-256 with the `tokenauth=true` extension) as the token's owner, cannot create
tokens with it, and loses access once the token expires. Forged HMACs are refused.

The client authenticating with a token is kafpy's own: librdkafka (confluent-kafka),
kafka-python and aiokafka cannot send SCRAM extensions, so a token cannot authenticate them;
confluent-kafka authenticates as the token's owner and its token-less attempt is refused.
"""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Producer

from kafpy.client.admin_client import AdminClient
from kafpy.client.client_security import ClientSecurity, SaslCredentials
from kafpy.common.errors import KafkaError
from tests.fixtures.broker import KafpyBroker
from tests.fixtures.sasl import SaslBroker, sasl_broker_overrides

SCRAM_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"


@pytest.fixture(scope="module")
def token_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SaslBroker]:
    broker = KafpyBroker(tmp_path_factory.mktemp("token-broker"))
    broker.overrides.update(sasl_broker_overrides())
    broker.overrides.update({
        "delegation.token.master.key": "the-master-key",
        "delegation.token.expiry.check.interval.ms": "300",
    })  # fmt: skip
    broker.start()
    try:
        yield SaslBroker(broker)
    finally:
        broker.stop()


def kafpy(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kafpy", *args], capture_output=True, text=True, timeout=60
    )


def add_scram_user(broker: SaslBroker, user: str, password: str) -> None:
    result = kafpy(
        "configs", "--bootstrap-server", broker.broker.bootstrap, "--alter", "--entity-type",
        "users", "--entity-name", user, "--add-config", f"SCRAM-SHA-256=[password={password}]",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr


def command_config(tmp_path: Path, user: str, password: str, token: bool = False) -> str:
    path = tmp_path / f"{user[:8]}-{uuid.uuid4().hex[:6]}.properties"
    extra = ' tokenauth="true"' if token else ""
    path.write_text(
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-256\n"
        f'sasl.jaas.config={SCRAM_MODULE} required username="{user}" password="{password}"'
        f"{extra};\n"
    )
    return str(path)


def tokens_cli(broker: SaslBroker, config: str, *args: str) -> subprocess.CompletedProcess[str]:
    return kafpy("delegation-tokens", "--bootstrap-server", broker.sasl_bootstrap,
                 "--command-config", config, *args)  # fmt: skip


def create_token(broker: SaslBroker, config: str, *args: str) -> tuple[str, str]:
    result = tokens_cli(broker, config, "--create", *args)
    assert result.returncode == 0, result.stdout + result.stderr
    m = re.search(r"Created delegation token with tokenId : (\S+)", result.stdout)
    assert m is not None, result.stdout
    row = re.search(rf"^{re.escape(m.group(1))}\s+(\S+)\s+User:alice", result.stdout, re.M)
    assert row is not None, result.stdout
    return m.group(1), row.group(1)


def token_security(token_id: str, hmac: str) -> ClientSecurity:
    return ClientSecurity(
        "SASL_PLAINTEXT", None, SaslCredentials("SCRAM-SHA-256", token_id, hmac, token_auth=True)
    )


async def describe_cluster_with(broker: SaslBroker, security: ClientSecurity) -> int:
    async with AdminClient.connect(broker.sasl_bootstrap, security=security, retries=0,
                                   request_timeout_ms=5000) as admin:  # fmt: skip
        brokers, _ = await admin.describe_cluster()
        return len(brokers)


def refused(broker: SaslBroker, security: ClientSecurity) -> str:
    with pytest.raises((KafkaError, OSError, asyncio.TimeoutError)) as e:
        asyncio.run(describe_cluster_with(broker, security))
    return str(e.value)


def test_create_describe_and_authenticate_with_a_token(
    token_broker: SaslBroker, tmp_path: Path
) -> None:
    add_scram_user(token_broker, "alice", "alice-secret")
    alice = command_config(tmp_path, "alice", "alice-secret")
    token_id, hmac = create_token(token_broker, alice, "--max-life-time-period", "-1",
                                  "--renewer-principal", "User:bob")  # fmt: skip
    result = tokens_cli(token_broker, alice, "--describe", "--owner-principal", "User:alice")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(
        "Calling describe token operation for owners :[User:alice]\nTotal number of tokens : 1\n"
        "\nTOKENID         HMAC                           OWNER           RENEWERS"
    )
    assert re.search(rf"^{token_id} +{re.escape(hmac)} User:alice +\[User:bob\] ", result.stdout,
                     re.M), result.stdout  # fmt: skip

    # kafpy's client authenticates with the token
    assert asyncio.run(describe_cluster_with(token_broker, token_security(token_id, hmac))) == 1
    # a token cannot make tokens
    as_token = command_config(tmp_path, token_id, hmac, token=True)
    result = tokens_cli(token_broker, as_token, "--create", "--max-life-time-period", "-1")
    assert result.returncode == 1
    assert "Error while executing delegation token command : " in result.stderr
    assert "not allowed" in result.stderr and "delegation token authenticated" in result.stderr
    # a forged HMAC, and the right one without the tokenauth extension (all librdkafka
    # can send), are refused
    forged = refused(token_broker, token_security(token_id, "Zm9yZ2Vk" + hmac[8:]))
    assert "Authentication failed" in forged
    errors: list[str] = []
    producer = Producer({
        "bootstrap.servers": token_broker.sasl_bootstrap, "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "SCRAM-SHA-256", "sasl.username": token_id, "sasl.password": hmac,
        "error_cb": lambda e: errors.append(e.str()),
    })  # fmt: skip
    for _ in range(100):
        producer.poll(0.1)
        if errors:
            break
    producer.flush(0)
    assert errors and "Authentication failed" in errors[0]
    # the owner itself, through confluent-kafka
    owner = Producer({
        "bootstrap.servers": token_broker.sasl_bootstrap, "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "SCRAM-SHA-256", "sasl.username": "alice",
        "sasl.password": "alice-secret",
    })  # fmt: skip
    owner.produce(f"dt-{uuid.uuid4().hex[:6]}", b"v")
    assert owner.flush(30) == 0


def test_renew_expire_and_plaintext_refusal(token_broker: SaslBroker, tmp_path: Path) -> None:
    add_scram_user(token_broker, "alice", "alice-secret")
    alice = command_config(tmp_path, "alice", "alice-secret")
    token_id, hmac = create_token(token_broker, alice, "--max-life-time-period", "-1")
    result = tokens_cli(token_broker, alice, "--renew", "--hmac", hmac, "--renew-time-period", "-1")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"Calling renew token operation with hmac :{hmac} , ")
    assert "Completed renew operation. New expiry date : " in result.stdout
    result = tokens_cli(token_broker, alice, "--expire", "--hmac", hmac,
                        "--expiry-time-period", "-1")  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "Completed expire operation. New expiry date : " in result.stdout
    assert "Authentication failed" in refused(token_broker, token_security(token_id, hmac))
    result = tokens_cli(token_broker, alice, "--renew", "--hmac", hmac, "--renew-time-period", "1")
    assert result.returncode == 1 and "Delegation Token is not found on server." in result.stderr
    # tokens are not served on PLAINTEXT
    plain = tmp_path / "plain.properties"
    plain.write_text("security.protocol=PLAINTEXT\n")
    result = kafpy("delegation-tokens", "--bootstrap-server", token_broker.broker.bootstrap,
                   "--command-config", str(plain), "--describe")  # fmt: skip
    assert result.returncode == 1 and "not allowed on PLAINTEXT" in result.stderr


def test_a_token_stops_working_when_it_expires(token_broker: SaslBroker, tmp_path: Path) -> None:
    add_scram_user(token_broker, "alice", "alice-secret")
    alice = command_config(tmp_path, "alice", "alice-secret")
    token_id, hmac = create_token(token_broker, alice, "--max-life-time-period", "2000")

    async def connected_across_the_expiry() -> None:
        async with AdminClient.connect(token_broker.sasl_bootstrap, retries=0,
                                       request_timeout_ms=5000,
                                       security=token_security(token_id, hmac)) as admin:  # fmt: skip
            assert len((await admin.describe_cluster())[0]) == 1
            # past its maximum; the broker ends the token's session (KIP-368) and the
            # controller's scan (every 300 ms) removes the token
            await asyncio.sleep(2.5)
            with pytest.raises((KafkaError, OSError, asyncio.TimeoutError)):
                await admin.describe_cluster()

    asyncio.run(connected_across_the_expiry())
    assert "Authentication failed" in refused(token_broker, token_security(token_id, hmac))
    result = tokens_cli(token_broker, alice, "--describe")
    assert result.returncode == 0, result.stderr
    assert token_id not in result.stdout


def test_a_broker_without_a_master_key_refuses_tokens(tmp_path: Path) -> None:
    broker = KafpyBroker(tmp_path / "no-key")
    broker.overrides.update(sasl_broker_overrides())
    broker.start()
    try:
        sasl = SaslBroker(broker)
        add_scram_user(sasl, "alice", "alice-secret")
        result = tokens_cli(sasl, command_config(tmp_path, "alice", "alice-secret"),
                            "--create", "--max-life-time-period", "-1")  # fmt: skip
        assert result.returncode == 1
        assert "Delegation Token feature is not enabled." in result.stderr
    finally:
        broker.stop()
