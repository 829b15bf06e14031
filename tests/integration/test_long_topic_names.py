"""A topic whose name has the longest legal length (249 characters) lives its whole life:
created, written, read, deleted (its `-delete` directory name is cut to fit 255 bytes)
and, after a restart in the middle of the deletion, gone without an error."""

from __future__ import annotations

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kafpy.testing.wait import wait_until
from tests.fixtures.broker import KafpyBroker
from tests.integration.test_restart import consume_all

WAIT_S = 60.0


def test_a_249_character_topic_is_created_written_deleted_and_gone_after_a_restart(
    kafpy_broker: KafpyBroker,
) -> None:
    topic = "long-name." + "x" * 239
    assert len(topic) == 249
    admin = AdminClient({"bootstrap.servers": kafpy_broker.bootstrap})
    admin.create_topics([NewTopic(topic, 2, 1)])[topic].result(30)
    producer = Producer({"bootstrap.servers": kafpy_broker.bootstrap, "acks": "all"})
    for i in range(10):
        producer.produce(topic, value=b"%d" % i, partition=0)
    assert producer.flush(30) == 0
    del producer  # its metadata refreshes would create the topic again (auto.create.topics.enable)
    assert consume_all(kafpy_broker.bootstrap, topic) == [(i, b"%d" % i) for i in range(10)]

    admin.delete_topics([topic])[topic].result(30)

    def topic_dirs() -> list[str]:
        return [p.name for p in kafpy_broker.log_dir.iterdir() if p.name.startswith("long-name")]

    # renamed for deletion (log.segment.delete.delay.ms keeps the files 60 s)
    wait_until(
        lambda: len(topic_dirs()) == 2 and all(n.endswith("-delete") for n in topic_dirs()),
        WAIT_S,
        "the partitions' dirs renamed to -delete",
        context=kafpy_broker.log_tail,
    )
    assert all(len(n.encode()) <= 255 for n in topic_dirs())
    # the controller finishes the deletion (its znodes) before the broker stops: stopped in
    # between, the restarted controller resumes it and, as Kafka's, first sends the topic's
    # offline partitions (leader -1) in a LeaderAndIsr, which the broker logs as an ERROR
    wait_until(
        lambda: (
            f"Deletion of topic {topic} successfully completed"
            in kafpy_broker.log_path.read_text(errors="replace")
        ),
        WAIT_S,
        "the controller to complete the deletion",
        context=kafpy_broker.log_tail,
    )
    assert kafpy_broker.stop() == 0
    kafpy_broker.overrides["log.segment.delete.delay.ms"] = "0"
    kafpy_broker.overrides["log.initial.task.delay.ms"] = "100"
    kafpy_broker.start()  # loads the -delete dirs and deletes them
    wait_until(
        lambda: not topic_dirs(), WAIT_S, "the -delete dirs gone", context=kafpy_broker.log_tail
    )
    out = kafpy_broker.log_path.read_text(errors="replace")
    assert "File name too long" not in out
    assert [line for line in out.splitlines() if " ERROR " in line] == []
