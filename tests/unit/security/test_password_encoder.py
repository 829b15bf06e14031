"""PasswordEncoder: passwords stored as Kafka stores them, checked against the JDK's own JCE
(tests/fixtures/JcePasswordEncoder.java, run with `java`) in both directions."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from kafpy.security.password_encoder import PasswordEncoder, PasswordEncoderError

JCE = Path(__file__).parents[2] / "fixtures" / "JcePasswordEncoder.java"
CIPHERS = [("AES/CBC/PKCS5Padding", 128), ("AES/GCM/NoPadding", 256)]
# non-ASCII, and a character outside the BMP: Java counts it as two code units
PASSWORD = "pässwörd😀"


def _java(*args: str) -> str:
    if shutil.which("java") is None:
        pytest.skip("java is not installed (CI installs it for ZooKeeper)")
    done = subprocess.run(["java", str(JCE), *args], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize(("cipher", "key_length"), CIPHERS)
def test_round_trip_with_the_stored_fields_kafka_writes(cipher: str, key_length: int) -> None:
    encoder = PasswordEncoder("s3cret", None, cipher, key_length, 1024)
    encoded = encoder.encode(PASSWORD)
    fields = dict(item.split(":", 1) for item in encoded.split(","))
    expected = {"keyFactoryAlgorithm", "cipherAlgorithm", "keyLength", "salt", "iterations",
                "encryptedPassword", "passwordLength", "initializationVector"}  # fmt: skip
    if cipher.startswith("AES/GCM/"):
        expected.add("authenticationTagLength")
    assert set(fields) == expected
    assert fields["keyFactoryAlgorithm"] == "PBKDF2WithHmacSHA512"
    assert (fields["cipherAlgorithm"], fields["keyLength"]) == (cipher, str(key_length))
    assert fields["passwordLength"] == "10"  # UTF-16 code units, as Java's String.length()
    assert PASSWORD not in encoded
    assert encoder.encode(PASSWORD) != encoded  # a new salt and IV each time
    assert encoder.decode(encoded) == PASSWORD


@pytest.mark.parametrize(("cipher", "key_length"), CIPHERS)
def test_the_jdk_decodes_what_kafpy_stores_and_the_other_way_round(
    cipher: str, key_length: int
) -> None:
    encoder = PasswordEncoder("s3cret", "PBKDF2WithHmacSHA256", cipher, key_length, 2048)
    assert _java("decode", "s3cret", encoder.encode(PASSWORD)) == PASSWORD
    from_jdk = _java(
        "encode", "s3cret", "PBKDF2WithHmacSHA1", cipher, str(key_length), "4096", PASSWORD
    )
    # decoding reads the stored algorithms, whatever this encoder's own settings
    assert encoder.decode(from_jdk) == PASSWORD


def test_another_secret_or_a_damaged_value_does_not_decode() -> None:
    encoded = PasswordEncoder("s3cret", iterations=1024).encode("keystore-password")
    with pytest.raises(PasswordEncoderError, match="Password could not be decoded"):
        PasswordEncoder("other", iterations=1024).decode(encoded)
    with pytest.raises(PasswordEncoderError, match="not an encoded password"):
        PasswordEncoder("s3cret").decode("keystore-password")
    damaged = encoded.replace("passwordLength:17", "passwordLength:16")
    with pytest.raises(PasswordEncoderError, match="sanity check of length failed"):
        PasswordEncoder("s3cret").decode(damaged)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"key_factory_algorithm": "PBKDF2WithHmacMD5"}, "keyfactory.algorithm PBKDF2WithHmacMD5"),
        ({"cipher_algorithm": "DES/CBC/PKCS5Padding"}, "cipher.algorithm DES/CBC/PKCS5Padding"),
        ({"key_length": 64}, "key.length 64"),
    ],
)
def test_settings_kafpy_cannot_honour_are_refused_by_name(
    kwargs: dict[str, object], message: str
) -> None:
    with pytest.raises(PasswordEncoderError, match=message):
        PasswordEncoder("s3cret", **kwargs)  # type: ignore[arg-type]
