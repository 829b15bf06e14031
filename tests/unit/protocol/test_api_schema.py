"""Every API's error response (kafpy/protocol/api_schema.py, declared per message module):
for every served version, built from a request of that version, it encodes with the
API's response schema and carries the error code."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.api_schema import top_level_error
from kafpy.protocol.errors import Errors
from kafpy.protocol.messages import API_SCHEMAS
from kafpy.protocol.schema import Array, Field, Struct

_SAMPLES: dict[str, Any] = {
    "int8": 1, "int16": 1, "uint16": 1, "int32": 1, "int64": 1, "float64": 1.0, "bool": True,
    "string": "x", "bytes": b"x", "uuid": uuid.UUID(int=1), "records": None,
}  # fmt: skip

# Responses that cannot carry a code for a request refused whole (no top-level error code
# in the version, and kafpy answers such a refusal without entries): what Kafka 2.8 sends
# for DescribeLogDirs v0-2; DescribeProducers and DescribeTransactions are answered empty.
_CODE_NOT_CARRIED = {
    ApiKey.DESCRIBE_LOG_DIRS: range(0, 3),
    ApiKey.DESCRIBE_PRODUCERS: range(0, 1),
    ApiKey.DESCRIBE_TRANSACTIONS: range(0, 1),
}


def _sample(fields: list[Field], version: int, width: int) -> dict[str, Any]:
    """A value of the fields in `version`: each array `width` elements long."""
    out: dict[str, Any] = {}
    for f in fields:
        if not f.in_version(version):
            continue
        out[f.name] = _value(f.type, version, width)
    return out


def _value(ft: Any, version: int, width: int) -> Any:
    if isinstance(ft, Array):
        return [_value(ft.element, version, width) for _ in range(width)]
    if isinstance(ft, Struct):
        return _sample(ft.fields, version, width)
    return _SAMPLES[ft]


def _error_codes(value: Any) -> set[int]:
    if isinstance(value, dict):
        found = {v for k, v in value.items() if k.endswith("error_code")}
        for v in value.values():
            found |= _error_codes(v)
        return found
    if isinstance(value, list):
        return set().union(*(_error_codes(v) for v in value)) if value else set()
    return set()


@pytest.mark.parametrize("key", sorted(API_SCHEMAS), ids=lambda k: ApiKey(k).api_name)
@pytest.mark.parametrize("width", [0, 2])
def test_error_response_encodes_at_every_version_with_the_code(key: ApiKey, width: int) -> None:
    schema = API_SCHEMAS[key]
    code = Errors.CLUSTER_AUTHORIZATION_FAILED
    lo, hi = schema.versions
    for version in range(lo, hi + 1):
        # the request as the broker sees it: decoded, every field of the version present
        wire = schema.request.encode(version, _sample(schema.request.fields, version, width))
        body = schema.request.decode(version, wire)
        answer = schema.error_response(body, version, code, "refused")
        decoded = schema.response.decode(version, schema.response.encode(version, answer))
        codes = _error_codes(decoded)
        if width and version not in _CODE_NOT_CARRIED.get(key, ()):
            assert code in codes, (key.api_name, version, decoded)
        assert codes <= {code, Errors.NONE}, (key.api_name, version, decoded)


def test_every_api_declares_its_versions_within_its_schemas() -> None:
    assert set(API_SCHEMAS) and all(s.api_key == k for k, s in API_SCHEMAS.items())
    for schema in API_SCHEMAS.values():
        lo, hi = schema.versions
        assert schema.request.has_version(lo) and schema.request.has_version(hi)
        assert schema.response.has_version(lo) and schema.response.has_version(hi)


def test_top_level_error_carries_the_message_only_when_given() -> None:
    assert top_level_error({}, 0, 15) == {"throttle_time_ms": 0, "error_code": 15}
    assert top_level_error({}, 0, 15, "why")["error_message"] == "why"
