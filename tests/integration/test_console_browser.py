"""The web console in real headless Chromium (Selenium + Debian's chromium/chromedriver).

Against real brokers (kafpy.testing's in-process KafkaBroker and a 3-broker KafkaCluster)
and, for the error page, `kafpy console` itself as a child process pointed at a port
nothing listens on. Each test saves a screenshot of its page in its temp dir; with
KAFPY_CONSOLE_SCREENSHOTS=<dir> they are copied there too (how docs/console-*.png are made).
"""

from __future__ import annotations

import asyncio
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import confluent_kafka
import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.schema_registry.json_schema import JSONSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from kafpy.client.admin_client import AdminClient, NewTopic
from kafpy.testing import KafkaBroker, KafkaCluster
from tests.fixtures.console import ConsoleServer
from tests.fixtures.schema_registry import SchemaRegistryProcess

pytestmark = pytest.mark.timeout(180)


@pytest.fixture(scope="module")
def broker() -> Iterator[KafkaBroker]:
    with KafkaBroker() as b:
        yield b


@pytest.fixture(scope="module")
def console(broker: KafkaBroker) -> Iterator[ConsoleServer]:
    server = ConsoleServer(broker.bootstrap_servers).start()
    try:
        yield server
    finally:
        server.stop()


def screenshot(driver: Any, tmp_path: Path, name: str) -> Path:
    """Save the page as <tmp_path>/console-<name>.png (and in $KAFPY_CONSOLE_SCREENSHOTS)."""
    path = tmp_path / f"console-{name}.png"
    assert driver.save_screenshot(str(path)), f"no screenshot of {name}"
    copy_to = os.environ.get("KAFPY_CONSOLE_SCREENSHOTS")
    if copy_to:
        shutil.copy(path, Path(copy_to) / path.name)
    return path


def by_css(driver: Any, selector: str) -> Any:
    from selenium.webdriver.common.by import By

    return driver.find_element(By.CSS_SELECTOR, selector)


def wait_for(driver: Any, condition: Callable[[Any], object], timeout_s: float = 30) -> None:
    """Until `condition(driver)` holds: a click returns before the page it leads to has
    loaded (a form's POST and redirect, or a link, under load)."""
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(driver, timeout_s).until(condition)


def all_by_css(driver: Any, selector: str) -> list[Any]:
    from selenium.webdriver.common.by import By

    return list(driver.find_elements(By.CSS_SELECTOR, selector))


def produce(bootstrap: str, topic: str, values: list[bytes], partition: int = 0) -> None:
    producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for v in values:
        producer.produce(topic, value=v, partition=partition)
    assert producer.flush(30) == 0


def test_topic_list_shows_a_created_topic_with_its_partition_count(
    broker: KafkaBroker, console: ConsoleServer, chromium: Any, tmp_path: Path
) -> None:
    broker.create_topic("web-orders", partitions=3)
    produce(broker.bootstrap_servers, "web-orders", [b"a", b"b"], partition=1)
    chromium.get(f"{console.url}/topics")
    row = by_css(chromium, 'tr[data-topic="web-orders"]')
    assert row.find_element("css selector", "td.partitions").text == "3"
    assert "under-replicated" not in (row.get_attribute("class") or "")
    screenshot(chromium, tmp_path, "topics")

    row.find_element("link text", "web-orders").click()
    wait_for(chromium, lambda d: d.title.startswith("web-orders"))
    p1 = by_css(chromium, 'tr[data-partition="1"]')
    assert [td.text for td in p1.find_elements("css selector", "td")][:6] == [
        "1", "0", "0", "0", "0", "2",
    ]  # fmt: skip
    screenshot(chromium, tmp_path, "topic")


def test_brokers_page_marks_the_controller(
    broker: KafkaBroker, console: ConsoleServer, chromium: Any, tmp_path: Path
) -> None:
    chromium.get(f"{console.url}/brokers")
    row = by_css(chromium, 'tr[data-broker="0"]')
    assert f"127.0.0.1:{broker.port}" in row.text
    assert row.find_element("css selector", ".badge.controller").text == "controller"
    # the broker serves DescribeLogDirs: its log dir with the size of its replicas
    log_dirs = row.find_element("css selector", ".log-dirs").text
    assert "replicas" in log_dirs and "not available" not in log_dirs
    screenshot(chromium, tmp_path, "brokers")


