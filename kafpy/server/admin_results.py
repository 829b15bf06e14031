"""The results of the admin APIs: one per topic or config resource, in request order.

`set_error` answers one topic or resource with the error of an exception: a KafkaError is
the request's fault and is logged at INFO with its message; anything else is a bug, logged
at ERROR with its traceback, and answers UNKNOWN_SERVER_ERROR. `error_response` answers
every topic or resource of a request with one error (e.g. NOT_CONTROLLER).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from kafpy.common.errors import KafkaError
from kafpy.common.logger import PrefixAdapter
from kafpy.protocol.errors import Errors, error_code_of

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


def set_error(log: PrefixAdapter, result: dict[str, Any], e: Exception, what: str) -> None:
    """Answer one topic or resource with the error of `e`; `what` names the operation."""
    result["error_code"] = error_code_of(e)
    result["error_message"] = str(e) or None
    if isinstance(e, KafkaError):
        log.info("%s: %s", what, e)
    else:
        log.exception("%s", what)


def error_response(
    api: str,
    body: Mapping[str, Any],
    error_code: int,
    message: str | None = None,
) -> dict[str, Any]:
    """A response body giving every topic or resource of the request `error_code`
    (e.g. NOT_CONTROLLER). `api` is the AdminManager method name: "create_topics",
    "delete_topics", "create_partitions", "describe_configs", "alter_configs" or
    "incremental_alter_configs"."""
    if api == "create_topics":
        items = [
            {"name": t["name"], "error_code": error_code, "error_message": message}
            for t in body.get("topics") or []
        ]
        return {"throttle_time_ms": 0, "topics": items}
    if api == "delete_topics":
        items = [
            {"name": n, "error_code": error_code, "error_message": message}
            for n in body.get("topic_names") or []
        ]
        return {"throttle_time_ms": 0, "responses": items}
    if api == "create_partitions":
        items = [
            {"name": t["name"], "error_code": error_code, "error_message": message}
            for t in body.get("topics") or []
        ]
        return {"throttle_time_ms": 0, "results": items}
    if api in ("describe_configs", "alter_configs", "incremental_alter_configs"):
        items = []
        for r in body.get("resources") or []:
            item = config_response(int(r["resource_type"]), r["resource_name"])
            item["error_code"] = error_code
            item["error_message"] = message
            if api == "describe_configs":
                item["configs"] = []
            items.append(item)
        key = "results" if api == "describe_configs" else "responses"
        return {"throttle_time_ms": 0, key: items}
    raise ValueError(f"{api!r} is not an admin API of AdminManager")
