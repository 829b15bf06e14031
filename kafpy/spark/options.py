"""The options of the `kafpy` data source, named as Spark's Kafka connector names them.

Spark hands options over lower-cased and as strings; `ReadOptions.parse` and
`WriteOptions.parse` turn them into typed values and reject bad ones with a sentence
naming the option and what it accepts.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kafpy.client.client_config import ClientConfig, ClientConfigError, Expected
from kafpy.client.consumer_config import ConsumerConfig
from kafpy.client.kafka_client import parse_bootstrap_servers
from kafpy.client.producer import DEFAULT_DELIVERY_TIMEOUT_MS
from kafpy.client.producer_config import ProducerConfig
from kafpy.common.config_def import INT_MAX
from kafpy.spark.errors import OptionError
from kafpy.spark.kafka_params import Role, check_kafka_params, security_params

EARLIEST = -2
LATEST = -1


@dataclass(frozen=True)
class OffsetSpec:
    """Where a read starts or ends: a keyword, per-partition offsets or timestamps.

    kind is "earliest", "latest", "offsets" (`offsets`: {(topic, partition): offset} with
    -2 earliest, -1 latest), "timestamp" (one `timestamp` in ms for every partition) or
    "timestamps" ({(topic, partition): ms})."""

    kind: str
    offsets: dict[tuple[str, int], int] = field(default_factory=dict)
    timestamp: int = 0

    @property
    def by_time(self) -> bool:
        return self.kind in ("timestamp", "timestamps")


@dataclass(frozen=True)
class ClientSettings:
    """What the reader and writer pass to kafpy's client (from `kafka.*` options)."""

    bootstrap_servers: str
    client_id: str = "kafpy-spark"
    request_timeout_ms: int = 30000
    retries: int = 5
    retry_backoff_ms: int = 100
    fetch_max_wait_ms: int = 500
    fetch_max_bytes: int = 52428800
    max_partition_fetch_bytes: int = 4194304
    isolation_level: int = 0
    # security.protocol and ssl.* (Kafka's client keys), turned into a ClientSecurity by
    # the process that connects
    security: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class ValueDecoding:
    """`valueFormat=confluent-avro`: values in Confluent's Avro framing, decoded into the
    value column with the reader schema of `subject` (`valueSubject`, else
    `<topic>-value`) at the registry `schemaRegistry.url`. `mode` is FAILFAST (a value
    that cannot be decoded fails the query) or PERMISSIVE (it is read as null), as
    Spark's from_avro takes it."""

    registry_url: str
    subject: str
    mode: str = "FAILFAST"


