"""Parsing and validating the kafpy data source's options (no Spark, no broker)."""

from __future__ import annotations

import pytest

from kafpy.spark.options import (
    OffsetSpec,
    OptionError,
    ReadOptions,
    WriteOptions,
    offsets_from_json,
    offsets_to_json,
    parse_duration_ms,
)

BOOT = {"kafka.bootstrap.servers": "localhost:9092"}


def parse(streaming: bool = False, **opts: str) -> ReadOptions:
    return ReadOptions.parse({**BOOT, **opts}, streaming=streaming)


def test_defaults_batch_and_streaming() -> None:
    batch = parse(subscribe="a,b")
    assert batch.subscribe == ("a", "b")
    assert batch.starting == OffsetSpec("earliest") and batch.ending == OffsetSpec("latest")
    assert batch.fail_on_data_loss is True and batch.include_headers is False
    assert batch.max_trigger_delay_ms == 15 * 60 * 1000
    assert parse(True, subscribe="a").starting == OffsetSpec("latest")


def test_options_arrive_lower_cased_and_bootstrap_servers_alias() -> None:
    opts = ReadOptions.parse(
        {"bootstrap.servers": "h:1", "subscribepattern": "t.*", "includeheaders": "TRUE"},
        streaming=False,
    )
    assert opts.client.bootstrap_servers == "h:1"
    assert opts.subscribe_pattern == "t.*" and opts.include_headers is True


@pytest.mark.parametrize(
    "opts",
    [{}, {"subscribe": "a", "assign": '{"a":[0]}'}, {"subscribe": "a", "subscribePattern": "a"}],
)
def test_exactly_one_subscription_strategy(opts: dict[str, str]) -> None:
    with pytest.raises(OptionError, match="Exactly one of the options 'subscribe'"):
        parse(**opts)


def test_missing_bootstrap_servers() -> None:
    with pytest.raises(OptionError, match="'kafka.bootstrap.servers' is required"):
        ReadOptions.parse({"subscribe": "a"}, streaming=False)


def test_malformed_json_names_the_option() -> None:
    with pytest.raises(OptionError, match="Option 'startingOffsets' is not valid JSON"):
        parse(subscribe="a", startingOffsets='{"a": {0: 1}')
    with pytest.raises(OptionError, match="Option 'assign' is not valid JSON"):
        parse(assign="[a]")
    with pytest.raises(OptionError, match="must map to a non-empty list"):
        parse(assign='{"a": 3}')
    with pytest.raises(OptionError, match="partition '0' must be a partition number mapped"):
        parse(subscribe="a", endingOffsets='{"a": {"0": "x"}}')


def test_offset_forms_and_precedence() -> None:
    o = parse(subscribe="t", startingOffsets='{"t":{"0":23,"1":-2}}', endingOffsets="latest")
    assert o.starting == OffsetSpec("offsets", {("t", 0): 23, ("t", 1): -2})
    o = parse(
        subscribe="t",
        startingOffsets="earliest",
        startingOffsetsByTimestamp='{"t":{"0":1000}}',
        startingTimestamp="5",
    )
    assert o.starting == OffsetSpec("timestamp", timestamp=5)
    o = parse(subscribe="t", endingOffsetsByTimestamp='{"t":{"0":1000}}')
    assert o.ending == OffsetSpec("timestamps", {("t", 0): 1000})


def test_batch_and_streaming_restrictions() -> None:
    with pytest.raises(OptionError, match="cannot be 'latest'"):
        parse(subscribe="t", startingOffsets="latest")
    with pytest.raises(OptionError, match="cannot be 'earliest'"):
        parse(subscribe="t", endingOffsets='{"t":{"0":-2}}')
    with pytest.raises(OptionError, match="batch queries only"):
        parse(True, subscribe="t", endingOffsets="latest")
    with pytest.raises(OptionError, match="invalid offsets"):
        parse(subscribe="t", startingOffsets='{"t":{"0":-3}}')


def test_numbers_booleans_durations() -> None:
    o = parse(True, subscribe="t", maxOffsetsPerTrigger="10", minOffsetsPerTrigger="5",
              maxTriggerDelay="30s", minPartitions="4", failOnDataLoss="false")  # fmt: skip
    assert (o.max_offsets_per_trigger, o.min_offsets_per_trigger) == (10, 5)
    assert o.max_trigger_delay_ms == 30000 and o.min_partitions == 4
    assert o.fail_on_data_loss is False
    with pytest.raises(OptionError, match="'maxOffsetsPerTrigger' must be an integer"):
        parse(True, subscribe="t", maxOffsetsPerTrigger="ten")
    with pytest.raises(OptionError, match="'minPartitions' must be at least 1"):
        parse(subscribe="t", minPartitions="0")
    with pytest.raises(OptionError, match="'failOnDataLoss' must be true or false"):
        parse(subscribe="t", failOnDataLoss="yes")
    with pytest.raises(OptionError, match="larger than 'maxOffsetsPerTrigger'"):
        parse(True, subscribe="t", maxOffsetsPerTrigger="1", minOffsetsPerTrigger="5")
    assert parse_duration_ms("500ms", "x") == 500 and parse_duration_ms("2h", "x") == 7200000
    with pytest.raises(OptionError, match="not a duration"):
        parse_duration_ms("soon", "maxTriggerDelay")


