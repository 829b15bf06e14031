"""Tests of kafpy's logging: Kafka's line format, log4j-style configuration, hourly rolling."""

from __future__ import annotations

import io
import logging
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kafpy.common.logger import (
    DEFAULT_LOG4J_PROPERTIES,
    TRACE,
    DailyRollingFileHandler,
    LoggingConfigError,
    configure_logging,
    load_logging_config,
    parse_logging_config,
    python_logger_name,
    reset_logging,
)
from kafpy.controller.state_change_logger import StateChangeLogger

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture
def restore_logging() -> Iterator[None]:
    root = logging.getLogger("kafpy")
    saved = (root.handlers[:], root.level, root.propagate)
    try:
        yield
    finally:
        reset_logging()
        root.handlers[:], root.level, root.propagate = saved


def test_shipped_log4j_properties_is_the_default_layout() -> None:
    shipped = load_logging_config(REPO / "config" / "log4j.properties")
    assert shipped == parse_logging_config(DEFAULT_LOG4J_PROPERTIES)
    assert shipped.loggers["kafpy.controller"].level == TRACE
    assert not shipped.loggers["kafpy.log.LogCleaner"].additive


def test_default_layout_routes_lines_to_kafkas_files(tmp_path: Path, restore_logging: None) -> None:
    configure_logging(logs_dir=tmp_path)
    logging.getLogger("kafpy.server.KafkaServer").info("[KafkaServer id=0] started")
    logging.getLogger("kafpy.server.KafkaServer").debug("not at INFO")
    logging.getLogger("kafpy.controller.KafkaController").warning("[Controller id=0] New topics")
    logging.getLogger("kafpy.controller.KafkaController").log(TRACE, "[Controller id=0] traced")
    StateChangeLogger(0, True, 1).error("Partition t-0 should be in one of ...")
    logging.getLogger("kafpy.log.LogCleaner").info("[kafka-log-cleaner-thread-0] Starting")
    reset_logging()
    server = (tmp_path / "server.log").read_text()
    controller = (tmp_path / "controller.log").read_text()
    state_change = (tmp_path / "state-change.log").read_text()
    cleaner = (tmp_path / "log-cleaner.log").read_text()
    assert "] INFO [KafkaServer id=0] started (kafpy.server.KafkaServer)\n" in server
    assert "not at INFO" not in server
    # the controller's, the state machines' and the cleaner's lines stay in their own files
    assert "New topics" not in server and "should be" not in server and "Starting" not in server
    assert "] WARN [Controller id=0] New topics (kafpy.controller.KafkaController)\n" in controller
    assert "] TRACE [Controller id=0] traced (kafpy.controller.KafkaController)\n" in controller
    assert "should be in one of" not in controller
    assert (
        "] ERROR [Controller id=0 epoch=1] Partition t-0 should be in one of ... "
        "(kafpy.state.change.logger)\n"
    ) in state_change
    assert state_change.startswith("[")
    assert "] INFO [kafka-log-cleaner-thread-0] Starting (kafpy.log.LogCleaner)\n" in cleaner


def test_without_a_logs_dir_every_line_reaches_the_console(restore_logging: None) -> None:
    stream = io.StringIO()
    configure_logging(stream=stream)
    logging.getLogger("kafpy.server.KafkaServer").info("[KafkaServer id=0] started")
    logging.getLogger("kafpy.controller.KafkaController").info("[Controller id=0] elected")
    logging.getLogger("kafpy.log.LogCleaner").info("[LogCleaner] Starting")
    reset_logging()
    text = stream.getvalue()
    assert "] INFO [KafkaServer id=0] started (kafpy.server.KafkaServer)\n" in text
    assert "] INFO [Controller id=0] elected (kafpy.controller.KafkaController)\n" in text
    assert "] INFO [LogCleaner] Starting (kafpy.log.LogCleaner)\n" in text