@dataclass(frozen=True)
class ReadOptions:
    """Parsed read options (batch and streaming)."""

    client: ClientSettings
    subscribe: tuple[str, ...] | None
    subscribe_pattern: str | None
    assign: dict[str, tuple[int, ...]] | None
    starting: OffsetSpec
    ending: OffsetSpec
    starting_by_timestamp_strategy: str
    fail_on_data_loss: bool
    max_offsets_per_trigger: int | None
    min_offsets_per_trigger: int | None
    max_trigger_delay_ms: int
    min_partitions: int | None
    include_headers: bool
    commit_offsets_to_group: str | None
    value_decoding: ValueDecoding | None = None

    @classmethod
    def parse(cls, raw: Mapping[str, str], *, streaming: bool) -> ReadOptions:
        opts = _lower(raw)
        client = _client_settings(opts, "read")
        strategies = [k for k in ("subscribe", "subscribepattern", "assign") if k in opts]
        if len(strategies) != 1:
            named = ", ".join(strategies) if strategies else "none"
            raise OptionError(
                "Exactly one of the options 'subscribe', 'subscribePattern' or 'assign' must "
                f"be set to say which topics to read; got {named}."
            )
        subscribe = pattern = assign = None
        if "subscribe" in opts:
            topics = tuple(t.strip() for t in opts["subscribe"].split(",") if t.strip())
            if not topics:
                raise OptionError(
                    "Option 'subscribe' names no topic: give a comma-separated list of topics."
                )
            subscribe = topics
        elif "subscribepattern" in opts:
            pattern = opts["subscribepattern"]
            try:
                re.compile(pattern)
            except re.error as e:
                raise OptionError(
                    f"Option 'subscribePattern' is not a valid regular expression ({e}): "
                    f"{pattern!r}."
                ) from None
        else:
            assign = _parse_assign(opts["assign"])

        starting = _offset_spec(opts, "starting", default="latest" if streaming else "earliest")
        if streaming and any(
            k in opts for k in ("endingoffsets", "endingoffsetsbytimestamp", "endingtimestamp")
        ):
            raise OptionError(
                "Options 'endingOffsets', 'endingOffsetsByTimestamp' and 'endingTimestamp' "
                "are for batch queries only; a streaming query reads until it is stopped."
            )
        ending = _offset_spec(opts, "ending", default="latest")
        if not streaming:
            if starting.kind == "latest" or (
                starting.kind == "offsets" and LATEST in starting.offsets.values()
            ):
                raise OptionError(
                    "Option 'startingOffsets' cannot be 'latest' (or -1 for a partition) in a "
                    "batch query: it would always read nothing. Use 'earliest' or offsets."
                )
            if ending.kind == "earliest" or (
                ending.kind == "offsets" and EARLIEST in ending.offsets.values()
            ):
                raise OptionError(
                    "Option 'endingOffsets' cannot be 'earliest' (or -2 for a partition) in a "
                    "batch query: it would always read nothing. Use 'latest' or offsets."
                )
        strategy = opts.get("startingoffsetsbytimestampstrategy", "error").strip().lower()
        if strategy not in ("error", "latest"):
            raise OptionError(
                "Option 'startingOffsetsByTimestampStrategy' must be 'error' or 'latest', "
                f"not {opts['startingoffsetsbytimestampstrategy']!r}."
            )
        max_per = _int_option(opts, "maxoffsetspertrigger", "maxOffsetsPerTrigger", minimum=1)
        min_per = _int_option(opts, "minoffsetspertrigger", "minOffsetsPerTrigger", minimum=1)
        if max_per is not None and min_per is not None and min_per > max_per:
            raise OptionError(
                f"Option 'minOffsetsPerTrigger' ({min_per}) is larger than "
                f"'maxOffsetsPerTrigger' ({max_per}); make it smaller or equal."
            )
        delay = parse_duration_ms(opts.get("maxtriggerdelay", "15m"), "maxTriggerDelay")
        group = opts.get("commitoffsetstogroup")
        if group is not None and not group.strip():
            raise OptionError("Option 'commitOffsetsToGroup' must name a consumer group.")
        return cls(
            client=client,
            subscribe=subscribe,
            subscribe_pattern=pattern,
            assign=assign,
            starting=starting,
            ending=ending,
            starting_by_timestamp_strategy=strategy,
            fail_on_data_loss=_bool_option(opts, "failondataloss", "failOnDataLoss", True),
            max_offsets_per_trigger=max_per,
            min_offsets_per_trigger=min_per,
            max_trigger_delay_ms=delay,
            min_partitions=_int_option(opts, "minpartitions", "minPartitions", minimum=1),
            include_headers=_bool_option(opts, "includeheaders", "includeHeaders", False),
            commit_offsets_to_group=group.strip() if group else None,
            value_decoding=value_decoding(raw),
        )


