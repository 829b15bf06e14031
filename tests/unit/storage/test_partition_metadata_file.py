"""partition.metadata as Kafka 2.8 writes it, read back, and malformed files refused with a
sentence naming the file; a log loads its topic id from it and refuses another one."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from kafpy.common.errors import InconsistentTopicIdError
from kafpy.common.kafka_uuid import uuid_to_string
from kafpy.storage.partition_metadata_file import (
    MalformedPartitionMetadataError,
    PartitionMetadataFile,
)

TOPIC_ID = uuid.UUID("6f1f3b52-8a44-4c4e-9b5c-2d7c8f0e1a11")


def test_written_as_kafka_writes_it_and_read_back(tmp_path: Path) -> None:
    f = PartitionMetadataFile(tmp_path)
    assert f.read() is None and not f.exists()
    f.write(TOPIC_ID)
    assert (tmp_path / "partition.metadata").read_bytes() == (
        f"version: 0\ntopic_id: {uuid_to_string(TOPIC_ID)}".encode()
    )
    assert f.read() == TOPIC_ID
    assert not (tmp_path / "partition.metadata.tmp").exists()


@pytest.mark.parametrize(
    "content, what",
    [
        (b"version: 1\ntopic_id: b18vUopETE6bXC18jw4aEQ", "Unrecognized version"),
        (b"version: 0\ntopic_id: nope", "Malformed topic id"),
        (b"version: 0\ncolour: blue", "Malformed line"),
        (b"\xff\xfe", "Cannot read"),
    ],
)
def test_malformed_files_are_refused_by_name(tmp_path: Path, content: bytes, what: str) -> None:
    (tmp_path / "partition.metadata").write_bytes(content)
    with pytest.raises(MalformedPartitionMetadataError, match=what) as e:
        PartitionMetadataFile(tmp_path).read()
    assert str(tmp_path) in str(e.value)


def test_a_log_loads_its_topic_id_and_refuses_another(tmp_path: Path) -> None:
    from kafpy.common.scheduler import KafkaScheduler
    from kafpy.common.time import SYSTEM_TIME
    from kafpy.storage.log import Log
    from kafpy.storage.log_config import LogConfig

    scheduler = KafkaScheduler(1)
    scheduler.startup()
    try:
        log = Log(tmp_path / "t-0", LogConfig(), 0, 0, scheduler, SYSTEM_TIME)
        assert log.topic_id is None
        log.assign_topic_id(TOPIC_ID)
        log.assign_topic_id(TOPIC_ID)  # the same again: nothing to do
        with pytest.raises(InconsistentTopicIdError, match="already contained topic ID"):
            log.assign_topic_id(uuid.uuid4())
        log.close()
        reloaded = Log(tmp_path / "t-0", LogConfig(), 0, 0, scheduler, SYSTEM_TIME)
        assert reloaded.topic_id == TOPIC_ID
        reloaded.close()
        # a damaged file loses no data: the log loads without an id, and says why
        (tmp_path / "t-0" / "partition.metadata").write_bytes(b"garbage")
        damaged = Log(tmp_path / "t-0", LogConfig(), 0, 0, scheduler, SYSTEM_TIME)
        assert damaged.topic_id is None
        damaged.close()
    finally:
        scheduler.shutdown()
