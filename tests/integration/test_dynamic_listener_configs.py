"""Dynamic listener configs (KIP-226) against a real `kafpy server`: the SSL listener's key
store rotated with `kafpy configs --entity-type brokers --entity-name 0` is served to new
connections while an open one keeps working; a store that does not load, or whose
certificate names another subject, is refused and the served certificate stays; the
Kerberos relogin key librdkafka's test 0081 alters is accepted; a key password is stored
encrypted with password.encoder.secret and decoded again after a restart."""

from __future__ import annotations

import shutil
import socket
import ssl
import struct
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization

from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.headers import RequestHeader, encode_request
from kafpy.security.local_pki import make_test_pki
from kafpy.testing.wait import wait_until
from tests.fixtures.broker import KafpyBroker
from tests.fixtures.tls import broker_ssl_overrides

KEYSTORE_KEY = "listener.name.ssl.ssl.keystore.location"


def configs(broker: KafpyBroker, *args: str, ok: bool = True) -> str:
    r = subprocess.run([sys.executable, "-m", "kafpy", "configs", "--bootstrap-server",
                        broker.bootstrap, "--entity-type", "brokers", "--entity-name", "0",
                        "--alter", *args], capture_output=True, text=True, timeout=60)  # fmt: skip
    assert (r.returncode == 0) == ok, r.stdout + r.stderr
    assert "Traceback" not in r.stderr
    return r.stdout if ok else r.stderr


def tls_connect(broker: KafpyBroker) -> ssl.SSLSocket:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE  # the serial is what is compared
    sock = socket.create_connection((broker.host, broker.ports["SSL"]), timeout=10)
    return context.wrap_socket(sock)


def served_serial(sock: ssl.SSLSocket) -> int:
    der = sock.getpeercert(binary_form=True)
    assert der is not None
    return x509.load_der_x509_certificate(der).serial_number


def new_connection_serial(broker: KafpyBroker) -> int:
    with tls_connect(broker) as sock:
        return served_serial(sock)


def serial_of(keystore: Path) -> int:
    return x509.load_pem_x509_certificates(keystore.read_bytes())[0].serial_number


def answers(sock: ssl.SSLSocket, correlation_id: int) -> bool:
    """Whether the broker answers an ApiVersions request on this TLS connection."""
    sock.sendall(encode_request(RequestHeader(ApiKey.API_VERSIONS, 0, correlation_id, "t"), {}))
    data = b""
    while len(data) < 8:
        chunk = sock.recv(8 - len(data))
        if not chunk:
            return False
        data += chunk
    size, got = struct.unpack(">ii", data)
    remaining = size - 4
    while remaining > 0:
        remaining -= len(sock.recv(remaining))
    return got == correlation_id


def test_ssl_keystore_rotated_without_restart(
    kafpy_broker_factory: Callable[..., KafpyBroker], tmp_path: Path
) -> None:
    first, second = make_test_pki(tmp_path / "first"), make_test_pki(tmp_path / "second")
    keystore = shutil.copy(first.broker.keystore, tmp_path / "broker.keystore.pem")
    broker = kafpy_broker_factory({
        "listeners": "PLAINTEXT://127.0.0.1:{port},SSL://127.0.0.1:0",
        **broker_ssl_overrides(first), "ssl.keystore.location": str(keystore),
    })  # fmt: skip
    old = tls_connect(broker)
    try:
        assert served_serial(old) == serial_of(first.broker.keystore)
        # the same DN and SubjectAltNames from another CA: accepted, served to new connections
        out = configs(broker, "--add-config", f"{KEYSTORE_KEY}={second.broker.keystore}")
        assert "Completed updating config for broker 0." in out
        wait_until(
            lambda: new_connection_serial(broker) == serial_of(second.broker.keystore) or None,
            15, "the new key store is served",
        )  # fmt: skip
        assert answers(old, 7)  # the open connection keeps its session
        assert served_serial(old) == serial_of(first.broker.keystore)

        garbage = tmp_path / "garbage.pem"
        garbage.write_text("not a key store")
        err = configs(broker, "--add-config", f"{KEYSTORE_KEY}={garbage}", ok=False)
        assert "Invalid dynamic configuration" in err and "does not load" in err
        err = configs(broker, "--add-config", f"{KEYSTORE_KEY}={first.client.keystore}", ok=False)
        assert "Keystore DistinguishedName does not match" in err
        assert new_connection_serial(broker) == serial_of(second.broker.keystore)

        # a key store password is a password config, which kafpy cannot store encrypted
        err = configs(broker, "--add-config", "listener.name.ssl.ssl.key.password=secret", ok=False)
        assert "Password encoder secret not configured" in err
        # without the listener prefix, as Kafka refuses it
        err = configs(broker, "--add-config", f"ssl.keystore.location={keystore}", ok=False)
        assert "only per-listener using the listener prefix" in err
        # librdkafka's test 0081: accepted, without effect (MIT Kerberos renews by itself)
        configs(broker, "--add-config", "sasl.kerberos.min.time.before.relogin=58000")
        out = configs_describe(broker)
        assert "sasl.kerberos.min.time.before.relogin=58000" in out
    finally:
        old.close()