def test_a_consumer_group_shows_its_known_lag(
    broker: KafkaBroker, console: ConsoleServer, chromium: Any, tmp_path: Path
) -> None:
    broker.create_topic("web-lag")
    produce(broker.bootstrap_servers, "web-lag", [b"%d" % i for i in range(10)])
    consumer = confluent_kafka.Consumer(
        {"bootstrap.servers": broker.bootstrap_servers, "group.id": "team/billing"}
    )
    try:
        consumer.commit(
            offsets=[confluent_kafka.TopicPartition("web-lag", 0, 4)], asynchronous=False
        )
    finally:
        consumer.close()
    chromium.get(f"{console.url}/groups")
    by_css(chromium, 'tr[data-group="team/billing"] a').click()
    wait_for(chromium, lambda d: all_by_css(d, 'tr[data-tp="web-lag-0"]'))
    row = by_css(chromium, 'tr[data-tp="web-lag-0"]')
    assert row.find_element("css selector", "td.lag").text == "6"
    assert by_css(chromium, "#total-lag").text == "6"
    assert by_css(chromium, "#group-state").text == "Empty"
    screenshot(chromium, tmp_path, "group")


def test_message_browser_pretty_prints_json_and_escapes_binary(
    broker: KafkaBroker, console: ConsoleServer, chromium: Any, tmp_path: Path
) -> None:
    broker.create_topic("web-events")
    hostile_text = b"<script>document.title='pwned'</script>"
    hostile_binary = b"\xff\x00<img src=x onerror=\"document.title='pwned'\">"
    produce(
        broker.bootstrap_servers,
        "web-events",
        [b'{"user":"ada","items":[1,2],"total":9.5}', hostile_text, hostile_binary],
    )
    chromium.get(f"{console.url}/topics/web-events/partitions/0/messages")
    values = all_by_css(chromium, "td.value pre")
    assert [v.get_attribute("data-format") for v in values] == ["json", "text", "hex"]
    assert (
        values[0].text
        == '{\n  "user": "ada",\n  "items": [\n    1,\n    2\n  ],\n  "total": 9.5\n}'
    )
    assert values[1].text == hostile_text.decode()
    assert values[2].text.startswith("00000000  ff 00 3c 69 6d 67")
    assert all_by_css(chromium, "td.value script, td.value img") == []
    assert "pwned" not in chromium.title
    screenshot(chromium, tmp_path, "messages")

    chromium.get(f"{console.url}/topics/web-events/partitions/0/messages?offset=99")
    assert by_css(chromium, "h1").text == "Offset out of range"
    assert (
        "Offset 99 is out of range for partition web-events-0" in by_css(chromium, ".detail").text
    )


def test_message_browser_decodes_schema_registry_records(
    broker: KafkaBroker,
    chromium: Any,
    tmp_path: Path,
    schema_registry_factory: Callable[..., SchemaRegistryProcess],
) -> None:
    registry = schema_registry_factory(broker.bootstrap_servers)
    broker.create_topic("web-avro")
    client = SchemaRegistryClient({"url": registry.url})
    ctx = SerializationContext("web-avro", MessageField.VALUE)
    user = {
        "type": "record",
        "name": "User",
        "fields": [
            {"name": "name", "type": "string"},
            {"name": "nick", "type": ["null", "string"]},
        ],
    }
    avro = AvroSerializer(client, json.dumps(user))({"name": "ada", "nick": "al"}, ctx)
    json_schema = json.dumps({"type": "object", "properties": {"n": {"type": "integer"}}})
    # a subject holds one schema type: the JSON schema under another subject
    json_ctx = SerializationContext("web-json", MessageField.VALUE)
    framed_json = JSONSerializer(json_schema, client)({"n": 7}, json_ctx)
    unknown_id = b"\x00\x00\x0f\x42\x3f{}"
    produce(broker.bootstrap_servers, "web-avro", [avro, framed_json, unknown_id, b"plain"])
    server = ConsoleServer(broker.bootstrap_servers, schema_registry=registry.url).start()
    try:
        chromium.get(f"{server.url}/topics/web-avro/partitions/0/messages")
        values = all_by_css(chromium, "td.value pre")
        assert [v.get_attribute("data-format") for v in values] == [
            "avro",
            "json-schema",
            "text",
            "text",
        ]
        assert json.loads(values[0].text) == {"name": "ada", "nick": {"string": "al"}}
        assert json.loads(values[1].text) == {"n": 7}
        notes = [m.text for m in all_by_css(chromium, "td.value .meta")]
        avro_id = client.get_latest_version("web-avro-value").schema_id
        assert f"schema id {avro_id}" in notes[0]
        assert "40403" in notes[2] and "id 999999" in notes[2]
        screenshot(chromium, tmp_path, "messages-schema-registry")
    finally:
        server.stop()


