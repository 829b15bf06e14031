"""Kafka's error codes as the wire format uses them.

`Errors` is the one table of error codes (Kafka's names and numbers, `retriable` and
Kafka's default `message` per code) with the exception class per code; it is defined in
kafpy.common.errors, below the layers that raise those exceptions, and presented here for
the protocol's users. `error_code_of(exc)` maps an exception to the code to put in a
response. `ProtocolDecodeError` is what the codec raises for bytes that do not follow the
wire format.
"""

from __future__ import annotations

from kafpy.common.errors import Errors, KafkaError, for_code

__all__ = [
    "Errors",
    "ProtocolDecodeError",
    "ProtocolEncodeError",
    "error_code_of",
    "for_code",
]


class ProtocolDecodeError(Exception):
    """Bytes on the wire do not follow the schema of the message they claim to be.

    The message names the message, its version and the field path where decoding failed.
    `message_name`, `version` and `field` are also kept as attributes (None when unknown).
    """

    def __init__(
        self,
        text: str,
        message_name: str | None = None,
        version: int | None = None,
        field: str | None = None,
    ) -> None:
        super().__init__(text)
        self.message_name = message_name
        self.version = version
        self.field = field


class ProtocolEncodeError(ValueError):
    """A value cannot be encoded as the message it is given for (a programming error)."""


def error_code_of(exc: BaseException) -> int:
    """The error code to answer with for an exception: a KafkaError's `.code`, else -1."""
    if isinstance(exc, KafkaError):
        return int(exc.code)
    return int(Errors.UNKNOWN_SERVER_ERROR)
