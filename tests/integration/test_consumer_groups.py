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
from kafpy.testing.wait import async_wait_until, wait_until
from tests.fixtures.broker import KafpyBroker, running_broker

GROUP_OVERRIDES = {"offsets.topic.num.partitions": "3", "group.initial.rebalance.delay.ms": "0"}
FAST = {"session.timeout.ms": 6000, "heartbeat.interval.ms": 300, "auto.offset.reset": "earliest"}
KCAT = shutil.which("kcat") or shutil.which("kafkacat")
DEADLINE_S = 30.0


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafpyBroker]:
    with running_broker(tmp_path_factory.mktemp("groups-broker"), GROUP_OVERRIDES) as b:
        yield b


def new_topic(bootstrap: str, partitions: int, records: int = 0) -> str:
    topic = f"cg-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    # kept for good: records with 2023 timestamps would otherwise be past retention (7 days)
    # when the broker's retention check first runs, 5 minutes after it started
    topics = [NewTopic(topic, partitions, 1, config={"retention.ms": "-1"})]
    admin.create_topics(topics)[topic].result(30)
    if records:
        p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
        for i in range(records):
            p.produce(topic, key=b"%d" % i, value=b"v%d" % i, partition=i % partitions)
        assert p.flush(30) == 0
    return topic


def poll_until(
    consumers: list[Consumer], done: Callable[[], bool], seen: dict[int, list[Any]] | None = None
) -> None:

    def settled() -> bool:
        if done():
            return True
        for i, c in enumerate(consumers):
            msg = c.poll(0.05)
            if msg is not None and not msg.error() and seen is not None:
                seen.setdefault(i, []).append(msg)
        return False

    wait_until(settled, DEADLINE_S, "the group to settle", interval_s=0)


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

    def committed() -> dict[int, int]:
        return {
            tp.partition: tp.offset for tp in c.committed([CTP(topic, 0), CTP(topic, 1)], timeout=5)
        }

    wait_until(
        lambda: committed() == before,
        DEADLINE_S,
        "the committed offsets back after the restart",
        interval_s=0.2,
        retry_on=(Exception,),  # the coordinator may still be loading
    )
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

    async def coordinator_found() -> BrokerConnection | None:
        conn = BrokerConnection(host, int(port))
        await conn.connect()
        r = await conn.send(ApiKey.FIND_COORDINATOR, {"key": group, "key_type": 0})
        if r["error_code"] == Errors.NONE:
            return conn
        await conn.close()
        return None

    conn = await async_wait_until(
        coordinator_found, DEADLINE_S, f"a coordinator for {group}", interval_s=0.2
    )
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


# -- kafka-consumer-groups.sh 2.8: describe sub-actions, reset scenarios and scopes ---------


RESET_FMT = "%-30s %-30s %-10s %-15s"  # ConsumerGroupCommand.printOffsetsToReset


def cg_split(bootstrap: str, *args: str, ok: bool = True) -> tuple[str, str]:
    res = subprocess.run([sys.executable, "-m", "kafpy", "consumer-groups", "--bootstrap-server", bootstrap, *args],
                         capture_output=True, text=True, timeout=60)  # fmt: skip
    assert (res.returncode == 0) == ok, res.stdout + res.stderr
    return res.stdout, res.stderr