def test_forms_create_a_topic_only_with_allow_writes(
    broker: KafkaBroker,
    console: ConsoleServer,
    console_factory: Callable[..., ConsoleServer],
    chromium: Any,
) -> None:
    chromium.get(f"{console.url}/topics")
    assert all_by_css(chromium, "form.write") == []  # read-only: no write forms at all
    writable = console_factory(broker.bootstrap_servers, allow_writes=True)
    chromium.get(f"{writable.url}/topics")
    by_css(chromium, 'form.write input[name="name"]').send_keys("web-made")
    by_css(chromium, 'form.write input[name="partitions"]').send_keys("4")
    by_css(chromium, "form.write button").click()
    # the click returns before the form's POST and its redirect have loaded
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(chromium, 30).until(
        lambda d: (
            d.current_url == f"{writable.url}/topics/web-made"
            and len(all_by_css(d, "#partitions tbody tr")) == 4
        )
    )


def test_an_under_replicated_partition_is_highlighted(chromium: Any, tmp_path: Path) -> None:
    with KafkaCluster(3) as cluster:
        cluster.create_topic("web-replicated", partitions=1, replication_factor=3)
        console = ConsoleServer(cluster.bootstrap_servers).start()
        try:
            chromium.get(f"{console.url}/topics")
            row = by_css(chromium, 'tr[data-topic="web-replicated"]')
            assert row.get_attribute("class") == ""
            with urllib.request.urlopen(f"{console.url}/api/topics/web-replicated") as r:
                leader = json.loads(r.read())["partition_details"][0]["leader"]
            follower = next(b for b in cluster.broker_ids if b != leader)
            # a topic whose one replica is on the follower goes offline with it
            asyncio.run(create_on(cluster.bootstrap_servers, "web-solo", follower))
            cluster.stop_broker(follower)

            chromium.get(f"{console.url}/topics")
            row = by_css(chromium, 'tr[data-topic="web-replicated"]')
            assert row.get_attribute("class") == "under-replicated"
            assert row.find_element("css selector", "td.urp").text == "1"
            cell = row.find_element("css selector", "td")
            assert cell.value_of_css_property("background-color") == "rgba(255, 243, 205, 1)"

            chromium.get(f"{console.url}/topics/web-replicated")
            p0 = by_css(chromium, 'tr[data-partition="0"]')
            assert p0.get_attribute("class") == "under-replicated"
            assert str(follower) not in p0.find_elements("css selector", "td")[3].text
            screenshot(chromium, tmp_path, "under-replicated")

            chromium.get(f"{console.url}/topics")
            solo = by_css(chromium, 'tr[data-topic="web-solo"]')
            assert solo.get_attribute("class") == "offline"
            assert solo.find_element("css selector", "td.offline-count").text == "1"
            screenshot(chromium, tmp_path, "topics-health")
            chromium.get(f"{console.url}/topics/web-solo/partitions/0/messages")
            assert by_css(chromium, "h1").text == "Partition offline"
            assert by_css(chromium, ".detail").text.startswith("Partition web-solo-0 has no leader")
        finally:
            console.stop()


async def create_on(bootstrap: str, topic: str, broker_id: int) -> None:
    """Create `topic` with its one partition on broker `broker_id` only, and wait for it."""
    async with AdminClient.connect(bootstrap) as admin:
        await admin.create_topics([NewTopic(topic, replica_assignment={0: [broker_id]})])
        for _ in range(300):
            info = (await admin.describe_topics([topic]))[topic]
            if info.partitions and info.partitions[0].leader == broker_id:
                return
            await asyncio.sleep(0.05)
    raise AssertionError(f"{topic} got no leader")


def _read_line(proc: subprocess.Popen[bytes], timeout: float) -> str:
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout
    line = b""
    while not line.endswith(b"\n"):
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([proc.stdout], [], [], left)[0]:
            raise AssertionError(f"kafpy console printed no address within {timeout} s: {line!r}")
        chunk = os.read(proc.stdout.fileno(), 1)
        if not chunk:
            raise AssertionError(f"kafpy console ended: {line!r}")
        line += chunk
    return line.decode()


def test_an_unreachable_cluster_shows_an_error_page(chromium: Any, tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        nobody = f"127.0.0.1:{s.getsockname()[1]}"
    proc = subprocess.Popen(
        [sys.executable, "-m", "kafpy", "console", "--bootstrap-server", nobody, "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        line = _read_line(proc, 60)
        assert line.startswith("kafpy console serving http://127.0.0.1:")
        assert line.endswith(f"/ for cluster {nobody} (read-only)\n")
        url = line.split()[3]
        chromium.get(f"{url}topics")
        assert by_css(chromium, "h1").text == "Cannot reach the cluster"
        assert by_css(chromium, ".tried").text == (
            f"Tried: Listing the topics (bootstrap servers: {nobody})"
        )
        assert "Traceback" not in chromium.page_source
        screenshot(chromium, tmp_path, "error")
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err.decode()
    assert b"Traceback" not in err
