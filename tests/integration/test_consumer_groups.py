"""Consumer groups against real `kafpy server` processes: confluent-kafka members splitting
partitions and rebalancing, offsets surviving a restart, kafka-python, aiokafka and
`kcat -G` group consumers committing, `kafpy consumer-groups`, and Kafka's error codes
for bad commits. The rebalance time is printed (see the report), never asserted."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kafpy.client.connection import BrokerConnection
from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.errors import Errors
from tests.fixtures.broker import KafpyBroker

GROUP_OVERRIDES = {"offsets.topic.num.partitions": "3", "group.initial.rebalance.delay.ms": "0"}
FAST = {"session.timeout.ms": 6000, "heartbeat.interval.ms": 300, "auto.offset.reset": "earliest"}
KCAT = shutil.which("kcat") or shutil.which("kafkacat")
DEADLINE_S = 30.0


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafpyBroker]:
    b = KafpyBroker(tmp_path_factory.mktemp("groups-broker"), GROUP_OVERRIDES)
    b.start()
    try:
        yield b
    finally:
        b.stop()


def new_topic(bootstrap: str, partitions: int, records: int = 0) -> str:
    topic = f"cg-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(30)
    if records:
        p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
        for i in range(records):
            p.produce(topic, key=b"%d" % i, value=b"v%d" % i, partition=i % partitions)
        assert p.flush(30) == 0
    return topic


def poll_until(
    consumers: list[Consumer], done: Callable[[], bool], seen: dict[int, list[Any]] | None = None
) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not done():
        assert time.monotonic() < deadline, "the group did not settle in time"
        for i, c in enumerate(consumers):
            msg = c.poll(0.05)
            if msg is not None and not msg.error() and seen is not None:
                seen.setdefault(i, []).append(msg)


def assigned(c: Consumer) -> set[int]:
    return {tp.partition for tp in c.assignment()}


def test_confluent_members_split_rebalance_and_hand_over(broker: KafpyBroker) -> None:
    b = broker.bootstrap
    topic = new_topic(b, 6, records=60)
    group = f"g-{uuid.uuid4().hex[:6]}"
    conf = {"bootstrap.servers": b, "group.id": group, **FAST}
    c1, c2 = Consumer(conf), Consumer(conf)
    for c in (c1, c2):
        c.subscribe([topic])
    members = [c1, c2]
    seen: dict[int, list[Any]] = {}

    def split(cs: list[Consumer]) -> bool:
        parts = [assigned(c) for c in cs]
        return all(parts) and sum(map(len, parts)) == 6 and set().union(*parts) == set(range(6))

    poll_until(members, lambda: split(members), seen)
    poll_until(members, lambda: sum(map(len, seen.values())) >= 60, seen)
    assert len(assigned(c1)) == 3 and len(assigned(c2)) == 3

    # a third member joins: everyone is reassigned; time until all three consume again
    p = Producer({"bootstrap.servers": b})
    c3 = Consumer(conf)
    start = time.monotonic()
    c3.subscribe([topic])
    members.append(c3)
    seen.clear()
    poll_until(
        members, lambda: split(members) and all(len(assigned(c)) == 2 for c in members), seen
    )
    for i in range(60):
        p.produce(topic, value=b"after", partition=i % 6)
    p.flush(10)
    poll_until(
        members,
        lambda: all(any(m.value() == b"after" for m in seen.get(i, [])) for i in range(3)),
        seen,
    )
    print(
        f"\nrebalance: member joined -> all 3 members consuming again in {time.monotonic() - start:.3f} s"
    )

    # one leaves: its partitions go to the others
    c3.close()
    members.pop()
    poll_until(members, lambda: split(members))
    assert len(assigned(c1)) + len(assigned(c2)) == 6
    for c in members:
        c.close()


def test_committed_offsets_survive_restart(
    kafpy_broker_factory: Callable[..., KafpyBroker],
) -> None:
    broker = kafpy_broker_factory(GROUP_OVERRIDES)
    b = broker.bootstrap
    topic = new_topic(b, 2, records=40)
    group = "restart-group"
    c = Consumer({"bootstrap.servers": b, "group.id": group, "enable.auto.commit": False, **FAST})
    c.subscribe([topic])
    got: dict[int, list[Any]] = {}
    poll_until([c], lambda: len(got.get(0, [])) >= 40, got)
    c.commit(asynchronous=False)
    before = {tp.partition: tp.offset for tp in c.committed(c.assignment(), timeout=10)}
    assert before == {0: 20, 1: 20}
    c.close()

    broker.restart()
    c = Consumer({"bootstrap.servers": b, "group.id": group, "enable.auto.commit": False, **FAST})
    from confluent_kafka import TopicPartition as CTP

    deadline = time.monotonic() + DEADLINE_S
    while True:
        try:
            after = {
                tp.partition: tp.offset
                for tp in c.committed([CTP(topic, 0), CTP(topic, 1)], timeout=5)
            }
            if after == before:
                break
        except Exception:  # the coordinator may still be loading
            pass
        assert time.monotonic() < deadline, "committed offsets did not come back after the restart"
        time.sleep(0.2)
    c.close()


def test_kafka_python_group_consumer_commits(broker: KafpyBroker) -> None:
    from kafka import KafkaConsumer
    from kafka.structs import TopicPartition as KTP

    topic = new_topic(broker.bootstrap, 3, records=30)
    group = f"kp-{uuid.uuid4().hex[:6]}"
    c = KafkaConsumer(topic, bootstrap_servers=broker.bootstrap, group_id=group, auto_offset_reset="earliest",
                      enable_auto_commit=False, consumer_timeout_ms=15000, session_timeout_ms=6000,
                      heartbeat_interval_ms=300)  # fmt: skip
    values = []
    for msg in c:
        values.append(msg.value)
        if len(values) == 30:
            break
    c.commit()
    assert sorted(values) == sorted(b"v%d" % i for i in range(30))
    assert {c.committed(KTP(topic, p)) for p in range(3)} == {10}
    c.close()


def test_aiokafka_group_consumer_commits(broker: KafpyBroker) -> None:
    from aiokafka import AIOKafkaConsumer
    from aiokafka.structs import TopicPartition as ATP

    topic = new_topic(broker.bootstrap, 2, records=20)
    group = f"ak-{uuid.uuid4().hex[:6]}"

    async def run() -> dict[int, int | None]:
        c = AIOKafkaConsumer(topic, bootstrap_servers=broker.bootstrap, group_id=group,
                             auto_offset_reset="earliest", enable_auto_commit=False,
                             session_timeout_ms=6000, heartbeat_interval_ms=300)  # fmt: skip
        await c.start()
        try:
            n = 0
            async with asyncio.timeout(DEADLINE_S):
                async for _ in c:
                    n += 1
                    if n == 20:
                        break
            await c.commit()
            return {p: await c.committed(ATP(topic, p)) for p in range(2)}
        finally:
            await c.stop()

    assert asyncio.run(run()) == {0: 10, 1: 10}


@pytest.mark.skipif(KCAT is None, reason="kcat is not installed (apt-get install kcat)")
def test_kcat_balanced_consumer_commits_and_describe_shows_lag(broker: KafpyBroker) -> None:
    assert KCAT is not None
    b = broker.bootstrap
    topic = new_topic(b, 2, records=20)
    group = f"kc-{uuid.uuid4().hex[:6]}"
    res = subprocess.run(
        [KCAT, "-b", b, "-G", group, "-o", "beginning", "-e", "-f", "%s\n", "-X", "enable.auto.commit=true",
         "-X", "auto.commit.interval.ms=100", topic],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert sorted(res.stdout.split()) == sorted(f"v{i}" for i in range(20))

    # 5 more records per partition: the group's lag is 5 on each
    p = Producer({"bootstrap.servers": b})
    for i in range(10):
        p.produce(topic, value=b"late", partition=i % 2)
    p.flush(10)
    out = cg(b, "--describe", "--group", group)
    rows = [line.split() for line in out.splitlines() if line.startswith(group)]
    assert [(r[1], r[2], r[3], r[4], r[5]) for r in rows] == [
        (topic, "0", "10", "15", "5"),
        (topic, "1", "10", "15", "5"),
    ]
    assert group in cg(b, "--list").split()


def cg(bootstrap: str, *args: str, ok: bool = True) -> str:
    res = subprocess.run([sys.executable, "-m", "kafpy", "consumer-groups", "--bootstrap-server", bootstrap, *args],
                         capture_output=True, text=True, timeout=60)  # fmt: skip
    assert (res.returncode == 0) == ok, res.stderr
    return res.stdout + res.stderr


def test_reset_offsets_and_delete(broker: KafpyBroker) -> None:
    b = broker.bootstrap
    topic = new_topic(b, 2, records=10)
    group = f"rs-{uuid.uuid4().hex[:6]}"
    out = cg(
        b, "--reset-offsets", "--group", group, "--topic", topic, "--to-offset", "3", "--execute"
    )
    assert [line.split()[2:] for line in out.splitlines() if line.startswith(group)] == [
        ["0", "3"],
        ["1", "3"],
    ]
    out = cg(b, "--describe", "--group", group)
    assert [line.split()[3:6] for line in out.splitlines() if line.startswith(group)] == [
        ["3", "5", "2"]
    ] * 2
    assert "was successful" in cg(b, "--delete", "--group", group)
    assert "does not exist" in cg(b, "--describe", "--group", group, ok=False)


async def _group_requests(bootstrap: str, topic: str) -> dict[str, int]:
    host, port = bootstrap.split(":")
    group = f"err-{uuid.uuid4().hex[:6]}"
    deadline = time.monotonic() + DEADLINE_S
    while True:
        conn = BrokerConnection(host, int(port))
        await conn.connect()
        r = await conn.send(ApiKey.FIND_COORDINATOR, {"key": group, "key_type": 0})
        if r["error_code"] == Errors.NONE:
            break
        await conn.close()
        assert time.monotonic() < deadline
        await asyncio.sleep(0.2)
    try:
        join = {
            "group_id": group,
            "session_timeout_ms": 10000,
            "rebalance_timeout_ms": 10000,
            "member_id": "",
            "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": b"\x00\x00\x00\x00\x00\x00"}],
        }
        r = await conn.send(ApiKey.JOIN_GROUP, join, 4)
        assert r["error_code"] == Errors.MEMBER_ID_REQUIRED
        member = r["member_id"]
        r = await conn.send(ApiKey.JOIN_GROUP, {**join, "member_id": member}, 4)
        assert r["error_code"] == Errors.NONE and r["leader"] == member
        generation = r["generation_id"]
        codes = {}
        r = await conn.send(ApiKey.SYNC_GROUP, {"group_id": group, "generation_id": generation, "member_id": "x",
                                                "assignments": []}, 3)  # fmt: skip
        codes["sync unknown member"] = r["error_code"]
        r = await conn.send(ApiKey.SYNC_GROUP, {"group_id": group, "generation_id": generation, "member_id": member,
                                                "assignments": [{"member_id": member, "assignment": b""}]}, 3)  # fmt: skip
        assert r["error_code"] == Errors.NONE  # the group is Stable now

        def commit(gen: int, member_id: str, topic_name: str) -> dict[str, Any]:
            return {"group_id": group, "generation_id_or_member_epoch": gen, "member_id": member_id, "topics": [
                {"name": topic_name, "partitions": [{"partition_index": 0, "committed_offset": 1,
                                                     "committed_metadata": ""}]}]}  # fmt: skip

        for name, body in (("wrong generation", commit(generation + 5, member, topic)),
                           ("unknown member", commit(generation, "nobody", topic)),
                           ("unknown topic", commit(generation, member, "no-such-topic-" + group))):  # fmt: skip
            r = await conn.send(ApiKey.OFFSET_COMMIT, body, 7)
            codes[name] = r["topics"][0]["partitions"][0]["error_code"]
        r = await conn.send(
            ApiKey.HEARTBEAT,
            {"group_id": group, "generation_id": generation + 1, "member_id": member},
            3,
        )
        codes["heartbeat wrong generation"] = r["error_code"]
        return codes
    finally:
        await conn.close()


def test_errors_are_kafkas_codes(broker: KafpyBroker) -> None:
    topic = new_topic(broker.bootstrap, 1)
    assert asyncio.run(_group_requests(broker.bootstrap, topic)) == {
        "wrong generation": Errors.ILLEGAL_GENERATION,
        "unknown member": Errors.UNKNOWN_MEMBER_ID,
        "unknown topic": Errors.UNKNOWN_TOPIC_OR_PARTITION,
        "heartbeat wrong generation": Errors.ILLEGAL_GENERATION,
        "sync unknown member": Errors.UNKNOWN_MEMBER_ID,
    }