def table(out: str, first: str) -> list[str]:
    """The lines of the table whose header starts with `first`, header included."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(first))
    return [line for line in lines[start:] if line.strip()]


def test_describe_offsets_members_and_state_of_an_active_group(broker: KafpyBroker) -> None:
    b = broker.bootstrap
    topic = new_topic(b, 2, records=20)
    group = f"ds-{uuid.uuid4().hex[:6]}"
    c = Consumer({"bootstrap.servers": b, "group.id": group, "enable.auto.commit": False,
                  "client.id": "describer", **FAST})  # fmt: skip
    c.subscribe([topic])
    got: dict[int, list[Any]] = {}
    poll_until([c], lambda: len(got.get(0, [])) >= 20, got)
    c.commit(asynchronous=False)
    try:
        out, _ = cg_split(b, "--describe", "--group", group, "--members")
        header, row = table(out, "GROUP")
        member = row.split()[1]
        host = row.split()[2]
        w = max(15, len(member))
        hw = max(15, len(host))
        fmt = f"%-15s %-{w}s %-{hw}s %-15s %-15s "
        assert header == fmt % ("GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS")
        assert row == fmt % (group, member, host, "describer", 2)

        out, _ = cg_split(b, "--describe", "--group", group, "--members", "--verbose")
        header, row = table(out, "GROUP")
        assert (
            header
            == fmt % ("GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS") + "ASSIGNMENT"
        )
        assert row == fmt % (group, member, host, "describer", 2) + f"{topic}(0,1)"

        out, _ = cg_split(b, "--describe", "--group", group, "--state")
        coordinator = f"{broker.host}:{broker.port} (0)"
        cw = max(25, len(coordinator))
        sfmt = f"%-{cw}s %-25s %-20s %-15s %s"
        assert table(out, "GROUP") == [
            sfmt % ("GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS"),
            sfmt % (group, coordinator, "range", "Stable", 1),
        ]

        for args in ((), ("--offsets",)):
            out, _ = cg_split(b, "--describe", "--group", group, *args)
            ofmt = f"%-15s %-15s %-10s %-15s %-15s %-15s %-{w}s %-{hw}s %s"
            assert table(out, "GROUP") == [
                ofmt % ("GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG",
                        "CONSUMER-ID", "HOST", "CLIENT-ID"),
                ofmt % (group, topic, 0, 10, 10, 0, member, host, "describer"),
                ofmt % (group, topic, 1, 10, 10, 0, member, host, "describer"),
            ]  # fmt: skip

        # an active group's offsets are not reset
        out, _ = cg_split(b, "--reset-offsets", "--group", group, "--all-topics", "--to-earliest",
                          "--execute", ok=False)  # fmt: skip
        assert (f"Error: Assignments can only be reset if the group '{group}' is inactive, but the current "
                "state is Stable.") in out  # fmt: skip
        assert "NEW-OFFSET" not in out
    finally:
        c.close()

    # no members left: the state line on stderr, the committed offsets without owners
    out, err = cg_split(b, "--describe", "--group", group)
    assert f"\nConsumer group '{group}' has no active members." in err
    assert [line.split() for line in table(out, "GROUP")[1:]] == [
        [group, topic, "0", "10", "10", "0", "-", "-", "-"],
        [group, topic, "1", "10", "10", "0", "-", "-", "-"],
    ]
    out, err = cg_split(b, "--describe", "--group", group, "--members")
    assert f"Consumer group '{group}' has no active members." in err
    assert "CONSUMER-ID" not in out
    out, _ = cg_split(b, "--describe", "--group", group, "--state")
    assert table(out, "GROUP")[1].split()[-2:] == ["Empty", "0"]

    out, _ = cg_split(b, "--list", "--state")
    assert [group, "Empty"] in [line.split() for line in out.splitlines()]
    assert out.splitlines()[0].split() == ["GROUP", "STATE"]
    out, _ = cg_split(b, "--list", "--state", "stable")
    assert group not in out
    _, err = cg_split(b, "--list", "--state", "sleepy", ok=False)
    assert (
        "Invalid state list 'sleepy'. Valid states are: PreparingRebalance, CompletingRebalance, Stable, Dead, Empty"
        in err
    )


def test_describe_all_groups(broker: KafpyBroker) -> None:
    b = broker.bootstrap
    topic = new_topic(b, 1, records=4)
    groups = sorted(f"ag-{uuid.uuid4().hex[:6]}" for _ in range(2))
    for g in groups:
        cg(b, "--reset-offsets", "--group", g, "--topic", topic, "--to-offset", "1", "--execute")
    out, _ = cg_split(b, "--describe", "--all-groups")
    rows = [
        line.split()[:4] for line in out.splitlines() if line.split()[:1] in ([g] for g in groups)
    ]
    assert rows == [[groups[0], topic, "0", "1"], [groups[1], topic, "0", "1"]]


def offsets_of(bootstrap: str, group: str) -> list[str]:
    out = cg(bootstrap, "--describe", "--group", group)
    return [line.split()[3] for line in out.splitlines() if line.startswith(group)]


def test_reset_offsets_scenarios_and_scopes(broker: KafpyBroker, tmp_path: Any) -> None:
    b = broker.bootstrap
    topic = new_topic(b, 2)
    base = 1_700_000_000_000  # 2023-11-14T22:13:20Z
    p = Producer({"bootstrap.servers": b})
    for i in range(10):
        for part in (0, 1):
            p.produce(topic, value=b"v", partition=part, timestamp=base + i * 1000)
    assert p.flush(30) == 0
    group = f"rso-{uuid.uuid4().hex[:6]}"
    rst = ("--reset-offsets", "--group", group)

    out, err = cg_split(b, *rst, "--topic", topic, "--to-offset", "3", "--execute")
    assert table(out, "GROUP") == [
        RESET_FMT % ("GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"),
        RESET_FMT % (group, topic, 0, 3),
        RESET_FMT % (group, topic, 1, 3),
    ]
    assert offsets_of(b, group) == ["3", "3"]

    cg(b, *rst, "--all-topics", "--shift-by", "2", "--execute")
    assert offsets_of(b, group) == ["5", "5"]
    out, err = cg_split(b, *rst, "--all-topics", "--shift-by", "100")  # dry run by default
    assert "WARN: No action will be performed as the --execute option is missing." in err
    assert [line.split()[2:] for line in out.splitlines() if line.startswith(group)] == [
        ["0", "10"],
        ["1", "10"],
    ]
    assert offsets_of(b, group) == ["5", "5"]

    out = cg(b, *rst, "--topic", f"{topic}:1", "--to-earliest", "--execute")
    assert [line.split()[2:] for line in out.splitlines() if line.startswith(group)] == [["1", "0"]]
    assert offsets_of(b, group) == ["5", "0"]
    cg(b, *rst, "--topic", f"{topic}:1", "--to-current", "--execute")
    assert offsets_of(b, group) == ["5", "0"]

    out, _ = cg_split(b, *rst, "--all-topics", "--to-latest", "--export", "--dry-run")
    assert out == f"{topic},0,10\n{topic},1,10\n\n"

    for when, expected in (("2023-11-14T22:13:24.000", "4"), ("2023-11-14T23:13:27.000+01:00", "7"),
                           ("2023-11-14T22:13:22.500Z", "3"), ("2030-01-01T00:00:00.000", "10")):  # fmt: skip
        cg(b, *rst, "--topic", f"{topic}:0", "--to-datetime", when, "--execute")
        assert offsets_of(b, group)[0] == expected, when
    cg(b, *rst, "--topic", topic, "--by-duration", "P36500D", "--execute")
    assert offsets_of(b, group) == ["0", "0"]
    cg(b, *rst, "--topic", topic, "--by-duration", "PT1M", "--execute")
    assert offsets_of(b, group) == ["10", "10"]

    plan = tmp_path / "plan.csv"
    plan.write_text(f"{topic},0,4\n{topic},1,60\n")
    out, err = cg_split(b, *rst, "--from-file", str(plan), "--execute")
    assert "Value will be set to 10" in err
    assert offsets_of(b, group) == ["4", "10"]
    other = f"rso2-{uuid.uuid4().hex[:6]}"
    plan.write_text(f"{group},{topic},0,1\n{other},{topic},1,2\n")
    cg(
        b,
        "--reset-offsets",
        "--group",
        group,
        "--group",
        other,
        "--from-file",
        str(plan),
        "--execute",
    )
    assert offsets_of(b, group) == ["1", "10"]
    assert offsets_of(b, other) == ["2"]
    out, _ = cg_split(
        b,
        "--reset-offsets",
        "--group",
        group,
        "--group",
        other,
        "--all-topics",
        "--to-earliest",
        "--export",
    )
    assert sorted(out.split()) == sorted(
        [f"{group},{topic},0,0", f"{group},{topic},1,0", f"{other},{topic},1,0"]
    )

    _, err = cg_split(b, *rst, "--to-earliest", ok=False)
    assert "One of the reset scopes should be defined: --all-topics, --topic." in err
    _, err = cg_split(b, *rst, "--all-topics", "--to-earliest", "--to-latest", ok=False)
    assert "requires one of the following scenarios" in err
    _, err = cg_split(b, "--delete-offsets", "--group", group, "--topic", topic, ok=False)
    assert "OffsetDelete" in err
