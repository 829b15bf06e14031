"""The errors the schema registry answers, as Confluent's REST layer words and numbers them.

Every failure is a RestError: an HTTP status, Confluent's `error_code` (40401 subject not
found, 42201 invalid schema, 50001 store error, ...) and a message; the REST app answers it
as `{"error_code": ..., "message": ...}`. The builders below keep Confluent's messages
(Confluent Platform 6.2, the release that ships Kafka 2.8).
"""

from __future__ import annotations

from typing import Any

SUBJECT_NOT_FOUND = 40401
VERSION_NOT_FOUND = 40402
SCHEMA_NOT_FOUND = 40403
SUBJECT_SOFT_DELETED = 40404
SUBJECT_NOT_SOFT_DELETED = 40405
SCHEMAVERSION_SOFT_DELETED = 40406
SCHEMAVERSION_NOT_SOFT_DELETED = 40407
INCOMPATIBLE_SCHEMA = 409
INVALID_SCHEMA = 42201
INVALID_VERSION = 42202
INVALID_COMPATIBILITY_LEVEL = 42203
INVALID_MODE = 42204
OPERATION_NOT_PERMITTED = 42205
REFERENCE_EXISTS = 42206
ID_DOES_NOT_MATCH = 42207
STORE_ERROR = 50001
OPERATION_TIMEOUT = 50002
REQUEST_FORWARDING_FAILED = 50003
UNKNOWN_LEADER = 50004


class RestError(Exception):
    """A request the registry refuses or cannot serve: `status` (HTTP), Confluent's
    `error_code` and `message`."""

    def __init__(self, status: int, error_code: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.error_code = error_code
        self.message = message

    def as_json(self) -> dict[str, Any]:
        return {"error_code": self.error_code, "message": self.message}


def subject_not_found(subject: str) -> RestError:
    return RestError(404, SUBJECT_NOT_FOUND, f"Subject '{subject}' not found.")


def version_not_found(version: int | str) -> RestError:
    return RestError(404, VERSION_NOT_FOUND, f"Version {version} not found.")


def schema_not_found(schema_id: int | None = None) -> RestError:
    message = "Schema not found" if schema_id is None else f"Schema {schema_id} not found"
    return RestError(404, SCHEMA_NOT_FOUND, message)


def subject_soft_deleted(subject: str) -> RestError:
    return RestError(
        404,
        SUBJECT_SOFT_DELETED,
        f"Subject '{subject}' was soft deleted.Set permanent=true to delete permanently",
    )


def subject_not_soft_deleted(subject: str) -> RestError:
    return RestError(
        404,
        SUBJECT_NOT_SOFT_DELETED,
        f"Subject '{subject}' was not deleted first before being permanently deleted",
    )


def version_soft_deleted(subject: str, version: int) -> RestError:
    return RestError(
        404,
        SCHEMAVERSION_SOFT_DELETED,
        f"Subject '{subject}' Version {version} was soft deleted."
        "Set permanent=true to delete permanently",
    )


def version_not_soft_deleted(subject: str, version: int) -> RestError:
    return RestError(
        404,
        SCHEMAVERSION_NOT_SOFT_DELETED,
        f"Subject '{subject}' Version {version} was not deleted first before being "
        "permanently deleted",
    )


def incompatible_schema(subject: str, reasons: list[str]) -> RestError:
    message = (
        f'Schema being registered is incompatible with an earlier schema for subject "{subject}"'
    )
    if reasons:
        message += f", details: {reasons}"
    return RestError(409, INCOMPATIBLE_SCHEMA, message)


def invalid_schema(message: str) -> RestError:
    return RestError(422, INVALID_SCHEMA, message)


def invalid_version(version: str) -> RestError:
    return RestError(
        422,
        INVALID_VERSION,
        f"The specified version '{version}' is not a valid version id. Allowed values are "
        'between [1, 2^31-1] and the string "latest"',
    )


def invalid_compatibility_level() -> RestError:
    return RestError(
        422,
        INVALID_COMPATIBILITY_LEVEL,
        "Invalid compatibility level. Valid values are none, backward, forward, full, "
        "backward_transitive, forward_transitive, and full_transitive",
    )


def invalid_mode() -> RestError:
    return RestError(
        422, INVALID_MODE, "Invalid mode. Valid values are READWRITE, READONLY, and IMPORT."
    )


def operation_not_permitted(message: str) -> RestError:
    return RestError(422, OPERATION_NOT_PERMITTED, message)


def reference_exists(key: str) -> RestError:
    return RestError(422, REFERENCE_EXISTS, f"One or more references exist to the schema {key}.")


def store_error(message: str) -> RestError:
    return RestError(500, STORE_ERROR, message)


def operation_timeout(message: str) -> RestError:
    return RestError(500, OPERATION_TIMEOUT, message)


def request_forwarding_failed(message: str) -> RestError:
    return RestError(500, REQUEST_FORWARDING_FAILED, message)


def unknown_leader() -> RestError:
    return RestError(500, UNKNOWN_LEADER, "Leader not known.")


def http_error(status: int, reason: str) -> RestError:
    """A failure outside the registry's own (unknown path, wrong method, body too large,
    malformed JSON): Confluent's REST layer answers the HTTP status as the error code."""
    return RestError(status, status, reason)
