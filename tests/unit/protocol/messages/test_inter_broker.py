"""LeaderAndIsr, UpdateMetadata, StopReplica and ControlledShutdown against literal bytes.

kafka-python has no schema for these ZooKeeper-mode APIs (Kafka 4.0 removed them), so
the bytes here are written out by hand from Kafka's message definitions.
"""

from __future__ import annotations

import struct

from kafpy.protocol.messages.leader_and_isr import LEADER_AND_ISR_REQUEST, LEADER_AND_ISR_RESPONSE
from kafpy.protocol.messages.stop_replica import STOP_REPLICA_REQUEST, STOP_REPLICA_RESPONSE
from kafpy.protocol.messages.update_metadata import (
    UPDATE_METADATA_REQUEST,
    UPDATE_METADATA_RESPONSE,
)


def i8(v: int) -> bytes:
    return struct.pack(">b", v)


def i16(v: int) -> bytes:
    return struct.pack(">h", v)


def i32(v: int) -> bytes:
    return struct.pack(">i", v)


def i64(v: int) -> bytes:
    return struct.pack(">q", v)


def s(v: str) -> bytes:
    return i16(len(v)) + v.encode()


def cs(v: str) -> bytes:  # compact string
    return bytes([len(v) + 1]) + v.encode()


def arr(*items: bytes) -> bytes:
    return i32(len(items)) + b"".join(items)


def carr(*items: bytes) -> bytes:  # compact array
    return bytes([len(items) + 1]) + b"".join(items)


NO_TAGS = b"\x00"

STATE = {
    "partition_index": 0,
    "controller_epoch": 2,
    "leader": 1,
    "leader_epoch": 3,
    "isr": [1],
    "zk_version": 4,
    "replicas": [1, 2],
}
LEADERS = [{"broker_id": 1, "host_name": "h", "port": 9092}]


def test_leader_and_isr_v0_ungrouped() -> None:
    value = {
        "controller_id": 1,
        "controller_epoch": 2,
        "ungrouped_partition_states": [{"topic_name": "t", **STATE}],
        "live_leaders": LEADERS,
    }
    expected = (
        i32(1)
        + i32(2)
        + arr(
            s("t") + i32(0) + i32(2) + i32(1) + i32(3) + arr(i32(1)) + i32(4) + arr(i32(1), i32(2))
        )
        + arr(i32(1) + s("h") + i32(9092))
    )
    assert LEADER_AND_ISR_REQUEST.encode(0, value) == expected
    assert LEADER_AND_ISR_REQUEST.decode(0, expected) == value


def test_leader_and_isr_v3_by_topic() -> None:
    state = {**STATE, "adding_replicas": [2], "removing_replicas": [], "is_new": True}
    value = {
        "controller_id": 1,
        "controller_epoch": 2,
        "broker_epoch": 77,
        "topic_states": [{"topic_name": "t", "partition_states": [state]}],
        "live_leaders": LEADERS,
    }
    expected = (
        i32(1)
        + i32(2)
        + i64(77)
        + arr(
            s("t")
            + arr(
                i32(0)
                + i32(2)
                + i32(1)
                + i32(3)
                + arr(i32(1))
                + i32(4)
                + arr(i32(1), i32(2))
                + arr(i32(2))
                + arr()
                + b"\x01"
            )
        )
        + arr(i32(1) + s("h") + i32(9092))
    )
    assert LEADER_AND_ISR_REQUEST.encode(3, value) == expected
    assert LEADER_AND_ISR_REQUEST.decode(3, expected) == value


def test_leader_and_isr_v4_flexible() -> None:
    value = {
        "controller_id": 1,
        "controller_epoch": 2,
        "broker_epoch": 77,
        "topic_states": [{"topic_name": "t", "partition_states": [STATE]}],
        "live_leaders": LEADERS,
    }
    expected = (
        i32(1)
        + i32(2)
        + i64(77)
        + carr(
            cs("t")
            + carr(
                i32(0)
                + i32(2)
                + i32(1)
                + i32(3)
                + carr(i32(1))
                + i32(4)
                + carr(i32(1), i32(2))
                + carr()
                + carr()
                + b"\x00"
                + NO_TAGS
            )
            + NO_TAGS
        )
        + carr(i32(1) + cs("h") + i32(9092) + NO_TAGS)
        + NO_TAGS
    )
    assert LEADER_AND_ISR_REQUEST.encode(4, value) == expected


def test_leader_and_isr_responses() -> None:
    errors = [{"topic_name": "t", "partition_index": 3, "error_code": 11}]
    v1 = i16(0) + arr(s("t") + i32(3) + i16(11))
    assert LEADER_AND_ISR_RESPONSE.encode(1, {"error_code": 0, "partition_errors": errors}) == v1
    assert LEADER_AND_ISR_RESPONSE.decode(1, v1) == {"error_code": 0, "partition_errors": errors}


