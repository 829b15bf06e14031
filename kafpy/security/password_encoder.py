"""PasswordEncoder: dynamic password configs encrypted with `password.encoder.secret`, as
Kafka stores them in ZooKeeper (Kafka's `kafka.utils.PasswordEncoder`).

A password set with AlterConfigs on a broker (`listener.name.ssl.ssl.keystore.password`,
...) is never written in clear: the value stored at `/config/brokers/<id>` is a CSV map of
the cipher text and what decodes it, e.g.
`keyFactoryAlgorithm:PBKDF2WithHmacSHA512,cipherAlgorithm:AES/CBC/PKCS5Padding,keyLength:128,
salt:<base64>,iterations:4096,encryptedPassword:<base64>,passwordLength:6,
initializationVector:<base64>`. The key is derived from the secret with PBKDF2 over a
random 256-byte salt; decoding reads the algorithms, key length and iterations from the
stored map, not from the current settings, so they may change between encodings.

The map's keys and the JCE names of the algorithms are Kafka's, so a Kafka broker given
the same secret decodes what kafpy stored and the other way round.
"""

from __future__ import annotations

import base64
import hashlib
import os
from collections.abc import Mapping

from kafpy.common.errors import InvalidConfigurationError
from kafpy.common.extras import MissingExtraError, require_extra

__all__ = [
    "CIPHER_ALGORITHMS",
    "DEFAULT_KEY_FACTORY_ALGORITHM",
    "KEY_FACTORY_ALGORITHMS",
    "PasswordEncoder",
    "PasswordEncoderError",
]

# the JCE SecretKeyFactory names Kafka may store, and their PBKDF2 digests (hashlib names)
KEY_FACTORY_ALGORITHMS: Mapping[str, str] = {
    "PBKDF2WithHmacSHA512": "sha512",
    "PBKDF2WithHmacSHA256": "sha256",
    "PBKDF2WithHmacSHA1": "sha1",
}
DEFAULT_KEY_FACTORY_ALGORITHM = "PBKDF2WithHmacSHA512"
# the JCE Cipher names kafpy encodes and decodes
CIPHER_ALGORITHMS = ("AES/CBC/PKCS5Padding", "AES/GCM/NoPadding")
_SALT_BYTES = 256
_GCM_IV_BYTES = 12  # the JDK's default GCM parameters: 12-byte IV, 128-bit tag
_GCM_TAG_BITS = 128


class PasswordEncoderError(InvalidConfigurationError):
    """A stored password that does not decode with this secret, or a bad encoder setting."""


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _java_length(text: str) -> int:
    """String.length() in Java: UTF-16 code units (the stored sanity check)."""
    return len(text.encode("utf-16-le")) // 2


