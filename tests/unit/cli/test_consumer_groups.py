"""The pure parts of `kafpy consumer-groups`: Kafka's printf layout, the --to-datetime and
--by-duration parsers, and the CSV of --export / --from-file."""

from __future__ import annotations

from datetime import timedelta

import click
import pytest

from kafpy.cli.consumer_groups import (
    export_offsets_to_csv,
    kafka_format,
    parse_datetime,
    parse_duration,
    parse_reset_plan,
    parse_states,
)
from kafpy.common.topic_partition import TopicPartition


def test_kafka_format_pads_like_printf_and_never_cuts() -> None:
    printf = "%-5s %-3s %s"  # Kafka's layout, as its format strings write it
    assert kafka_format([5, 3, None], ["ab", "longer", "end"]) == printf % ("ab", "longer", "end")


def test_parse_datetime_zones() -> None:
    assert parse_datetime("1970-01-01T00:00:01.500") == 1500
    assert parse_datetime("1970-01-01T00:00:01.500Z") == 1500
    assert parse_datetime("1970-01-01T01:00:01.000+01:00") == 1000
    with pytest.raises(click.ClickException, match="does not contain a 'T'"):
        parse_datetime("1970-01-01")


def test_parse_duration_iso8601() -> None:
    assert parse_duration("P1DT2H3M4.5S") == timedelta(days=1, hours=2, minutes=3, seconds=4.5)
    assert parse_duration("PT15M") == timedelta(minutes=15)
    assert parse_duration("-PT1S") == timedelta(seconds=-1)
    for bad in ("P", "PT", "15m", "P1H"):
        with pytest.raises(click.ClickException, match="PnDTnHnMnS"):
            parse_duration(bad)


def test_export_and_from_file_round_trip() -> None:
    result = {"g": {TopicPartition("t", 1): 7, TopicPartition("t", 0): 3}}
    single = export_offsets_to_csv(result, single_group=True)
    assert single == "t,0,3\nt,1,7\n"
    assert parse_reset_plan(single, ("g",)) == result
    multi = export_offsets_to_csv(result, single_group=False)
    assert multi == "g,t,0,3\ng,t,1,7\n"
    assert parse_reset_plan(multi, ("g", "h")) == result
    with pytest.raises(click.ClickException, match="topic,partition,offset"):
        parse_reset_plan("t,zero,3\n", ("g", "h"))


def test_parse_states() -> None:
    assert parse_states("stable,Empty") == {"Stable", "Empty"}
    with pytest.raises(click.ClickException, match="Valid states are"):
        parse_states("sleepy")
