"""Error codes in responses turned into the exceptions that carry them.

A response's error code becomes an instance of the exception class of the one error table
(`kafpy.common.errors.for_code`). The message is the broker's when it sent one, else
Kafka's default message for the code, prefixed with what failed.
"""

from __future__ import annotations

from kafpy.common.errors import Errors, KafkaError, for_code


def error_for_code(code: int, message: str | None = None, context: str | None = None) -> KafkaError:
    """The exception for a response's error `code` (not raised; 0 is not an error).

    `message` is the broker's error message if the response carried one (it is used as
    it is: the broker's sentences name the thing). Without one, Kafka's default message
    for the code is used, after `context`, which names what failed (`Creating topic foo`)."""
    cls = for_code(code)
    if message:
        return cls(message)
    known = Errors.for_code(code)
    text = known.message if known == code else f"Unknown error code {code}."
    return cls(f"{context}: {text}" if context else text)


def raise_for_code(code: int, message: str | None = None, context: str | None = None) -> None:
    """Raise error_for_code(...) unless `code` is 0."""
    if code != Errors.NONE:
        raise error_for_code(code, message, context)