class PasswordEncoder:
    """Encodes and decodes password configs with one secret (`password.encoder.secret`,
    or the old one when re-encoding) and the `password.encoder.*` settings.

    Parameters:
        secret: the shared secret; every broker that reads the configs needs it.
        key_factory_algorithm: the JCE PBKDF2 name (None: PBKDF2WithHmacSHA512, as Kafka
            picks when the JVM has it).
        cipher_algorithm: AES/CBC/PKCS5Padding (Kafka's default) or AES/GCM/NoPadding.
        key_length: the AES key in bits: 128, 192 or 256.
        iterations: PBKDF2 iterations.
    """

    def __init__(
        self,
        secret: str,
        key_factory_algorithm: str | None = None,
        cipher_algorithm: str = CIPHER_ALGORITHMS[0],
        key_length: int = 128,
        iterations: int = 4096,
    ) -> None:
        if not secret:
            raise PasswordEncoderError("password.encoder.secret is empty.")
        try:  # AES comes from the cryptography library
            require_extra("crypto", "password.encoder.secret (encrypted password configs)")
        except MissingExtraError as e:
            raise PasswordEncoderError(str(e)) from None
        self.secret = secret
        self.key_factory_algorithm = key_factory_algorithm or DEFAULT_KEY_FACTORY_ALGORITHM
        self.cipher_algorithm = cipher_algorithm
        self.key_length = key_length
        self.iterations = iterations
        _check_algorithms(self.key_factory_algorithm, cipher_algorithm, key_length)

    def _key(self, algorithm: str, key_length: int, salt: bytes, iterations: int) -> bytes:
        return hashlib.pbkdf2_hmac(
            KEY_FACTORY_ALGORITHMS[algorithm],
            self.secret.encode("utf-8"),
            salt,
            iterations,
            key_length // 8,
        )

    def encode(self, password: str) -> str:
        """The CSV map Kafka stores for `password`."""
        salt = os.urandom(_SALT_BYTES)
        key = self._key(self.key_factory_algorithm, self.key_length, salt, self.iterations)
        data = password.encode("utf-8")
        fields = {
            "keyFactoryAlgorithm": self.key_factory_algorithm,
            "cipherAlgorithm": self.cipher_algorithm,
            "keyLength": str(self.key_length),
            "salt": _b64(salt),
            "iterations": str(self.iterations),
        }
        from cryptography.hazmat.primitives import padding
        from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        if self.cipher_algorithm.startswith("AES/GCM/"):
            iv = os.urandom(_GCM_IV_BYTES)
            encrypted = AESGCM(key).encrypt(iv, data, None)
            fields["authenticationTagLength"] = str(_GCM_TAG_BITS)
        else:
            iv = os.urandom(16)
            padder = padding.PKCS7(128).padder()
            encryptor = Cipher(algorithms.AES(key), modes.CBC(iv)).encryptor()
            encrypted = encryptor.update(padder.update(data) + padder.finalize())
            encrypted += encryptor.finalize()
        fields["encryptedPassword"] = _b64(encrypted)
        fields["passwordLength"] = str(_java_length(password))
        fields["initializationVector"] = _b64(iv)
        return ",".join(f"{k}:{v}" for k, v in fields.items())

    def decode(self, encoded: str) -> str:
        """The password in a stored CSV map; PasswordEncoderError if it does not decode
        with this secret or is not such a map."""
        try:
            fields = dict(item.split(":", 1) for item in encoded.split(","))
            algorithm = fields["keyFactoryAlgorithm"]
            cipher_algorithm = fields["cipherAlgorithm"]
            key_length = int(fields["keyLength"])
            _check_algorithms(algorithm, cipher_algorithm, key_length)
            key = self._key(
                algorithm, key_length, base64.b64decode(fields["salt"]), int(fields["iterations"])
            )
            encrypted = base64.b64decode(fields["encryptedPassword"])
            iv = base64.b64decode(fields["initializationVector"])
            length = int(fields["passwordLength"])
        except PasswordEncoderError:
            raise
        except (KeyError, ValueError) as e:
            raise PasswordEncoderError(
                f"Password could not be decoded: not an encoded password ({e!r})"
            ) from e
        from cryptography.hazmat.primitives import padding
        from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        try:
            if cipher_algorithm.startswith("AES/GCM/"):
                data = AESGCM(key).decrypt(iv, encrypted, None)
            else:
                decryptor = Cipher(algorithms.AES(key), modes.CBC(iv)).decryptor()
                padded = decryptor.update(encrypted) + decryptor.finalize()
                unpadder = padding.PKCS7(128).unpadder()
                data = unpadder.update(padded) + unpadder.finalize()
            password = data.decode("utf-8")
        except Exception as e:
            # a wrong secret: a padding, tag or UTF-8 failure
            raise PasswordEncoderError("Password could not be decoded") from e
        if _java_length(password) != length:
            raise PasswordEncoderError(
                "Password could not be decoded, sanity check of length failed"
            )
        return password


def _check_algorithms(key_factory: str, cipher: str, key_length: int) -> None:
    if key_factory not in KEY_FACTORY_ALGORITHMS:
        raise PasswordEncoderError(
            f"Unsupported password.encoder.keyfactory.algorithm {key_factory}: kafpy supports "
            f"{', '.join(KEY_FACTORY_ALGORITHMS)}."
        )
    if cipher not in CIPHER_ALGORITHMS:
        raise PasswordEncoderError(
            f"Unsupported password.encoder.cipher.algorithm {cipher}: kafpy supports "
            f"{', '.join(CIPHER_ALGORITHMS)}."
        )
    if key_length not in (128, 192, 256):
        raise PasswordEncoderError(
            f"Invalid password.encoder.key.length {key_length}: AES keys are 128, 192 or 256 bits."
        )