@dataclass(frozen=True)
class WriteOptions:
    """Parsed write options: where to connect, the default topic, and whether to write
    exactly once (`exactlyOnce`, with `transactionalIdPrefix`; see kafpy.spark.exactly_once)."""

    client: ClientSettings
    topic: str | None
    batch_records: int = 16384
    compression: str = "none"
    exactly_once: bool = False
    transactional_id_prefix: str | None = None
    # the producer's delivery.timeout.ms and retries, Kafka's producer defaults as Spark's
    # sink has them (retries bounded by the timeout); the client's own requests keep
    # `client.retries`
    delivery_timeout_ms: int = DEFAULT_DELIVERY_TIMEOUT_MS
    producer_retries: int = INT_MAX

    @classmethod
    def parse(cls, raw: Mapping[str, str]) -> WriteOptions:
        opts = _lower(raw)
        client = _client_settings(opts, "write")
        exactly_once = _bool_option(opts, "exactlyonce", "exactlyOnce", False)
        for key in ("kafka.acks", "kafka.enable.idempotence"):
            if key in opts and opts[key].strip().lower() not in ("all", "-1", "true"):
                why = (
                    "exactlyOnce writes in transactions, which need acks=all and idempotence"
                    if exactly_once
                    else "kafpy always writes with acks=all and idempotence, so that a "
                    "retried request is not duplicated"
                )
                raise OptionError(f"Option '{key}' = {opts[key]!r} is not supported: {why}.")
        prefix = opts.get("transactionalidprefix")
        if prefix is not None:
            prefix = prefix.strip()
            if not exactly_once:
                raise OptionError(
                    "Option 'transactionalIdPrefix' is only used with exactlyOnce=true: set "
                    ".option('exactlyOnce', 'true'), or leave it out."
                )
            if not prefix:
                raise OptionError(
                    "Option 'transactionalIdPrefix' is empty: name the prefix of the sink's "
                    "transactional ids, unique to this query, or leave it out."
                )
        topic = opts.get("topic")
        if topic is not None and not topic.strip():
            raise OptionError("Option 'topic' is empty: name the topic to write to.")
        batch = _int_option(opts, "batchrecords", "batchRecords", minimum=1)
        compression = opts.get("kafka.compression.type", "none").strip().lower()
        if compression not in ("none", "gzip", "snappy", "lz4", "zstd"):
            raise OptionError(
                f"Option 'kafka.compression.type' must be none, gzip, snappy, lz4 or zstd, not "
                f"{opts['kafka.compression.type']!r}."
            )
        return cls(
            client=client,
            topic=topic.strip() if topic else None,
            batch_records=batch or 16384,
            compression=compression,
            exactly_once=exactly_once,
            transactional_id_prefix=prefix,
            delivery_timeout_ms=_delivery_timeout_ms(opts, client.request_timeout_ms),
            producer_retries=client.retries if "kafka.retries" in opts else INT_MAX,
        )


def _delivery_timeout_ms(opts: dict[str, str], request_timeout_ms: int) -> int:
    """`kafka.delivery.timeout.ms`, checked against linger.ms + request.timeout.ms as
    Kafka's producer does."""
    params = {k[len("kafka.") :]: v for k, v in opts.items() if k.startswith("kafka.")}
    config = ProducerConfig(params)
    try:
        linger_ms = config.get_int("linger.ms", minimum=0)
        return config.delivery_timeout_ms(linger_ms, request_timeout_ms)
    except ClientConfigError as e:
        if e.expected is Expected.NUMBER:
            raise OptionError(
                f"Option 'kafka.{e.key}' must be an integer, not {e.value.strip()!r}."
            ) from None
        if e.expected is Expected.AT_LEAST:
            raise OptionError(
                f"Option 'kafka.{e.key}' must be at least {e.minimum}, not {e.parsed}."
            ) from None
        raise OptionError(f"Option 'kafka.{e.key}': {e}.") from None


def parse_duration_ms(value: str, name: str) -> int:
    """A Spark-style duration ("15m", "30s", "500ms", "1h", or a number of ms) in ms."""
    m = re.fullmatch(r"\s*(\d+)\s*(ms|s|m|min|h|d)?\s*", value.lower())
    if not m:
        raise OptionError(
            f"Option '{name}' is not a duration: {value!r}; use e.g. '500ms', '30s', '15m'."
        )
    unit = {None: 1, "ms": 1, "s": 1000, "m": 60000, "min": 60000, "h": 3600000, "d": 86400000}
    return int(m.group(1)) * unit[m.group(2)]


def offsets_to_json(offsets: Mapping[tuple[str, int], int]) -> dict[str, dict[str, int]]:
    """{(topic, partition): offset} as Spark's offset JSON object, keys in sorted order
    (topics by name, partitions by number) so equal offsets always serialize equally."""
    result: dict[str, dict[str, int]] = {}
    for topic, partition in sorted(offsets):
        result.setdefault(topic, {})[str(partition)] = offsets[(topic, partition)]
    return result


