"""preallocate=true against a real broker and confluent-kafka: the active segment's `.log`
file is segment.bytes long on disk while records are produced and consumed, rolled
segments are trimmed to their data, the key is dynamic (AlterConfigs), and a broker
killed with SIGKILL serves every acknowledged record after its restart, the zeros of the
preallocated file cut off by recovery."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from confluent_kafka import Producer
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
)

from kafpy.testing.wait import wait_until
from tests.fixtures.broker import KafpyBroker
from tests.integration.test_restart import consume_all

SEGMENT_BYTES = 64 * 1024


def create_topic(bootstrap: str, topic: str, config: dict[str, str]) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1, config=config)])[topic].result(30)


def produce(bootstrap: str, topic: str, values: list[bytes]) -> list[int]:
    """Produce with acks=all in batches well under segment.bytes; returns the
    acknowledged offsets (a failed delivery fails the test)."""
    acked: list[int] = []
    errors: list[object] = []

    def on_delivery(err: object, msg: Any) -> None:
        if err is None:
            acked.append(msg.offset())
        else:
            errors.append(err)

    producer = Producer(
        {"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5, "batch.size": 16384}
    )
    for value in values:
        producer.produce(topic, value=value, on_delivery=on_delivery)
    assert producer.flush(30) == 0
    assert errors == []
    return acked


def segment_files(broker: KafpyBroker, topic: str) -> list[Path]:
    return sorted((broker.log_dir / f"{topic}-0").glob("*.log"))


def data_size(path: Path) -> int:
    """The bytes of the complete batches at the start of the file: offset (8 bytes) and
    length (4) of each batch; a zero length (a preallocated file's zeros) ends the data."""
    data = path.read_bytes()
    position = 0
    while position + 12 <= len(data):
        length = int.from_bytes(data[position + 8 : position + 12], "big", signed=True)
        if length <= 0 or position + 12 + length > len(data):
            break
        position += 12 + length
    return position


def test_the_active_segment_is_preallocated_and_rolled_ones_trimmed(
    kafpy_broker: KafpyBroker,
) -> None:
    topic = f"pre-{uuid.uuid4().hex[:8]}"
    create_topic(
        kafpy_broker.bootstrap,
        topic,
        {"preallocate": "true", "segment.bytes": str(SEGMENT_BYTES)},
    )
    values = [b"%06d" % i + b"x" * 500 for i in range(400)]  # ~200 KB: 3 rolls or more
    assert produce(kafpy_broker.bootstrap, topic, values[:20]) == list(range(20))
    [active] = segment_files(kafpy_broker, topic)
    assert active.stat().st_size == SEGMENT_BYTES
    assert consume_all(kafpy_broker.bootstrap, topic) == list(enumerate(values[:20]))

    assert produce(kafpy_broker.bootstrap, topic, values[20:]) == list(range(20, 400))
    *rolled, active = segment_files(kafpy_broker, topic)
    assert len(rolled) >= 2
    for path in rolled:
        assert path.stat().st_size == data_size(path) > 0, path
    assert active.stat().st_size == SEGMENT_BYTES > data_size(active)
    assert consume_all(kafpy_broker.bootstrap, topic) == list(enumerate(values))

    assert kafpy_broker.stop() == 0  # a clean shutdown trims the active segment too
    assert active.stat().st_size == data_size(active)


def test_preallocate_is_dynamic(kafpy_broker: KafpyBroker) -> None:
    topic = f"dyn-{uuid.uuid4().hex[:8]}"
    create_topic(kafpy_broker.bootstrap, topic, {"segment.bytes": str(SEGMENT_BYTES)})
    values = [b"%06d" % i + b"x" * 500 for i in range(300)]
    produce(kafpy_broker.bootstrap, topic, values[:150])
    assert all(p.stat().st_size == data_size(p) for p in segment_files(kafpy_broker, topic))

    admin = AdminClient({"bootstrap.servers": kafpy_broker.bootstrap})
    resource = ConfigResource(
        "TOPIC",
        topic,
        incremental_configs=[
            ConfigEntry("preallocate", "true", incremental_operation=AlterConfigOpType.SET)
        ],
    )
    admin.incremental_alter_configs([resource])[resource].result(30)

    def active_preallocated() -> bool:
        produce(kafpy_broker.bootstrap, topic, [b"y" * 20_000])
        return segment_files(kafpy_broker, topic)[-1].stat().st_size == SEGMENT_BYTES

    # the config reaches the log a moment later: the next segment rolled after it is
    # preallocated (the one active when it came stays as it is)
    wait_until(active_preallocated, 30, "a preallocated segment after AlterConfigs")
    *rolled, _ = segment_files(kafpy_broker, topic)
    assert all(p.stat().st_size == data_size(p) for p in rolled)


def test_a_killed_broker_serves_every_acknowledged_record(kafpy_broker: KafpyBroker) -> None:
    topic = f"kill-{uuid.uuid4().hex[:8]}"
    create_topic(
        kafpy_broker.bootstrap,
        topic,
        {"preallocate": "true", "segment.bytes": str(SEGMENT_BYTES)},
    )
    values = [b"%06d" % i + b"x" * 300 for i in range(300)]
    assert produce(kafpy_broker.bootstrap, topic, values) == list(range(300))
    active = segment_files(kafpy_broker, topic)[-1]
    assert active.stat().st_size == SEGMENT_BYTES

    kafpy_broker.kill()
    assert not (kafpy_broker.log_dir / ".kafka_cleanshutdown").exists()
    assert active.stat().st_size == SEGMENT_BYTES  # nobody trimmed it: zeros follow the data
    good_size = data_size(active)

    kafpy_broker.start()
    assert active.stat().st_size == good_size  # recovery ended the log at the zeros
    assert consume_all(kafpy_broker.bootstrap, topic) == list(enumerate(values))
    assert produce(kafpy_broker.bootstrap, topic, [b"more"]) == [300]
    assert "Traceback" not in kafpy_broker.log_path.read_text(errors="replace")