def test_levels_per_logger_from_a_log4j_file(tmp_path: Path, restore_logging: None) -> None:
    f = tmp_path / "log4j.properties"
    f.write_text(
        "log4j.rootLogger=DEBUG, file\n"
        "log4j.appender.file=org.apache.log4j.FileAppender\n"
        f"log4j.appender.file.File={tmp_path}/all.log\n"
        "log4j.logger.kafka.network=WARN\n"
        "log4j.logger.kafpy.log.LogCleaner=OFF\n"
    )
    configure_logging(config=load_logging_config(f))
    logging.getLogger("kafpy.network.SocketServer").info("quiet info")
    logging.getLogger("kafpy.network.SocketServer").warning("loud warning")
    logging.getLogger("kafpy.server.KafkaApis").debug("debug shown")
    logging.getLogger("kafpy.log.LogCleaner").error("cleaner off")
    reset_logging()
    text = (tmp_path / "all.log").read_text()
    assert "quiet info" not in text and "cleaner off" not in text
    assert "] WARN loud warning (kafpy.network.SocketServer)" in text
    assert "] DEBUG debug shown (kafpy.server.KafkaApis)" in text


@pytest.mark.parametrize(
    ("props", "message"),
    [
        ({"log4j.rootLogger": "LOUD, a"}, "Invalid level 'LOUD' for log4j.rootLogger"),
        ({"log4j.rootLogger": "INFO, missing"}, "names appender missing"),
        ({"log4j.appender.a": "org.apache.log4j.net.SyslogAppender"}, "Unsupported appender"),
        (
            {"log4j.appender.a": "org.apache.log4j.DailyRollingFileAppender",
             "log4j.appender.a.File": "x.log", "log4j.appender.a.DatePattern": "yyyy"},
            "DatePattern yyyy",
        ),
    ],
)  # fmt: skip
def test_bad_logging_config_names_the_key(props: dict[str, str], message: str) -> None:
    with pytest.raises(LoggingConfigError, match=message):
        parse_logging_config(props)


def test_kafka_logger_names_map_to_kafpys() -> None:
    assert python_logger_name("kafka") == "kafpy"
    assert python_logger_name("kafka.controller") == "kafpy.controller"
    assert python_logger_name("state.change.logger") == "kafpy.state.change.logger"
    assert python_logger_name("kafpy.log.LogCleaner") == "kafpy.log.LogCleaner"


def test_daily_rolling_rolls_on_the_hour_with_log4js_suffix(tmp_path: Path) -> None:
    handler = DailyRollingFileHandler(tmp_path / "server.log", "'.'yyyy-MM-dd-HH")
    try:
        t = time.mktime((2026, 11, 21, 10, 17, 42, 0, 0, -1))
        assert handler.computeRollover(t) == int(time.mktime((2026, 11, 21, 11, 0, 0, 0, 0, -1)))
        record = logging.LogRecord("kafpy", logging.INFO, __file__, 1, "first hour", None, None)
        handler.emit(record)
        # as if the hour that started at 10:00 on 2026-11-21 had just ended
        handler.rolloverAt = int(time.mktime((2026, 11, 21, 11, 0, 0, 0, 0, -1)))
        handler.emit(logging.LogRecord("kafpy", logging.INFO, __file__, 1, "next", None, None))
    finally:
        handler.close()
    rolled = tmp_path / "server.log.2026-11-21-10"
    assert rolled.read_text() == "first hour\n"
    assert (tmp_path / "server.log").read_text() == "next\n"


def test_daily_pattern_rolls_at_midnight(tmp_path: Path) -> None:
    handler = DailyRollingFileHandler(tmp_path / "server.log", "'.'yyyy-MM-dd")
    try:
        t = time.mktime((2026, 11, 21, 10, 17, 42, 0, 0, -1))
        assert handler.computeRollover(t) == int(time.mktime((2026, 11, 22, 0, 0, 0, 0, 0, -1)))
        assert handler.suffix == "%Y-%m-%d"
    finally:
        handler.close()