def offsets_from_json(value: Any, name: str = "offsets") -> dict[tuple[str, int], int]:
    """Spark's offset JSON ({"topic": {"0": 23}}, already loaded or as text) as a dict."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as e:
            raise OptionError(
                f"Option '{name}' is not valid JSON ({e.msg} at character {e.pos}); expected "
                'an object like {"topic":{"0":23,"1":-2}} or \'earliest\'/\'latest\'.'
            ) from None
    if not isinstance(value, dict) or not value:
        raise OptionError(
            f"Option '{name}' must be a JSON object of topics to partition offsets, like "
            '{"topic":{"0":23,"1":-2}}.'
        )
    result: dict[tuple[str, int], int] = {}
    for topic, partitions in value.items():
        if not isinstance(partitions, dict):
            raise OptionError(
                f"Option '{name}': topic {topic!r} must map to an object of partition numbers "
                f'to offsets, like {{"0": 23}}, not {json.dumps(partitions)}.'
            )
        for p, offset in partitions.items():
            if not str(p).isdigit() or isinstance(offset, bool) or not isinstance(offset, int):
                raise OptionError(
                    f"Option '{name}': topic {topic!r} partition {p!r} must be a partition "
                    f"number mapped to an integer, not {json.dumps(offset)}."
                )
            result[(topic, int(p))] = offset
    return result


# --- helpers ---------------------------------------------------------------


def include_headers(raw: Mapping[str, str]) -> bool:
    """The `includeHeaders` option (any case) of a query's options, False when unset."""
    return _bool_option(_lower(raw), "includeheaders", "includeHeaders", False)


def value_decoding(raw: Mapping[str, str]) -> ValueDecoding | None:
    """The `valueFormat` option (binary, the default, or confluent-avro) with
    `schemaRegistry.url`, `valueSubject` and `mode`."""
    opts = _lower(raw)
    fmt = opts.get("valueformat", "binary").strip().lower()
    if fmt == "binary":
        return None
    if fmt != "confluent-avro":
        raise OptionError(
            f"Option 'valueFormat' must be binary or confluent-avro, not {opts['valueformat']!r}."
        )
    url = opts.get("schemaregistry.url", "").strip()
    if not url:
        raise OptionError(
            "Option 'valueFormat' = confluent-avro needs the option 'schemaRegistry.url' "
            "(the schema registry, http://host:port)."
        )
    subject = opts.get("valuesubject", "").strip()
    if not subject:
        topics = [t.strip() for t in opts.get("subscribe", "").split(",") if t.strip()]
        if len(topics) != 1:
            raise OptionError(
                "Option 'valueFormat' = confluent-avro takes its reader schema from the "
                "subject <topic>-value of the one topic of 'subscribe'; with several topics, "
                "a pattern or 'assign', name the subject with the option 'valueSubject'."
            )
        subject = f"{topics[0]}-value"
    mode = opts.get("mode", "FAILFAST").strip().upper()
    if mode not in ("FAILFAST", "PERMISSIVE"):
        raise OptionError(f"Option 'mode' must be FAILFAST or PERMISSIVE, not {opts['mode']!r}.")
    return ValueDecoding(url, subject, mode)


def _lower(raw: Mapping[str, str]) -> dict[str, str]:
    return {str(k).lower(): str(v) for k, v in raw.items()}


def _client_settings(opts: dict[str, str], role: Role) -> ClientSettings:
    servers = opts.get("kafka.bootstrap.servers") or opts.get("bootstrap.servers")
    if not servers:
        raise OptionError(
            "Option 'kafka.bootstrap.servers' is required: set it to the brokers' "
            "HOST:PORT list, e.g. .option('kafka.bootstrap.servers', 'localhost:9092')."
        )
    try:
        parse_bootstrap_servers(servers)
    except ValueError as e:
        raise OptionError(f"Option 'kafka.bootstrap.servers': {e}.") from None
    check_kafka_params(opts, role)
    isolation = opts.get("kafka.isolation.level", "read_uncommitted").strip().lower()
    if role == "read" and isolation not in ("read_uncommitted", "read_committed"):
        raise OptionError(
            "Option 'kafka.isolation.level' must be read_uncommitted or read_committed, not "
            f"{opts['kafka.isolation.level']!r}."
        )

    params = {k[len("kafka.") :]: v for k, v in opts.items() if k.startswith("kafka.")}
    config: ClientConfig = ConsumerConfig(params) if role == "read" else ProducerConfig(params)

    def num(key: str, default: int | None = None) -> int:
        if role == "write" and key.startswith(("fetch.", "max.partition.fetch.")):
            # a consumer setting: a write warns that it is unused
            return ConsumerConfig({}).get_int(key, default)
        try:
            return config.get_int(key, default, minimum=0)
        except ClientConfigError as e:
            if e.expected is Expected.NUMBER:
                raise OptionError(
                    f"Option 'kafka.{key}' must be an integer, not {e.value.strip()!r}."
                ) from None
            raise OptionError(
                f"Option 'kafka.{key}' must be at least {e.minimum}, not {e.parsed}."
            ) from None

    return ClientSettings(
        bootstrap_servers=servers,
        client_id=config.get_string("client.id", "kafpy-spark"),
        request_timeout_ms=num("request.timeout.ms"),
        retries=num("retries", 5),
        retry_backoff_ms=num("retry.backoff.ms"),
        fetch_max_wait_ms=num("fetch.max.wait.ms"),
        fetch_max_bytes=num("fetch.max.bytes"),
        max_partition_fetch_bytes=num("max.partition.fetch.bytes", 4194304),
        isolation_level=1 if role == "read" and isolation == "read_committed" else 0,
        security=security_params(opts),
    )


