"""Tests of kafpy.testing.pytest_plugin through pytester: the fixtures in a test suite of
their own, isolation between its tests, faults firing as configured, leaks reported, and
a plugin that costs nothing when unused."""

from __future__ import annotations

import socket
import tempfile
import threading
import tomllib
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

PLUGIN = ["-p", "kafpy.testing.pytest_plugin"]


@pytest.fixture(autouse=True)
def _only_this_plugin(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # once kafpy is installed its entry point would load the plugin a second time
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    # brokers' temporary dirs go to a dir of this test's own (in this process and in
    # pytester's subprocesses), so that other test processes' dirs do not count
    own = tmp_path / "tmp"
    own.mkdir()
    monkeypatch.setenv("TMPDIR", str(own))
    monkeypatch.setattr(tempfile, "tempdir", str(own))


def _kafpy_temp_dirs() -> set[Path]:
    return set(Path(tempfile.gettempdir()).glob("kafpy-testing-*"))


def test_the_entry_point_names_the_plugin() -> None:
    pyproject = tomllib.loads((Path(__file__).parents[3] / "pyproject.toml").read_text())
    entry = pyproject["project"]["entry-points"]["pytest11"]
    assert entry == {"kafpy": "kafpy.testing.pytest_plugin"}


def test_fixtures_isolate_topics_and_leave_nothing_behind(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import pytest

        SEEN = []

        def test_one(kafka_broker, kafka_topic, kafka_bootstrap):
            assert kafka_bootstrap == kafka_broker.bootstrap_servers
            open("bootstrap.txt", "w").write(kafka_bootstrap)
            kafka_broker.produce(kafka_topic, [b"one"])
            assert [r.value for r in kafka_broker.consume(kafka_topic, 1)] == [b"one"]
            SEEN.append((kafka_broker, kafka_topic))

        @pytest.mark.kafpy_topic(partitions=3)
        def test_two(kafka_broker, kafka_topic, kafka_topic_factory):
            other = kafka_topic_factory()
            assert len({kafka_topic, other, SEEN[0][1]}) == 3  # unique names
            assert kafka_broker is SEEN[0][0]  # one broker for the session
            assert kafka_topic.startswith("test_two-")
            kafka_broker.produce(kafka_topic, [b"two"], partition=2)
            assert [r.value for r in kafka_broker.consume(kafka_topic, 1)] == [b"two"]
        """
    )
    threads_before, dirs_before = set(threading.enumerate()), _kafpy_temp_dirs()
    result = pytester.runpytest(*PLUGIN)
    result.assert_outcomes(passed=2)
    assert result.ret == 0  # and no leak reported: the session broker was stopped
    assert set(threading.enumerate()) == threads_before
    assert _kafpy_temp_dirs() == dirs_before
    host, _, port = (pytester.path / "bootstrap.txt").read_text().rpartition(":")
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection((host, int(port)), timeout=5).close()


def test_faults_fire_the_configured_number_of_times(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        def test_fail_next(kafka_broker, kafka_topic, kafka_faults):
            kafka_faults.fail_next("Produce", "NOT_LEADER_OR_FOLLOWER", count=3)
            kafka_broker.produce(kafka_topic, [b"x"])  # kafpy's client retries
            assert kafka_faults.fired("Produce") == 3
            kafka_broker.produce(kafka_topic, [b"y"])
            assert kafka_faults.fired("Produce") == 3
            assert [r.value for r in kafka_broker.consume(kafka_topic, 2)] == [b"x", b"y"]
            kafka_faults.fail_next("Produce", "NOT_LEADER_OR_FOLLOWER", count=99)

        def test_leftover_faults_are_cleared(kafka_broker, kafka_topic, kafka_faults):
            kafka_broker.produce(kafka_topic, [b"z"])
            assert kafka_faults.fired("Produce") == 0

        def test_stop_broker(kafka_broker, kafka_faults):
            kafka_faults.stop_broker(0)

        def test_stopped_broker_is_started_again(kafka_broker, kafka_topic):
            kafka_broker.produce(kafka_topic, [b"back"])
        """
    )
    result = pytester.runpytest(*PLUGIN)
    result.assert_outcomes(passed=4)


def test_kafka_cluster_fixture(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.kafpy_topic(replication_factor=3)
        def test_cluster(kafka_cluster, kafka_topic, kafka_faults, kafka_bootstrap):
            assert kafka_cluster.broker_ids == [0, 1, 2]
            assert kafka_bootstrap.count(",") == 2
            assert kafka_faults is kafka_cluster.faults
            kafka_cluster.produce(kafka_topic, [b"a"])
            kafka_faults.stop_broker(1)
            kafka_faults.stop_broker(2)
            assert [r.value for r in kafka_cluster.consume(kafka_topic, 1)] == [b"a"]
        """
    )
    pytester.runpytest(*PLUGIN).assert_outcomes(passed=1)


def test_subprocess_mode_by_marker_and_option(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.kafpy_mode("subprocess")
        def test_marked(kafka_bootstrap, kafka_faults):
            # the faults reach the broker in its child process
            kafka_faults.delay("Metadata", 1, count=1)
            assert kafka_faults.fired("Metadata") == 0

        def test_session_broker(kafka_broker):
            assert kafka_broker.mode == "subprocess"
            assert kafka_broker.server is not None
        """
    )
    pytester.runpytest(*PLUGIN, "--kafpy-mode=subprocess").assert_outcomes(passed=2)


def test_a_mode_marker_the_session_broker_cannot_honour_is_refused(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.kafpy_mode("subprocess")
        def test_marked(kafka_broker):
            pass
        """
    )
    result = pytester.runpytest(*PLUGIN)
    assert result.ret != 0
    result.stdout.fnmatch_lines(["*marked kafpy_mode('subprocess') but uses the session-wide*"])


def test_a_leaked_broker_is_reported_at_session_end(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        from kafpy.testing import KafkaBroker

        def test_leaks():
            KafkaBroker().start()
        """
    )
    dirs_before = _kafpy_temp_dirs()
    # in a process of its own: an in-process run would share the broker registry with the
    # runs of the tests before it
    result = pytester.runpytest_subprocess(*PLUGIN)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        ["*kafpy: brokers left running*", "*<KafkaBroker of 1 (inprocess) on 127.0.0.1:*"]
    )
    assert _kafpy_temp_dirs() == dirs_before  # stopped and removed all the same


