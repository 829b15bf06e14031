"""Error codes in responses turned into the KafkaError subclasses that carry them.

A response's error code becomes the exception of kafpy.common.errors with that `code`;
codes without a dedicated class become a plain KafkaError whose `code` and `retriable`
are set from Kafka's error table. The message is the broker's when it sent one, else
Kafka's default message for the code, prefixed with what failed.
"""

from __future__ import annotations

from functools import cache

from kafpy.common import errors as common_errors
from kafpy.common.errors import KafkaError
from kafpy.protocol.errors import Errors


@cache
def _classes_by_code() -> dict[int, type[KafkaError]]:
    by_code: dict[int, type[KafkaError]] = {}
    for obj in vars(common_errors).values():
        if (
            isinstance(obj, type)
            and issubclass(obj, KafkaError)
            and "code" in vars(obj)
            and obj.code not in by_code
        ):
            by_code[obj.code] = obj
    return by_code


def error_name(code: int) -> str:
    """Kafka's name of an error code (`TOPIC_ALREADY_EXISTS`), or the number if unknown."""
    try:
        return Errors(code).name
    except ValueError:
        return f"error code {code}"


def default_message(code: int) -> str:
    """Kafka's default description of an error code."""
    try:
        member = Errors(code)
    except ValueError:
        return f"Unknown error code {code}."
    return member.message or member.name


def is_retriable(code: int) -> bool:
    """True if Kafka marks the error code retriable."""
    cls = _classes_by_code().get(code)
    if cls is not None:
        return cls.retriable
    try:
        return Errors(code).retriable
    except ValueError:
        return False


def error_for_code(code: int, message: str | None = None, context: str | None = None) -> KafkaError:
    """The exception for a response's error `code` (not raised; 0 is not an error).

    `message` is the broker's error message if the response carried one (it is used as
    it is: the broker's sentences name the thing). Without one, Kafka's default message
    for the code is used, after `context`, which names what failed (`Creating topic foo`)."""
    if code == Errors.NONE:
        raise ValueError("error code 0 (NONE) is not an error")
    text = message or default_message(code)
    if context and not message:
        text = f"{context}: {text}"
    cls = _classes_by_code().get(code)
    if cls is not None:
        return cls(text)
    error = KafkaError(text)
    error.code = code
    error.retriable = is_retriable(code)
    return error


def raise_for_code(code: int, message: str | None = None, context: str | None = None) -> None:
    """Raise error_for_code(...) unless `code` is 0."""
    if code != Errors.NONE:
        raise error_for_code(code, message, context)