def configs_describe(broker: KafpyBroker) -> str:
    r = subprocess.run([sys.executable, "-m", "kafpy", "configs", "--bootstrap-server",
                        broker.bootstrap, "--entity-type", "brokers", "--entity-name", "0",
                        "--describe"], capture_output=True, text=True, timeout=60)  # fmt: skip
    assert r.returncode == 0, r.stderr
    return r.stdout


def _encrypted_keystore(identity_key: Path, chain: Path, path: Path, password: bytes) -> Path:
    """A PEM key store whose private key is encrypted with `password` (ssl.key.password)."""
    key = serialization.load_pem_private_key(identity_key.read_bytes(), None)
    encrypted = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(password),
    )
    path.write_bytes(encrypted + chain.read_bytes())
    return path


def test_a_key_store_password_is_stored_encrypted_and_survives_a_restart(
    kafpy_broker_factory: Callable[..., KafpyBroker], tmp_path: Path
) -> None:
    first, second = make_test_pki(tmp_path / "first"), make_test_pki(tmp_path / "second")
    password = "rotated-key-pass-4711"
    rotated = _encrypted_keystore(second.broker.key, second.broker.certificate,
                                  tmp_path / "rotated.keystore.pem", password.encode())  # fmt: skip
    broker = kafpy_broker_factory({
        "listeners": "PLAINTEXT://127.0.0.1:{port},SSL://127.0.0.1:0",
        **broker_ssl_overrides(first), "password.encoder.secret": "encoder-secret",
    })  # fmt: skip
    # a key store and its key password together, the password sent as AlterConfigs has it
    out = configs(broker, "--add-config",
                  f"{KEYSTORE_KEY}={rotated},listener.name.ssl.ssl.key.password={password}")  # fmt: skip
    assert "Completed updating config for broker 0." in out
    wait_until(
        lambda: new_connection_serial(broker) == serial_of(second.broker.keystore) or None,
        15, "the rotated key store is served",
    )  # fmt: skip
    described = configs_describe(broker)
    assert "listener.name.ssl.ssl.key.password=null" in described and password not in described
    # neither the metadata store nor the broker's log holds the password in clear
    for f in broker.data_dir.rglob("*"):
        if f.is_file():
            assert password.encode() not in f.read_bytes(), f

    broker.restart()  # decoded again at start-up: the rotated store is served at once
    assert new_connection_serial(broker) == serial_of(second.broker.keystore)

    # another secret: the password does not decode, so the stored key store cannot load
    # and the broker refuses to start, saying why (as Kafka's does)
    broker.overrides["password.encoder.secret"] = "another-secret"
    broker.stop()
    with pytest.raises(pytest.fail.Exception):
        broker.start()
    log = broker.log_path.read_text()
    assert (
        "Dynamic password config listener.name.ssl.ssl.key.password of broker 0 could not be "
        "decoded, ignoring" in log
    )
    assert f"The private key of ssl.keystore.location {rotated} for listener SSL" in log
    assert "is encrypted and ssl.key.password is not set" in log
    broker.overrides["password.encoder.secret"] = "encoder-secret"
    broker.start()
    assert new_connection_serial(broker) == serial_of(second.broker.keystore)
