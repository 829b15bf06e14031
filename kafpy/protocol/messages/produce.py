"""Produce (key 0): append record batches to partitions.

Besides the schema, the fast codec of the request every linger.ms=0 client sends: one
topic, one partition, no transactional id, decoded with fixed offsets; and of its answer,
one partition without errors detail, encoded from a per-(version, topic) template. Each
answers None for any other shape, which the generic codec then takes; both give exactly
the generic codec's values and bytes (tests/unit/protocol/messages/test_produce_fast.py).
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from typing import Any

from kafpy.protocol import types as t
from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.api_schema import ApiSchema, Body, per_partition
from kafpy.protocol.schema import Array, Field, Message, Struct

# request v3-v8: transactional_id length (-1: null), acks, timeout_ms, topic count
_REQUEST_HEAD = struct.Struct(">hhii")
# request v3-v8, after the topic name: partition count, index, records length
_REQUEST_PARTITION = struct.Struct(">iii")
# request v9 (flexible): acks, timeout_ms after the null compact transactional_id (0)
_ACKS_TIMEOUT = struct.Struct(">hi")
_INT32 = struct.Struct(">i")


def decode_single_partition_request(
    version: int, buf: memoryview, pos: int
) -> tuple[dict[str, Any], int] | None:
    """A Produce request v3+ of one topic and one partition, without transactional id and
    with records; None for anything else (or anything malformed)."""
    try:
        if 3 <= version <= 8:
            txn, acks, timeout_ms, topics = _REQUEST_HEAD.unpack_from(buf, pos)
            if txn != -1 or topics != 1:
                return None
            pos += 12
            (name_size,) = t.INT16.unpack_from(buf, pos)
            pos += 2
            name_end = pos + name_size
            if name_size < 0 or name_end > len(buf):
                return None
            name = str(buf[pos:name_end], "utf-8")
            partitions, index, size = _REQUEST_PARTITION.unpack_from(buf, name_end)
            pos = name_end + 12
            end = pos + size
            if partitions != 1 or size < 0 or end > len(buf):
                return None
        elif version == 9:
            if buf[pos] != 0:  # a transactional id
                return None
            acks, timeout_ms = _ACKS_TIMEOUT.unpack_from(buf, pos + 1)
            pos += 7
            if buf[pos] != 2:  # compact array length + 1
                return None
            name_size, pos = t.read_uvarint(buf, pos + 1)
            name_size -= 1
            name_end = pos + name_size
            if name_size < 0 or name_end > len(buf) or buf[name_end] != 2:
                return None
            name = str(buf[pos:name_end], "utf-8")
            (index,) = _INT32.unpack_from(buf, name_end + 1)
            size, pos = t.read_uvarint(buf, name_end + 5)
            size -= 1
            end = pos + size
            # no tagged fields after the partition, the topic and the request
            if size < 0 or end + 3 > len(buf) or buf[end] or buf[end + 1] or buf[end + 2]:
                return None
        else:
            return None
    except (struct.error, IndexError, UnicodeDecodeError, t.DecodeFailure):
        return None
    partition = {"index": index, "records": buf[pos:end]}
    body = {
        "transactional_id": None,
        "acks": acks,
        "timeout_ms": timeout_ms,
        "topic_data": [{"name": name, "partition_data": [partition]}],
    }
    return body, end + 3 if version == 9 else end


# per (version, topic): the bytes before the partition's fields, their struct, the bytes
# after them up to throttle_time_ms, and the bytes after that
_Template = tuple[bytes, struct.Struct, bytes, bytes]
_TEMPLATES: dict[tuple[int, str], _Template] = {}
_TEMPLATES_MAX = 4096


def _template(version: int, name: str) -> _Template:
    key = (version, name)
    template = _TEMPLATES.get(key)
    if template is not None:
        return template
    data = name.encode("utf-8")
    flexible = version >= 9
    if flexible:
        head = b"\x02" + t.uvarint_bytes(len(data) + 1) + data + b"\x02"
    else:
        if len(data) > 32767:
            raise ValueError("topic name too long")
        head = _INT32.pack(1) + t.INT16.pack(len(data)) + data + _INT32.pack(1)
    fmt = ">ihq" + ("q" if version >= 2 else "") + ("q" if version >= 5 else "")
    if flexible:  # no record errors, null error message, no tagged fields (partition, topic)
        middle = b"\x01\x00\x00\x00"
    elif version >= 8:  # no record errors, null error message
        middle = b"\x00\x00\x00\x00\xff\xff"
    else:
        middle = b""
    template = (head, struct.Struct(fmt), middle, b"\x00" if flexible else b"")
    if len(_TEMPLATES) >= _TEMPLATES_MAX:
        _TEMPLATES.clear()
    _TEMPLATES[key] = template
    return template


def encode_single_partition_response(version: int, value: Mapping[str, Any]) -> list[Any] | None:
    """A Produce response of one topic and one partition without record errors or error
    message, as one part; None for anything else."""
    if not 0 <= version <= 9:
        return None
    try:
        (topic,) = value["responses"]
        (p,) = topic["partition_responses"]
        name = topic["name"]
        if (
            p.get("record_errors")
            or p.get("error_message") is not None
            or type(name) is not str
            or "_unknown_tagged_fields" in p
            or "_unknown_tagged_fields" in topic
            or "_unknown_tagged_fields" in value
        ):
            return None
        head, fields, middle, tail = _template(version, name)
        values = [p.get("index", 0), p.get("error_code", 0), p.get("base_offset", 0)]
        if version >= 2:
            values.append(p.get("log_append_time_ms", -1))
        if version >= 5:
            values.append(p.get("log_start_offset", -1))
        throttle = _INT32.pack(value.get("throttle_time_ms", 0)) if version >= 1 else b""
        return [head + fields.pack(*values) + middle + throttle + tail]
    except (KeyError, TypeError, ValueError, struct.error):
        return None  # the generic encoder says what is wrong


PRODUCE_REQUEST = Message(
    ApiKey.PRODUCE, "ProduceRequest", "request", (0, 13), 9,
    [
        Field("transactional_id", "string", "3+", nullable="3+", default=None),
        Field("acks", "int16"),
        Field("timeout_ms", "int32"),
        Field("topic_data", Array(Struct([
            Field("name", "string", "0-12"),
            Field("topic_id", "uuid", "13+"),
            Field("partition_data", Array(Struct([
                Field("index", "int32"),
                Field("records", "records", nullable="0+"),
            ]))),
        ]))),
    ],
    fast_decode=decode_single_partition_request,
)

PRODUCE_RESPONSE = Message(
    ApiKey.PRODUCE, "ProduceResponse", "response", (0, 13), 9,
    [
        Field("responses", Array(Struct([
            Field("name", "string", "0-12"),
            Field("topic_id", "uuid", "13+"),
            Field("partition_responses", Array(Struct([
                Field("index", "int32"),
                Field("error_code", "int16"),
                Field("base_offset", "int64"),
                Field("log_append_time_ms", "int64", "2+", default=-1),
                Field("log_start_offset", "int64", "5+", default=-1),
                Field("record_errors", Array(Struct([
                    Field("batch_index", "int32", "8+"),
                    Field("batch_index_error_message", "string", "8+", nullable="8+",
                          default=None),
                ])), "8+"),
                Field("error_message", "string", "8+", nullable="8+", default=None),
                Field("current_leader", Struct([
                    Field("leader_id", "int32", "10+", default=-1),
                    Field("leader_epoch", "int32", "10+", default=-1),
                ]), "10+", tag=0),
            ]))),
        ]))),
        Field("throttle_time_ms", "int32", "1+", default=0),
        Field("node_endpoints", Array(Struct([
            Field("node_id", "int32", "10+"),
            Field("host", "string", "10+"),
            Field("port", "int32", "10+"),
            Field("rack", "string", "10+", nullable="10+", default=None),
        ])), "10+", tag=0),
    ],
    fast_encode=encode_single_partition_response,
)


def partition_error(index: int, code: int, message: str | None = None) -> Body:
    """One partition of a Produce response failing with `code`."""
    return {"index": index, "error_code": code, "base_offset": -1, "log_append_time_ms": -1,
            "log_start_offset": -1, "record_errors": [], "error_message": message}  # fmt: skip


def error_response(
    body: Mapping[str, Any], version: int, code: int, message: str | None = None
) -> Body:
    """Every partition of the request answered with `code`."""
    return {
        "responses": per_partition(
            body, "topic_data", "partition_data", lambda i: partition_error(i, code, message),
            out_partitions="partition_responses", partition_index="index",
        ),
        "throttle_time_ms": 0,
    }  # fmt: skip


PRODUCE_API = ApiSchema(
    PRODUCE_REQUEST,
    PRODUCE_RESPONSE,
    versions=(0, 9),
    error_response=error_response,
)
