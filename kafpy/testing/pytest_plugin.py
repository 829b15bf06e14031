"""The pytest plugin of kafpy.testing (entry point `pytest11`: kafpy).

Fixtures, each created only when a test asks for it:

- `kafka_broker` (session): one KafkaBroker for the whole run (one per pytest-xdist
  worker), in this process unless `--kafpy-mode=subprocess` (or the ini option
  `kafpy_mode`) says otherwise.
- `kafka_bootstrap`: the bootstrap servers string of the test's broker.
- `kafka_topic`: a topic of its own for each test (a unique name, created empty);
  `@pytest.mark.kafpy_topic(partitions=3, config={...})` shapes it.
- `kafka_topic_factory`: makes more such topics: `kafka_topic_factory(partitions=2)`.
- `kafka_cluster`: a KafkaCluster of three in-process brokers for the test alone.
- `kafka_faults`: the fault injector of the test's broker (of `kafka_cluster` when the
  test uses it); faults left over are cleared after the test and a broker it stopped is
  started again.

`@pytest.mark.kafpy_mode("subprocess")` runs a test's `kafka_bootstrap`, `kafka_topic` and
`kafka_faults` against a session broker of that mode. A KafkaBroker or KafkaCluster still
running at the end of the session is reported (and stopped) as a leak, and fails the run.

The module imports nothing of the broker until a fixture is used, so loading the plugin
costs a test run nothing.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from kafpy.testing.broker import KafkaBroker, KafkaCluster
    from kafpy.testing.faults import FaultInjector

_MODES = ("inprocess", "subprocess")
_LEAKS = pytest.StashKey[list[str]]()
_RUNNING_AT_START = pytest.StashKey[set[int]]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("kafpy", "kafpy.testing: real Kafka brokers for tests")
    group.addoption(
        "--kafpy-mode",
        choices=_MODES,
        default=None,
        help="Run the kafka_broker fixture's broker in this process (inprocess, the "
        "default) or as a `kafpy server` child process (subprocess).",
    )
    parser.addini("kafpy_mode", "Default for --kafpy-mode.", default="inprocess")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "kafpy_mode(mode): run this test's kafka_bootstrap, kafka_topic and kafka_faults "
        "against a session broker in 'inprocess' or 'subprocess' mode",
    )
    config.addinivalue_line(
        "markers",
        "kafpy_topic(partitions=1, replication_factor=1, config=None): how the kafka_topic "
        "fixture creates the test's topic",
    )


def _session_mode(config: pytest.Config) -> str:
    mode = config.getoption("--kafpy-mode") or config.getini("kafpy_mode")
    if mode not in _MODES:
        raise pytest.UsageError(
            f"kafpy_mode = {mode!r} in the ini file: use 'inprocess' or 'subprocess'."
        )
    return str(mode)


def _test_mode(request: pytest.FixtureRequest) -> str:
    marker = request.node.get_closest_marker("kafpy_mode")
    if marker is None:
        return _session_mode(request.config)
    mode = marker.args[0] if marker.args else marker.kwargs.get("mode")
    if mode not in _MODES:
        raise pytest.UsageError(
            f"@pytest.mark.kafpy_mode({mode!r}) on {request.node.nodeid}: use "
            "'inprocess' or 'subprocess'."
        )
    return str(mode)


class _BrokerPool:
    """The session's brokers, one per mode, started when first asked for."""

    def __init__(self) -> None:
        self._brokers: dict[str, KafkaBroker] = {}

    def get(self, mode: str) -> KafkaBroker:
        broker = self._brokers.get(mode)
        if broker is None:
            from kafpy.testing.broker import KafkaBroker

            broker = KafkaBroker(mode=mode)  # type: ignore[arg-type]
            broker.start()
            self._brokers[mode] = broker
        return broker

    def close(self) -> None:
        brokers, self._brokers = self._brokers, {}
        for broker in brokers.values():
            broker.stop()


@pytest.fixture(scope="session")
def _kafpy_broker_pool() -> Iterator[_BrokerPool]:
    pool = _BrokerPool()
    try:
        yield pool
    finally:
        pool.close()


@pytest.fixture(scope="session")
def kafka_broker(request: pytest.FixtureRequest, _kafpy_broker_pool: _BrokerPool) -> KafkaBroker:
    """The session's broker (in the mode --kafpy-mode names)."""
    return _kafpy_broker_pool.get(_session_mode(request.config))