def test_update_metadata_v0_and_v5() -> None:
    v0 = {
        "controller_id": 1,
        "controller_epoch": 2,
        "ungrouped_partition_states": [{"topic_name": "t", **STATE}],
        "live_brokers": [{"id": 1, "v0_host": "h", "v0_port": 9092}],
    }
    expected0 = (
        i32(1)
        + i32(2)
        + arr(
            s("t") + i32(0) + i32(2) + i32(1) + i32(3) + arr(i32(1)) + i32(4) + arr(i32(1), i32(2))
        )
        + arr(i32(1) + s("h") + i32(9092))
    )
    assert UPDATE_METADATA_REQUEST.encode(0, v0) == expected0
    assert UPDATE_METADATA_REQUEST.decode(0, expected0) == v0

    v5 = {
        "controller_id": 1,
        "controller_epoch": 2,
        "broker_epoch": 9,
        "topic_states": [
            {"topic_name": "t", "partition_states": [{**STATE, "offline_replicas": [2]}]}
        ],
        "live_brokers": [
            {
                "id": 1,
                "endpoints": [
                    {"port": 9092, "host": "h", "listener": "PLAINTEXT", "security_protocol": 0}
                ],
                "rack": None,
            }
        ],
    }
    expected5 = (
        i32(1)
        + i32(2)
        + i64(9)
        + arr(
            s("t")
            + arr(
                i32(0)
                + i32(2)
                + i32(1)
                + i32(3)
                + arr(i32(1))
                + i32(4)
                + arr(i32(1), i32(2))
                + arr(i32(2))
            )
        )
        + arr(i32(1) + arr(i32(9092) + s("h") + s("PLAINTEXT") + i16(0)) + i16(-1))
    )
    assert UPDATE_METADATA_REQUEST.encode(5, v5) == expected5
    assert UPDATE_METADATA_REQUEST.decode(5, expected5) == v5
    assert UPDATE_METADATA_RESPONSE.encode(5, {"error_code": 11}) == i16(11)
    assert UPDATE_METADATA_RESPONSE.encode(6, {"error_code": 11}) == i16(11) + NO_TAGS


def test_stop_replica_v0_v1_v3() -> None:
    v0 = {
        "controller_id": 1,
        "controller_epoch": 2,
        "delete_partitions": True,
        "ungrouped_partitions": [{"topic_name": "t", "partition_index": 4}],
    }
    expected0 = i32(1) + i32(2) + b"\x01" + arr(s("t") + i32(4))
    assert STOP_REPLICA_REQUEST.encode(0, v0) == expected0
    assert STOP_REPLICA_REQUEST.decode(0, expected0) == v0

    v1 = {
        "controller_id": 1,
        "controller_epoch": 2,
        "broker_epoch": 5,
        "delete_partitions": False,
        "topics": [{"name": "t", "partition_indexes": [0, 1]}],
    }
    expected1 = i32(1) + i32(2) + i64(5) + b"\x00" + arr(s("t") + arr(i32(0), i32(1)))
    assert STOP_REPLICA_REQUEST.encode(1, v1) == expected1
    assert STOP_REPLICA_REQUEST.decode(1, expected1) == v1

    v3 = {
        "controller_id": 1,
        "controller_epoch": 2,
        "broker_epoch": 5,
        "topic_states": [
            {
                "topic_name": "t",
                "partition_states": [
                    {"partition_index": 0, "leader_epoch": 7, "delete_partition": True}
                ],
            }
        ],
    }
    expected3 = (
        i32(1)
        + i32(2)
        + i64(5)
        + carr(cs("t") + carr(i32(0) + i32(7) + b"\x01" + NO_TAGS) + NO_TAGS)
        + NO_TAGS
    )
    assert STOP_REPLICA_REQUEST.encode(3, v3) == expected3
    assert STOP_REPLICA_REQUEST.decode(3, expected3) == v3

    response = {
        "error_code": 0,
        "partition_errors": [{"topic_name": "t", "partition_index": 0, "error_code": 0}],
    }
    assert STOP_REPLICA_RESPONSE.encode(1, response) == i16(0) + arr(s("t") + i32(0) + i16(0))


def test_controlled_shutdown() -> None:
    from kafpy.protocol.messages.controlled_shutdown import (
        CONTROLLED_SHUTDOWN_REQUEST,
        CONTROLLED_SHUTDOWN_RESPONSE,
    )

    assert CONTROLLED_SHUTDOWN_REQUEST.encode(1, {"broker_id": 3, "broker_epoch": 9}) == i32(3)
    assert CONTROLLED_SHUTDOWN_REQUEST.encode(2, {"broker_id": 3, "broker_epoch": 9}) == i32(
        3
    ) + i64(9)
    assert CONTROLLED_SHUTDOWN_REQUEST.encode(3, {"broker_id": 3}) == i32(3) + i64(-1) + NO_TAGS
    response = {
        "error_code": 0,
        "remaining_partitions": [{"topic_name": "t", "partition_index": 2}],
    }
    v0 = i16(0) + arr(s("t") + i32(2))
    assert CONTROLLED_SHUTDOWN_RESPONSE.encode(0, response) == v0
    assert CONTROLLED_SHUTDOWN_RESPONSE.decode(0, v0) == response
    v3 = i16(0) + carr(cs("t") + i32(2) + NO_TAGS) + NO_TAGS
    assert CONTROLLED_SHUTDOWN_RESPONSE.encode(3, response) == v3
    assert CONTROLLED_SHUTDOWN_RESPONSE.decode(3, v3) == response
