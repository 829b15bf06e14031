"""The results of the admin APIs: one per topic or config resource, in request order.

`set_error` answers one topic or resource with the error of an exception: a KafkaError is
the request's fault and is logged at INFO with its message; anything else is a bug, logged
at ERROR with its traceback, and answers UNKNOWN_SERVER_ERROR. A controller-only operation
that meets an expired ZooKeeper session answers NOT_CONTROLLER: the session held /controller,
so this broker is no longer the controller, and clients retry with the new one. (Kafka 2.8
answers UNKNOWN_SERVER_ERROR there, which admin clients do not retry.) `error_response`
answers every topic or resource of a request with one error (e.g. NOT_CONTROLLER).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from kafpy.common.errors import KafkaError
from kafpy.common.logger import PrefixAdapter
from kafpy.metadata.errors import SessionExpiredError
from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.errors import Errors, error_code_of
from kafpy.protocol.messages import API_SCHEMAS

__all__ = ["config_response", "duplicates", "error_response", "set_error"]


def duplicates(names: Sequence[str]) -> set[str]:
    """The names that occur more than once."""
    return {name for name, n in Counter(names).items() if n > 1}


def config_response(rtype: int, rname: str) -> dict[str, Any]:
    """The result for one resource of AlterConfigs or IncrementalAlterConfigs, no error."""
    return {
        "error_code": Errors.NONE,
        "error_message": None,
        "resource_type": rtype,
        "resource_name": rname,
    }


def set_error(
    log: PrefixAdapter,
    result: dict[str, Any],
    e: Exception,
    what: str,
    *,
    controller_only: bool = False,
) -> None:
    """Answer one topic or resource with the error of `e`; `what` names the operation,
    `controller_only` whether only the active controller performs it."""
    if controller_only and isinstance(e, SessionExpiredError):
        result["error_code"] = Errors.NOT_CONTROLLER
        result["error_message"] = (
            f"{e} The broker is no longer the controller; retry with the new controller."
        )
        log.warning("%s: %s", what, result["error_message"])
        return
    result["error_code"] = error_code_of(e)
    result["error_message"] = str(e) or None
    if isinstance(e, KafkaError):
        log.info("%s: %s", what, e)
    else:
        log.exception("%s", what)


# the AdminManager method that answers each admin API
_ADMIN_APIS = {
    "create_topics": ApiKey.CREATE_TOPICS,
    "delete_topics": ApiKey.DELETE_TOPICS,
    "create_partitions": ApiKey.CREATE_PARTITIONS,
    "describe_configs": ApiKey.DESCRIBE_CONFIGS,
    "alter_configs": ApiKey.ALTER_CONFIGS,
    "incremental_alter_configs": ApiKey.INCREMENTAL_ALTER_CONFIGS,
}


def error_response(
    api: str,
    body: Mapping[str, Any],
    error_code: int,
    message: str | None = None,
    version: int | None = None,
) -> dict[str, Any]:
    """A response body giving every topic or resource of the request `error_code`
    (e.g. NOT_CONTROLLER), built by the API's message module. `api` is the AdminManager
    method name: "create_topics", "delete_topics", "create_partitions", "describe_configs",
    "alter_configs" or "incremental_alter_configs"; `version` the request's (default: the
    highest served)."""
    key = _ADMIN_APIS.get(api)
    if key is None:
        raise ValueError(f"{api!r} is not an admin API of AdminManager")
    schema = API_SCHEMAS[key]
    return schema.error_response(
        body, schema.versions[1] if version is None else version, error_code, message
    )