@pytest.fixture
def _kafpy_test_broker(request: pytest.FixtureRequest, _kafpy_broker_pool: _BrokerPool) -> Any:
    """The session broker of this test's mode, or the test's own kafka_cluster."""
    if "kafka_cluster" in request.fixturenames:
        return request.getfixturevalue("kafka_cluster")
    return _kafpy_broker_pool.get(_test_mode(request))


@pytest.fixture
def kafka_bootstrap(_kafpy_test_broker: KafkaCluster) -> str:
    """`host:port[,...]` of the test's broker(s)."""
    return _kafpy_test_broker.bootstrap_servers


@pytest.fixture
def kafka_topic_factory(
    request: pytest.FixtureRequest, _kafpy_test_broker: KafkaCluster
) -> Callable[..., str]:
    """Creates topics with names unique to the test: `factory(partitions=1,
    replication_factor=1, config=None)` returns the new topic's name."""
    stem = re.sub(r"[^a-zA-Z0-9._-]+", "-", request.node.name).strip("-.")[:120] or "test"

    def create(
        partitions: int = 1,
        replication_factor: int = 1,
        config: Mapping[str, str] | None = None,
    ) -> str:
        name = f"{stem}-{uuid.uuid4().hex[:8]}"
        _kafpy_test_broker.create_topic(name, partitions, replication_factor, config)
        return name

    return create


@pytest.fixture
def kafka_topic(request: pytest.FixtureRequest, kafka_topic_factory: Callable[..., str]) -> str:
    """A new, empty topic for this test alone (see the kafpy_topic marker)."""
    marker = request.node.get_closest_marker("kafpy_topic")
    return kafka_topic_factory(**(marker.kwargs if marker is not None else {}))


@pytest.fixture
def kafka_cluster() -> Iterator[KafkaCluster]:
    """Three in-process brokers on one embedded metadata store, for this test alone."""
    from kafpy.testing.broker import KafkaCluster

    with KafkaCluster(3) as cluster:
        yield cluster


@pytest.fixture
def kafka_faults(_kafpy_test_broker: KafkaCluster) -> Iterator[FaultInjector]:
    """The fault injector of the test's broker; cleared after the test, and a session
    broker the test stopped is started again."""
    faults = _kafpy_test_broker.faults
    try:
        yield faults
    finally:
        faults.clear()
        for broker_id in _kafpy_test_broker.stopped_broker_ids():
            _kafpy_test_broker.start_broker(broker_id)


def pytest_runtest_setup(item: pytest.Item) -> None:
    marker = item.get_closest_marker("kafpy_mode")
    fixtures = getattr(item, "fixturenames", ())
    if marker is not None and "kafka_broker" in fixtures:
        wanted = marker.args[0] if marker.args else marker.kwargs.get("mode")
        if wanted != _session_mode(item.config):
            raise pytest.UsageError(
                f"{item.nodeid} is marked kafpy_mode({wanted!r}) but uses the session-wide "
                f"kafka_broker, which runs in {_session_mode(item.config)!r} mode: use "
                "kafka_bootstrap, kafka_topic or kafka_faults, or run with "
                f"--kafpy-mode={wanted}."
            )


def pytest_sessionstart(session: pytest.Session) -> None:
    import sys

    # brokers already running belong to whoever started this session (a test driving
    # pytest in-process): not this session's leaks, and not this session's to stop
    module = sys.modules.get("kafpy.testing.broker")
    running = module.running_clusters() if module is not None else []
    session.config.stash[_RUNNING_AT_START] = {id(c) for c in running}


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    import sys

    module = sys.modules.get("kafpy.testing.broker")
    if module is None:
        return  # no broker was ever started
    before = session.config.stash.get(_RUNNING_AT_START, set())
    leaked = [c for c in module.running_clusters() if id(c) not in before]
    if not leaked:
        return
    session.config.stash[_LEAKS] = [repr(c) for c in leaked]
    for cluster in leaked:
        cluster.stop()
    session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    leaks = config.stash.get(_LEAKS, [])
    if leaks:
        terminalreporter.section("kafpy: brokers left running", sep="=", red=True)
        for leak in leaks:
            terminalreporter.line(
                f"{leak} was still running at the end of the session (stopped now): stop it "
                "(use it as a context manager, or call stop()) in the test that started it."
            )