def test_forbidden_and_passed_kafka_options() -> None:
    with pytest.raises(OptionError, match="'kafka.auto.offset.reset' is not supported"):
        parse(subscribe="t", **{"kafka.auto.offset.reset": "earliest"})
    o = parse(subscribe="t", **{"kafka.max.partition.fetch.bytes": "1000",
                                "kafka.isolation.level": "read_committed"})  # fmt: skip
    assert o.client.max_partition_fetch_bytes == 1000 and o.client.isolation_level == 1


def test_write_options() -> None:
    w = WriteOptions.parse({**BOOT, "topic": "out"})
    assert w.topic == "out"
    with pytest.raises(OptionError, match="acks=all and idempotence"):
        WriteOptions.parse({**BOOT, "kafka.acks": "1"})


def test_offset_json_is_sorted_and_round_trips() -> None:
    offsets = {("b", 10): 1, ("a", 2): 5, ("b", 2): 7, ("a", 0): 3}
    as_json = offsets_to_json(offsets)
    assert list(as_json) == ["a", "b"] and list(as_json["b"]) == ["2", "10"]
    assert offsets_from_json(as_json) == offsets


def test_write_compression() -> None:
    assert WriteOptions.parse({**BOOT, "kafka.compression.type": "LZ4"}).compression == "lz4"
    with pytest.raises(OptionError, match="'kafka.compression.type' must be none, gzip"):
        WriteOptions.parse({**BOOT, "kafka.compression.type": "brotli"})


def test_kafka_client_numbers_defaults_and_errors() -> None:
    read = parse(subscribe="a")
    assert (read.client.request_timeout_ms, read.client.retries) == (30000, 5)
    assert (read.client.fetch_max_wait_ms, read.client.max_partition_fetch_bytes) == (500, 4194304)
    write = WriteOptions.parse({**BOOT, "kafka.retries": "0"})
    assert (write.client.retries, write.client.retry_backoff_ms) == (0, 100)
    with pytest.raises(OptionError, match=r"'kafka.retries' must be an integer, not 'x'\.$"):
        WriteOptions.parse({**BOOT, "kafka.retries": " x "})
    with pytest.raises(OptionError, match=r"'kafka.fetch.max.wait.ms' must be at least 0, not -1"):
        parse(subscribe="a", **{"kafka.fetch.max.wait.ms": "-1"})


def test_exactly_once_options() -> None:
    assert not WriteOptions.parse({**BOOT, "topic": "t"}).exactly_once
    w = WriteOptions.parse(
        {**BOOT, "topic": "t", "exactlyonce": "TRUE", "transactionalidprefix": " app-1 "}
    )
    assert (w.exactly_once, w.transactional_id_prefix) == (True, "app-1")
    with pytest.raises(OptionError, match="'exactlyOnce' must be true or false"):
        WriteOptions.parse({**BOOT, "topic": "t", "exactlyonce": "yes"})
    with pytest.raises(OptionError, match="'transactionalIdPrefix' is only used with exactlyOnce"):
        WriteOptions.parse({**BOOT, "topic": "t", "transactionalidprefix": "p"})
    with pytest.raises(OptionError, match="'transactionalIdPrefix' is empty"):
        WriteOptions.parse(
            {**BOOT, "topic": "t", "exactlyonce": "true", "transactionalidprefix": ""}
        )
    with pytest.raises(
        OptionError, match="exactlyOnce writes in transactions, which need acks=all"
    ):
        WriteOptions.parse({**BOOT, "topic": "t", "exactlyonce": "true", "kafka.acks": "1"})
    assert WriteOptions.parse(
        {**BOOT, "topic": "t", "exactlyonce": "true", "kafka.acks": "-1"}
    ).exactly_once


def test_write_delivery_timeout_and_producer_retries_are_kafkas_producer_defaults() -> None:
    w = WriteOptions.parse({**BOOT, "topic": "t"})
    assert (w.delivery_timeout_ms, w.producer_retries) == (120000, 2147483647)
    assert w.client.retries == 5  # the client's own requests, as a read's
    w = WriteOptions.parse({**BOOT, "kafka.delivery.timeout.ms": "40000", "kafka.retries": "3"})
    assert (w.delivery_timeout_ms, w.producer_retries, w.client.retries) == (40000, 3, 3)
    slow = {**BOOT, "kafka.request.timeout.ms": "200000", "kafka.linger.ms": "5"}
    assert WriteOptions.parse(slow).delivery_timeout_ms == 200005
    with pytest.raises(OptionError) as e:
        WriteOptions.parse({**slow, "kafka.delivery.timeout.ms": "200004"})
    assert str(e.value) == (
        "Option 'kafka.delivery.timeout.ms': delivery.timeout.ms should be equal to or larger "
        "than linger.ms + request.timeout.ms."
    )
    with pytest.raises(OptionError, match="'kafka.delivery.timeout.ms' must be an integer"):
        WriteOptions.parse({**BOOT, "kafka.delivery.timeout.ms": "soon"})
    with pytest.raises(OptionError, match="'kafka.linger.ms' must be at least 0, not -1"):
        WriteOptions.parse({**BOOT, "kafka.linger.ms": "-1"})
