"""The console's JSON API and write forms against a real broker, fed by real clients.

One in-process kafpy broker for the module (kafpy.testing.KafkaBroker); records and
group offsets come from confluent-kafka (librdkafka), so the console reads what a real
client wrote. The console runs on a thread (tests/fixtures/console.py).
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from typing import Any

import confluent_kafka
import pytest

from kafpy.testing import KafkaBroker
from kafpy.testing.wait import wait_until
from tests.fixtures.console import ConsoleServer


@pytest.fixture(scope="module")
def broker() -> Iterator[KafkaBroker]:
    with KafkaBroker() as b:
        yield b


def produce(bootstrap: str, topic: str, records: list[dict[str, Any]]) -> None:
    """Produce with confluent-kafka, each record {"value", "key"?, "headers"?, "partition"?}."""
    producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for r in records:
        producer.produce(
            topic,
            value=r["value"],
            key=r.get("key"),
            headers=r.get("headers"),
            partition=r.get("partition", 0),
        )
    assert producer.flush(30) == 0


def commit(bootstrap: str, group: str, topic: str, offsets: dict[int, int]) -> None:
    """Commit offsets for `group` with a confluent-kafka consumer, then leave."""
    consumer = confluent_kafka.Consumer(
        {"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False}
    )
    try:
        consumer.commit(
            offsets=[confluent_kafka.TopicPartition(topic, p, o) for p, o in offsets.items()],
            asynchronous=False,
        )
    finally:
        consumer.close()


def get(console: ConsoleServer, path: str) -> tuple[int, Any]:
    try:
        with urllib.request.urlopen(console.url + path, timeout=60) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def post(console: ConsoleServer, path: str, form: dict[str, str]) -> tuple[int, str, str]:
    """POST a form; returns (status, final URL path, body) after redirects."""
    data = urllib.parse.urlencode(form).encode()
    try:
        with urllib.request.urlopen(console.url + path, data=data, timeout=60) as r:
            return r.status, urllib.parse.urlsplit(r.url).path, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, path, e.read().decode()


@pytest.fixture(scope="module")
def console(broker: KafkaBroker) -> Iterator[ConsoleServer]:
    server = ConsoleServer(broker.bootstrap_servers).start()
    try:
        yield server
    finally:
        server.stop()


def test_brokers_show_the_controller_and_their_log_dirs(
    broker: KafkaBroker, console: ConsoleServer
) -> None:
    status, body = get(console, "/api/brokers")
    assert status == 200
    [b] = body["brokers"]
    assert (b["id"], b["port"], b["controller"]) == (0, broker.port, True)
    # the sizes come from the broker's DescribeLogDirs answer
    [d] = b["log_dirs"]
    assert d["error"] is None and d["size"] >= 0 and d["total_bytes"] == -1
    assert b["log_dirs_note"] is None


def test_topics_and_one_topic_with_offsets(broker: KafkaBroker, console: ConsoleServer) -> None:
    broker.create_topic("api-orders", partitions=3, config={"retention.ms": "3600000"})
    produce(broker.bootstrap_servers, "api-orders", [{"value": b"v%d" % i} for i in range(5)])
    status, body = get(console, "/api/topics")
    assert status == 200
    [t] = [t for t in body["topics"] if t["name"] == "api-orders"]
    assert (t["partitions"], t["replication_factor"], t["under_replicated"]) == (3, 1, 0)
    status, topic = get(console, "/api/topics/api-orders")
    assert status == 200
    p0 = topic["partition_details"][0]
    assert (p0["leader"], p0["replicas"], p0["isr"]) == (0, [0], [0])
    assert (p0["log_start_offset"], p0["log_end_offset"]) == (0, 5)
    retention = next(c for c in topic["configs"] if c["name"] == "retention.ms")
    assert (retention["value"], retention["is_default"]) == ("3600000", False)


def test_group_lag_per_partition_and_total(broker: KafkaBroker, console: ConsoleServer) -> None:
    broker.create_topic("api-lag", partitions=2)
    produce(broker.bootstrap_servers, "api-lag", [{"value": b"x", "partition": 0}] * 10)
    produce(broker.bootstrap_servers, "api-lag", [{"value": b"y", "partition": 1}] * 3)
    commit(broker.bootstrap_servers, "api-lag-group", "api-lag", {0: 4, 1: 3})
    status, groups = get(console, "/api/groups")
    assert status == 200
    assert {"group_id": "api-lag-group", "protocol_type": "", "state": "Empty", "members": 0} in (
        groups["groups"]
    )
    status, group = get(console, "/api/groups/api-lag-group")
    assert status == 200
    lags = {
        (o["partition"], o["committed_offset"], o["log_end_offset"], o["lag"])
        for o in group["offsets"]
    }
    assert lags == {(0, 4, 10, 6), (1, 3, 3, 0)}
    assert group["total_lag"] == 6
    status, missing = get(console, "/api/groups/no-such-group")
    assert status == 404
    assert missing["error"]["detail"] == "Consumer group 'no-such-group' does not exist."


def test_message_browser_latest_from_offset_and_timestamp(
    broker: KafkaBroker, console: ConsoleServer
) -> None:
    broker.create_topic("api-browse")
    before = int(time.time() * 1000) - 1
    records: list[dict[str, Any]] = [
        {"key": b"k1", "value": b'{"id": 1, "item": "tea"}', "headers": [("trace", b"abc")]},
        {"key": b"k2", "value": b"\x00\xff<img src=x>"},
    ]
    records += [{"value": b"n%d" % i} for i in range(8)]
    produce(broker.bootstrap_servers, "api-browse", records)
    base = "/api/topics/api-browse/partitions/0/messages"
    status, latest = get(console, f"{base}?limit=3")
    assert status == 200
    assert [r["offset"] for r in latest["records"]] == [7, 8, 9]
    assert (latest["log_start_offset"], latest["log_end_offset"]) == (0, 10)
    status, first = get(console, f"{base}?offset=0&limit=2")
    json_record, binary = first["records"]
    assert json_record["key"]["text"] == "k1"
    assert json_record["value"] == {
        "text": '{\n  "id": 1,\n  "item": "tea"\n}',
        "format": "json",
        "size": 24,
        "truncated": False,
        "note": None,
    }
    assert json_record["headers"] == [
        {
            "key": "trace",
            "value": {"text": "abc", "format": "text", "size": 3, "truncated": False, "note": None},
        }
    ]
    assert binary["value"]["format"] == "hex"
    assert binary["value"]["text"] == "00000000  00 ff 3c 69 6d 67 20 73 72 63 3d 78 3e"
    status, as_hex = get(console, f"{base}?offset=0&limit=1&format=hex")
    assert as_hex["records"][0]["value"]["text"].startswith("00000000  7b 22 69 64")
    status, by_time = get(console, f"{base}?timestamp={before}&limit=1")
    assert [r["offset"] for r in by_time["records"]] == [0]
    status, future = get(console, f"{base}?timestamp={before + 3_600_000}")
    assert status == 200
    assert future["records"] == []
    assert future["note"].startswith("No record of api-browse-0 has a timestamp at or after")


def test_message_browser_says_what_is_out_of_range_or_missing(
    broker: KafkaBroker, console: ConsoleServer
) -> None:
    broker.create_topic("api-range")
    produce(broker.bootstrap_servers, "api-range", [{"value": b"a"}, {"value": b"b"}])
    status, body = get(console, "/api/topics/api-range/partitions/0/messages?offset=7")
    assert status == 416
    assert body["error"]["detail"] == (
        "Offset 7 is out of range for partition api-range-0: it holds offsets 0 to 1 "
        "(log end offset 2)."
    )
    status, body = get(console, "/api/topics/api-range/partitions/4/messages")
    assert status == 404
    assert body["error"]["detail"] == (
        "Topic 'api-range' has no partition 4: it has 1 partitions (0 to 0)."
    )
    status, body = get(console, "/api/topics/api-never/partitions/0/messages")
    assert status == 404
    assert body["error"]["detail"] == "Topic 'api-never' does not exist (it may have been deleted)."


def test_writes_with_allow_writes(
    broker: KafkaBroker, console_factory: Callable[..., ConsoleServer]
) -> None:
    writable = console_factory(broker.bootstrap_servers, allow_writes=True)
    status, where, _ = post(
        writable,
        "/topics",
        {"name": "api-made", "partitions": "2", "configs": "retention.ms=60000"},
    )
    assert (status, where) == (200, "/topics/api-made")
    status, topic = get(writable, "/api/topics/api-made")
    assert topic["partitions"] == 2
    status, _, html = post(writable, "/topics", {"name": "api-made", "partitions": "2"})
    assert status == 409
    assert "<h1>Topic already exists</h1>" in html and "api-made" in html

    produce(broker.bootstrap_servers, "api-made", [{"value": b"z"}] * 5)
    commit(broker.bootstrap_servers, "api-reset", "api-made", {0: 5})
    status, where, html = post(
        writable, "/groups/api-reset/offsets", {"topic": "api-made", "strategy": "earliest"}
    )
    assert (status, where) == (200, "/groups/api-reset")
    assert "Offsets reset: api-made-0=0, api-made-1=0." in html
    status, group = get(writable, "/api/groups/api-reset")
    assert group["total_lag"] == 5

    status, where, html = post(writable, "/topics/api-made/delete", {})
    assert (status, where) == (200, "/topics")
    assert "Topic &#39;api-made&#39; is marked for deletion." in html
    wait_until(
        lambda: get(writable, "/api/topics/api-made")[0] == 404,
        30,
        "the deleted topic to be described no more",
    )
    status, body = get(writable, "/api/topics/api-made/partitions/0/messages")
    assert status == 404
    assert "does not exist (it may have been deleted)" in body["error"]["detail"]


def test_a_live_group_shows_its_members_and_their_partitions(
    broker: KafkaBroker, console: ConsoleServer
) -> None:
    broker.create_topic("api-live")
    produce(broker.bootstrap_servers, "api-live", [{"value": b"m"}] * 3)
    consumer = confluent_kafka.Consumer(
        {
            "bootstrap.servers": broker.bootstrap_servers,
            "group.id": "api-live-group",
            "client.id": "live-reader",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    try:
        consumer.subscribe(["api-live"])

        def assigned() -> bool:
            if not consumer.assignment():
                consumer.poll(0.2)
            return bool(consumer.assignment())

        wait_until(assigned, 30, "the consumer's partitions", interval_s=0)
        consumer.commit(
            offsets=[confluent_kafka.TopicPartition("api-live", 0, 1)], asynchronous=False
        )
        status, group = get(console, "/api/groups/api-live-group")
        assert status == 200
        assert (group["state"], group["protocol_type"], group["assignor"]) == (
            "Stable",
            "consumer",
            "range",
        )
        [member] = group["members"]
        assert (member["client_id"], member["assignment"]) == ("live-reader", ["api-live-0"])
        [row] = group["offsets"]
        assert (row["committed_offset"], row["lag"], row["client_id"]) == (1, 2, "live-reader")
    finally:
        consumer.close()
