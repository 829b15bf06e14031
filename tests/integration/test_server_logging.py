"""`kafpy server` logs as Kafka's log4j.properties lays it out: the files under LOG_DIR,
levels per logger from log4j.properties beside server.properties or KAFPY_LOG_CONFIG."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fixtures.broker import KafpyBroker

REPO = Path(__file__).resolve().parents[2]


class _BrokerFromFile(KafpyBroker):
    """A broker started from a server.properties file (plus the fixture's overrides)."""

    def __init__(self, data_dir: Path, properties: Path) -> None:
        super().__init__(data_dir)
        self.properties = properties

    def command(self) -> list[str]:
        args = super().command()
        at = args.index("server") + 1
        return [*args[:at], str(self.properties), *args[at:]]


@pytest.fixture
def brokers() -> Iterator[list[KafpyBroker]]:
    started: list[KafpyBroker] = []
    try:
        yield started
    finally:
        for broker in started:
            broker.stop()


def _config_dir(tmp_path: Path, extra_log4j: str = "") -> Path:
    config = tmp_path / "config"
    config.mkdir()
    (config / "server.properties").write_text("broker.id=0\nnum.partitions=1\n")
    shipped = (REPO / "config" / "log4j.properties").read_text()
    (config / "log4j.properties").write_text(shipped + extra_log4j)
    return config


def test_log4j_properties_beside_server_properties_and_kafkas_files(
    tmp_path: Path, brokers: list[KafpyBroker], monkeypatch: pytest.MonkeyPatch
) -> None:
    config = _config_dir(tmp_path, "log4j.logger.kafpy.network=WARN\n")
    logs = tmp_path / "logs"
    monkeypatch.setenv("LOG_DIR", str(logs))
    monkeypatch.delenv("KAFPY_LOG_CONFIG", raising=False)
    broker = _BrokerFromFile(tmp_path / "broker", config / "server.properties")
    brokers.append(broker)
    broker.start()
    broker.stop()
    server = (logs / "server.log").read_text()
    assert "INFO [KafkaServer id=0] started (kafpy.server.KafkaServer)" in server
    assert "Created listener" not in server  # kafpy.network at WARN
    assert "(kafpy.controller" not in server and "(kafpy.log.LogCleaner)" not in server
    assert "elected as the controller" in (logs / "controller.log").read_text()
    assert (logs / "state-change.log").exists()
    assert (
        "Starting the log cleaner (kafpy.log.LogCleaner)" in (logs / "log-cleaner.log").read_text()
    )


def test_kafpy_log_config_names_the_file(
    tmp_path: Path, brokers: list[KafpyBroker], monkeypatch: pytest.MonkeyPatch
) -> None:
    config = _config_dir(tmp_path)
    named = tmp_path / "quiet.properties"
    named.write_text(
        "log4j.rootLogger=WARN, stdout\nlog4j.appender.stdout=org.apache.log4j.ConsoleAppender\n"
    )
    monkeypatch.setenv("KAFPY_LOG_CONFIG", str(named))
    monkeypatch.delenv("LOG_DIR", raising=False)
    broker = _BrokerFromFile(tmp_path / "broker", config / "server.properties")
    brokers.append(broker)
    broker.start()
    broker.stop()
    out = broker.log_path.read_text()
    assert " INFO " not in out


def test_a_bad_logging_config_stops_start_up_with_its_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import subprocess

    named = tmp_path / "bad.properties"
    named.write_text("log4j.rootLogger=LOUD, stdout\n")
    monkeypatch.setenv("KAFPY_LOG_CONFIG", str(named))
    result = subprocess.run(
        [sys.executable, "-m", "kafpy", "server", "--override", f"log.dirs={tmp_path}/data"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 1
    assert f"Invalid logging configuration {named}: Invalid level 'LOUD'" in result.stderr