def _int_option(opts: dict[str, str], key: str, name: str, *, minimum: int) -> int | None:
    if key not in opts:
        return None
    text = opts[key].strip()
    try:
        value = int(text)
    except ValueError:
        raise OptionError(f"Option '{name}' must be an integer, not {text!r}.") from None
    if value < minimum:
        raise OptionError(f"Option '{name}' must be at least {minimum}, not {value}.")
    return value


def _bool_option(opts: dict[str, str], key: str, name: str, default: bool) -> bool:
    if key not in opts:
        return default
    text = opts[key].strip().lower()
    if text not in ("true", "false"):
        raise OptionError(f"Option '{name}' must be true or false, not {opts[key]!r}.")
    return text == "true"


def _parse_assign(text: str) -> dict[str, tuple[int, ...]]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as e:
        raise OptionError(
            f"Option 'assign' is not valid JSON ({e.msg} at character {e.pos}); expected an "
            'object of topics to partition lists, like {"topicA":[0,1],"topicB":[2]}.'
        ) from None
    if not isinstance(value, dict) or not value:
        raise OptionError(
            'Option \'assign\' must be a JSON object like {"topicA":[0,1],"topicB":[2]}.'
        )
    result: dict[str, tuple[int, ...]] = {}
    for topic, parts in value.items():
        if (
            not isinstance(parts, list)
            or not parts
            or not all(isinstance(p, int) and not isinstance(p, bool) and p >= 0 for p in parts)
        ):
            raise OptionError(
                f"Option 'assign': topic {topic!r} must map to a non-empty list of partition "
                f"numbers, not {json.dumps(parts)}."
            )
        result[topic] = tuple(sorted(set(parts)))
    return result


def _offset_spec(opts: dict[str, str], which: str, *, default: str) -> OffsetSpec:
    """startingTimestamp > startingOffsetsByTimestamp > startingOffsets, as Spark ranks them."""
    name = which + "Offsets"
    ts_key = f"{which}timestamp"
    if ts_key in opts:
        ts = _int_option(opts, ts_key, f"{which}Timestamp", minimum=0)
        assert ts is not None
        return OffsetSpec("timestamp", timestamp=ts)
    by_ts_key = f"{which}offsetsbytimestamp"
    if by_ts_key in opts:
        stamps = offsets_from_json(opts[by_ts_key], f"{which}OffsetsByTimestamp")
        bad = [v for v in stamps.values() if v < 0]
        if bad:
            raise OptionError(
                f"Option '{which}OffsetsByTimestamp' holds negative timestamps {bad}; give "
                "times in milliseconds since the epoch."
            )
        return OffsetSpec("timestamps", offsets=stamps)
    text = opts.get(f"{which}offsets", default).strip()
    if text.lower() in ("earliest", "latest"):
        return OffsetSpec(text.lower())
    offsets = offsets_from_json(text, name)
    invalid = {f"{t}-{p}": o for (t, p), o in offsets.items() if o < -2}
    if invalid:
        raise OptionError(
            f"Option '{name}' holds invalid offsets {invalid}: use an offset >= 0, -2 for "
            "earliest or -1 for latest."
        )
    return OffsetSpec("offsets", offsets=offsets)
