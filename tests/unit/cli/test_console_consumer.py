"""`kafpy console-consumer`: option handling, formatting, consuming from a FakeBroker."""

from __future__ import annotations

import asyncio
import io
from typing import Any

import pytest
from click.testing import CliRunner

from kafpy.cli.command_line_utils import OneLineError
from kafpy.cli.console_consumer import (
    DefaultMessageFormatter,
    RecordPrinter,
    StartingPoint,
    command,
    consume,
    starting_point,
)
from kafpy.client.fetcher import ConsumerRecord
from kafpy.common.errors import UnknownTopicOrPartitionError
from kafpy.records.record_batch import TimestampType
from tests.unit.client.fake_broker import FakeLog

RECORD = ConsumerRecord("t", 1, 5, 1234, TimestampType.CREATE_TIME, b"k", b"v")


def one_line_error(*args: str) -> str:
    result = CliRunner().invoke(command, list(args))
    assert result.exit_code == 1, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


def test_option_errors() -> None:
    assert "bootstrap-server" in one_line_error("--topic", "t")
    assert "Exactly one of whitelist/topic" in one_line_error("--bootstrap-server", "h:1")
    assert "Exactly one of whitelist/topic" in one_line_error(
        "--bootstrap-server", "h:1", "--topic", "t", "--whitelist", "t.*"
    )
    assert "Invalid whitelist '('" in one_line_error(
        "--bootstrap-server", "h:1", "--whitelist", "("
    )
    base = ["--bootstrap-server", "h:1", "--topic", "t"]
    assert "partition is required" in one_line_error(*base, "--offset", "3")
    assert "cannot be specified together" in one_line_error(
        *base, "--offset", "3", "--partition", "0", "--from-beginning"
    )
    assert "'-3' is incorrect" in one_line_error(*base, "--offset", "-3", "--partition", "0")
    assert "group and partition cannot" in one_line_error(*base, "--group", "g", "--partition", "0")
    assert "Detected group ids: 'g', 'h'" in one_line_error(
        *base, "--group", "g", "--consumer-property", "group.id=h"
    )
    assert "--from-beginning and 'auto.offset.reset=latest'" in one_line_error(
        *base, "--group", "g", "--from-beginning", "--consumer-property", "auto.offset.reset=latest"
    )
    assert "formatter 'kafka.tools.LoggingMessageFormatter' is not supported" in one_line_error(
        *base, "--formatter", "kafka.tools.LoggingMessageFormatter"
    )
    assert "isolation.level" in one_line_error(
        *base, "--consumer-property", "isolation.level=dirty"
    )
    assert "HOST:PORT" in one_line_error("--bootstrap-server", "x", "--topic", "t")
    # a bad KEY=VALUE points at this command's help, not the producer's
    for option in ("--property", "--consumer-property"):
        error = one_line_error(*base, option, "print.key")
        assert f"Invalid {option} 'print.key': expected KEY=VALUE" in error
        assert error.endswith("(see 'kafpy console-consumer --help')")


def test_starting_point() -> None:
    assert starting_point(None, False, None) == StartingPoint()
    assert starting_point(None, True, 2) == StartingPoint(earliest=True)
    assert starting_point("earliest", False, 0) == StartingPoint(earliest=True)
    assert starting_point("Latest", False, 0) == StartingPoint()
    assert starting_point("17", False, 0) == StartingPoint(offset=17)
    with pytest.raises(OneLineError, match="incorrect"):
        starting_point("soon", False, 0)


def test_formatter() -> None:
    assert DefaultMessageFormatter().format(RECORD) == b"v\n"
    full = DefaultMessageFormatter.from_properties(
        {
            "print.key": "true",
            "print.timestamp": "true",
            "print.partition": "true",
            "print.offset": "true",
            "key.separator": ":",
        }
    )
    assert full.format(RECORD) == b"CreateTime:1234:Partition:1:Offset:5:k:v\n"
    nulls = DefaultMessageFormatter(print_key=True, print_value=True, line_separator=b"|")
    empty = ConsumerRecord("t", 0, 0, 0, TimestampType.LOG_APPEND_TIME, None, None)
    assert nulls.format(empty) == b"null\tnull|"
    stamped = DefaultMessageFormatter(print_timestamp=True, print_value=False)
    assert stamped.format(empty) == b"LogAppendTime:0\n"


def run(coro: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coro, 30))


def test_consume_from_beginning_latest_offset_and_partition() -> None:
    async def scenario() -> None:
        async with FakeLog() as log, log.client() as client:
            log.append(0, [b"a", b"b"])
            log.append(1, [b"c"])
            out = io.BytesIO()
            printer = RecordPrinter(DefaultMessageFormatter(), out)
            n = await consume(
                client,
                "t",
                None,
                StartingPoint(earliest=True),
                printer,
                max_messages=3,
                timeout_ms=None,
                max_wait_ms=0,
            )
            assert n == 3 and sorted(out.getvalue().splitlines()) == [b"a", b"b", b"c"]
            out.seek(0), out.truncate()
            n = await consume(
                client,
                "t",
                0,
                StartingPoint(offset=1),
                printer,
                max_messages=None,
                timeout_ms=0,
                max_wait_ms=0,
            )
            assert n == 0  # a zero timeout ends at once
            n = await consume(
                client,
                "t",
                0,
                StartingPoint(offset=1),
                printer,
                max_messages=1,
                timeout_ms=None,
                max_wait_ms=0,
            )
            assert n == 1 and out.getvalue() == b"b\n"
            assert printer.count == 4
            with pytest.raises(UnknownTopicOrPartitionError, match="Partition 7 does not exist"):
                await consume(
                    client,
                    "t",
                    7,
                    StartingPoint(),
                    printer,
                    max_messages=1,
                    timeout_ms=None,
                    max_wait_ms=0,
                )
            with pytest.raises(UnknownTopicOrPartitionError, match="Topic nope does not exist"):
                await consume(
                    client,
                    "nope",
                    None,
                    StartingPoint(),
                    printer,
                    max_messages=1,
                    timeout_ms=None,
                    max_wait_ms=0,
                )

    run(scenario())


def test_max_messages_stops_mid_fetch() -> None:
    async def scenario() -> None:
        async with FakeLog() as log, log.client() as client:
            log.append(0, [b"1", b"2", b"3"])
            out = io.BytesIO()
            printer = RecordPrinter(DefaultMessageFormatter(), out)
            n = await consume(
                client,
                "t",
                0,
                StartingPoint(earliest=True),
                printer,
                max_messages=2,
                timeout_ms=None,
                max_wait_ms=0,
            )
            assert n == 2 and out.getvalue() == b"1\n2\n"

    run(scenario())


def test_group_settings_read_consumer_properties_with_kafkas_defaults() -> None:
    from kafpy.cli.console_consumer import group_settings

    settings = group_settings("g", {"session.timeout.ms": "6000"}, {"enable.auto.commit": "False"})
    assert settings is not None
    assert (settings.session_timeout_ms, settings.heartbeat_interval_ms) == (6000, 3000)
    assert settings.auto_commit_interval_ms == 5000 and settings.enable_auto_commit is False
    with pytest.raises(
        OneLineError,
        match="Invalid value '3s' for consumer property heartbeat.interval.ms: expected a number.",
    ):
        group_settings("g", {}, {"heartbeat.interval.ms": "3s"})