def test_the_plugin_imports_no_broker_when_unused(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import sys

        def test_light():
            assert "kafpy.testing.pytest_plugin" in sys.modules
            assert "kafpy.server" not in sys.modules
            assert "kafpy.testing.broker" not in sys.modules
        """
    )
    result = pytester.runpytest_subprocess(*PLUGIN)
    result.assert_outcomes(passed=1)


def test_one_broker_per_xdist_worker(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import os, time

        import pytest
        from confluent_kafka import Producer

        @pytest.mark.parametrize("n", range(4))
        def test_each(kafka_broker, kafka_topic, kafka_bootstrap, n):
            p = Producer({"bootstrap.servers": kafka_bootstrap})
            p.produce(kafka_topic, b"v")
            assert p.flush(10) == 0
            assert len(kafka_broker.consume(kafka_topic, 1, timeout=10)) == 1
            worker = os.environ["PYTEST_XDIST_WORKER"]
            with open(f"seen-{worker}-{n}.txt", "w") as f:
                f.write(kafka_bootstrap)
            time.sleep(0.5)  # so that both workers take tests
        """
    )
    dirs_before = _kafpy_temp_dirs()
    result = pytester.runpytest_subprocess(*PLUGIN, "-p", "xdist.plugin", "-n", "2")
    result.assert_outcomes(passed=4)
    seen: dict[str, set[str]] = {}
    for f in pytester.path.glob("seen-*.txt"):
        seen.setdefault(f.name.split("-")[1], set()).add(f.read_text())
    assert sorted(seen) == ["gw0", "gw1"]
    # one broker per worker: each worker always saw the same one, and not the other's
    assert all(len(bootstraps) == 1 for bootstraps in seen.values())
    assert seen["gw0"] != seen["gw1"]
    assert _kafpy_temp_dirs() == dirs_before


def test_async_tests_under_pytest_asyncio(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import pytest
        from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

        from kafpy.testing import KafkaBroker

        @pytest.mark.asyncio
        async def test_session_broker_from_async(kafka_bootstrap, kafka_topic):
            producer = AIOKafkaProducer(bootstrap_servers=kafka_bootstrap)
            await producer.start()
            try:
                await producer.send_and_wait(kafka_topic, b"hello")
            finally:
                await producer.stop()
            consumer = AIOKafkaConsumer(
                kafka_topic, bootstrap_servers=kafka_bootstrap, auto_offset_reset="earliest"
            )
            await consumer.start()
            try:
                record = await consumer.getone()
            finally:
                await consumer.stop()
            assert record.value == b"hello"

        @pytest.mark.asyncio
        async def test_async_context_manager():
            async with KafkaBroker() as broker:
                broker.create_topic("t", partitions=2)
                producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap_servers)
                await producer.start()
                try:
                    await producer.send_and_wait("t", b"x", partition=1)
                finally:
                    await producer.stop()
                assert [r.value for r in broker.consume("t", 1, timeout=10)] == [b"x"]
        """
    )
    dirs_before = _kafpy_temp_dirs()
    result = pytester.runpytest_subprocess(*PLUGIN, "-p", "pytest_asyncio.plugin")
    result.assert_outcomes(passed=2)
    assert _kafpy_temp_dirs() == dirs_before


def test_a_broker_running_before_the_session_is_not_its_leak(pytester: pytest.Pytester) -> None:
    from kafpy.testing import KafkaBroker

    pytester.makepyfile("def test_nothing():\n    pass\n")
    with KafkaBroker() as outer:
        result = pytester.runpytest(*PLUGIN)
        result.assert_outcomes(passed=1)
        assert result.ret == 0
        assert "brokers left running" not in result.stdout.str()
        outer.create_topic("still-served")  # not stopped by the inner session
