"""`kafpy log-dirs`: option parsing and kafka-log-dirs.sh's JSON, without a broker."""

from __future__ import annotations

import json

import pytest

from kafpy.cli.command_line_utils import OneLineError
from kafpy.cli.log_dirs import error_class_name, format_as_json, parse_broker_list, parse_topic_list
from kafpy.client.admin_client import LogDirDescription, ReplicaInfo
from kafpy.common.errors import KafkaStorageError
from kafpy.common.topic_partition import TopicPartition


def test_broker_list() -> None:
    assert parse_broker_list("0,1, 2") == [0, 1, 2]
    for bad in ("0,x", "", "1,,2", "-1"):
        with pytest.raises(OneLineError, match="is not a broker id"):
            parse_broker_list(bad)


def test_topic_list_drops_empty_entries() -> None:
    assert parse_topic_list("a,,b,") == ["a", "b"]


def test_error_class_name_is_kafkas() -> None:
    assert (
        error_class_name(KafkaStorageError("x"))
        == "org.apache.kafka.common.errors.KafkaStorageException"
    )


def test_json_is_kafkas_shape() -> None:
    described = {
        0: [
            LogDirDescription("/d1", None, {
                TopicPartition("a", 0): ReplicaInfo(10, 0, False),
                TopicPartition("b", 0): ReplicaInfo(5, 3, True),
            }),
            LogDirDescription("/d2", KafkaStorageError("offline"), {}),
        ]
    }  # fmt: skip
    text = format_as_json(described, ["a"])
    assert text == (
        '{"version":1,"brokers":[{"broker":0,"logDirs":['
        '{"logDir":"/d1","error":null,"partitions":[{"partition":"a-0","size":10,'
        '"offsetLag":0,"isFuture":false}]},'
        '{"logDir":"/d2","error":"org.apache.kafka.common.errors.KafkaStorageException",'
        '"partitions":[]}]}]}'
    )
    every = json.loads(format_as_json(described, []))
    assert [p["partition"] for p in every["brokers"][0]["logDirs"][0]["partitions"]] == [
        "a-0",
        "b-0",
    ]
