"""ClusterService: what the console knows of a cluster, as the JSON its API serves.

Every read and write goes through kafpy's own client (Metadata, DescribeConfigs,
ListOffsets, ListGroups, DescribeGroups, OffsetFetch, Fetch; CreateTopics, DeleteTopics,
OffsetCommit) and is bounded by one timeout, so a hung broker fails the page instead of
hanging it. Failures become ConsoleErrors: an HTTP status, a title and a sentence saying
what was tried and what went wrong.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar

from kafpy.client.admin_client import AdminClient, ConfigResource, LogDirDescription, NewTopic
from kafpy.client.cluster import PartitionInfo, TopicInfo
from kafpy.client.consumer_group_admin import ConsumerGroupAdmin
from kafpy.client.fetcher import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    ConsumerRecord,
    Fetcher,
    OffsetResetStrategy,
)
from kafpy.client.kafka_client import KafkaClient
from kafpy.common.errors import (
    KafkaConnectionError,
    KafkaError,
    OffsetOutOfRangeError,
    TopicExistsError,
    UnknownTopicOrPartitionError,
    UnsupportedVersionError,
)
from kafpy.common.topic_partition import TopicPartition
from kafpy.console.message_format import MessageFormat, ShownBytes, show_bytes

if TYPE_CHECKING:
    from kafpy.console.schema_decoder import SchemaDecoder

T = TypeVar("T")

DEFAULT_TIMEOUT_S = 15.0
DEFAULT_LIMIT = 20
MAX_LIMIT = 500
RESET_STRATEGIES = ("earliest", "latest", "offset")


class ConsoleError(Exception):
    """A failure shown to the user as a page (or JSON) with `status`, `title` and a
    `detail` sentence; `tried` says what the console was doing."""

    def __init__(self, status: int, title: str, detail: str, tried: str | None = None) -> None:
        super().__init__(detail)
        self.status = status
        self.title = title
        self.detail = detail
        self.tried = tried

    def as_json(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "title": self.title,
            "detail": self.detail,
            "tried": self.tried,
        }


def parse_timestamp(value: str) -> int:
    """A `timestamp=` parameter as ms since the epoch: a number of ms, or an ISO date and
    time (UTC unless it names its zone, e.g. 2026-11-23T10:00 or 2026-11-23T10:00:00+01:00)."""
    text = value.strip()
    if text.lstrip("-").isdigit():
        return int(text)
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise ConsoleError(
            400,
            "Bad timestamp",
            f"Timestamp {value!r} is neither ms since the epoch nor an ISO date and time "
            "(e.g. 2026-11-23T10:00:00).",
        ) from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return int(when.timestamp() * 1000)


def format_timestamp(ms: int) -> str:
    """A record timestamp for people: ISO UTC with ms, or '-' for none (-1)."""
    if ms < 0:
        return "-"
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds")


def _partition_json(p: PartitionInfo) -> dict[str, Any]:
    return {
        "partition": p.partition,
        "leader": p.leader,
        "replicas": list(p.replicas),
        "isr": list(p.isr),
        "offline_replicas": list(p.offline_replicas),
        "under_replicated": len(p.isr) < len(p.replicas),
        "offline": p.leader < 0,
    }


def _topic_summary(
    info: TopicInfo, sizes: Mapping[TopicPartition, int] | None = None
) -> dict[str, Any]:
    """A topic's row: counts, and its size (its leader replicas' bytes) when known."""
    parts = [info.partitions[p] for p in sorted(info.partitions)]
    size = None
    if sizes is not None:
        size = sum(sizes.get(TopicPartition(info.name, p.partition), 0) for p in parts)
    return {
        "name": info.name,
        "internal": info.is_internal,
        "partitions": len(parts),
        "replication_factor": max((len(p.replicas) for p in parts), default=0),
        "under_replicated": sum(1 for p in parts if len(p.isr) < len(p.replicas)),
        "offline": sum(1 for p in parts if p.leader < 0),
        "size": size,
    }


class ClusterService:
    """The console's reads and writes of one cluster, over one long-lived KafkaClient.

    Parameters:
        bootstrap_servers: where the client starts (`host:port[,host:port]`).
        client_options: KafkaClient keyword arguments (from --command-config).
        timeout_s: the bound on each console request, all broker round trips included.
        schema_decoder: decodes Confluent-framed keys and values (`--schema-registry`).
    """

    def __init__(
        self,
        bootstrap_servers: str,
        client_options: Mapping[str, Any] | None = None,
        *,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        schema_decoder: SchemaDecoder | None = None,
    ) -> None:
        self.bootstrap_servers = bootstrap_servers
        self.schema_decoder = schema_decoder
        options: dict[str, Any] = {
            "client_id": "kafpy-console",
            "request_timeout_ms": 10000,
            "retries": 2,
        }
        options.update(client_options or {})
        self.client = KafkaClient(bootstrap_servers, **options)
        self.admin = AdminClient(self.client)
        self.group_admin = ConsumerGroupAdmin(self.client)
        self.timeout_s = timeout_s

    async def close(self) -> None:
        await self.client.close()

    async def _bounded(self, what: str, work: Callable[[], Awaitable[T]]) -> T:
        """Run `work` within the timeout; connection failures and timeouts become
        ConsoleErrors naming `what` was tried and the bootstrap servers."""
        tried = f"{what} (bootstrap servers: {self.bootstrap_servers})"
        try:
            async with asyncio.timeout(self.timeout_s):
                await self.client.start()
                return await work()
        except TimeoutError:
            raise ConsoleError(
                504,
                "The cluster did not answer",
                f"No answer within {self.timeout_s:g} s: a broker may be hung or overloaded. "
                "Check the brokers and reload.",
                tried,
            ) from None
        except KafkaConnectionError as e:
            raise ConsoleError(
                503,
                "Cannot reach the cluster",
                str(e)
                if "Check" in str(e)
                else f"{e} Check that the brokers are up and that --bootstrap-server is right.",
                tried,
            ) from None
        except UnknownTopicOrPartitionError as e:
            raise ConsoleError(404, "No such topic or partition", str(e), tried) from None
        except TopicExistsError as e:
            raise ConsoleError(409, "Topic already exists", str(e), tried) from None
        except KafkaError as e:
            raise ConsoleError(
                502, f"The cluster refused: {type(e).__name__}", str(e), tried
            ) from None

    # --- brokers ---

    async def brokers(self) -> dict[str, Any]:
        """The live brokers, the controller, and each broker's log dirs where available."""
        return await self._bounded("Describing the brokers", lambda: self._brokers())

    async def _brokers(self) -> dict[str, Any]:
        nodes, controller = await self.admin.describe_cluster()
        brokers = []
        for n in nodes:
            log_dirs, note = await self._log_dirs(n.node_id)
            brokers.append(
                {
                    "id": n.node_id,
                    "host": n.host,
                    "port": n.port,
                    "rack": n.rack,
                    "controller": n.node_id == controller,
                    "log_dirs": None
                    if log_dirs is None
                    else [
                        {
                            "path": d.path,
                            "size": sum(r.size for r in d.replicas.values()),
                            "replicas": len(d.replicas),
                            "error": None if d.error is None else str(d.error),
                            "total_bytes": d.total_bytes,
                            "usable_bytes": d.usable_bytes,
                        }
                        for d in log_dirs
                    ],
                    "log_dirs_note": note,
                }
            )
        return {
            "cluster_id": self.client.cluster.cluster_id,
            "controller_id": controller,
            "brokers": brokers,
        }

    async def _log_dirs(self, node_id: int) -> tuple[list[LogDirDescription] | None, str | None]:
        """A broker's log dirs, or None and why they are not available (sizes come from
        DescribeLogDirs only: nothing is guessed)."""
        try:
            return (await self.admin.describe_log_dirs([node_id]))[node_id], None
        except UnsupportedVersionError:
            return None, "not available: the broker does not serve DescribeLogDirs"
        except KafkaError as e:
            return None, f"not available: {e}"

    # --- topics ---

    async def topics(self) -> dict[str, Any]:
        """Every topic with its partition count, replication factor and the number of
        under-replicated and offline partitions."""
        return await self._bounded("Listing the topics", lambda: self._topics())

    async def _topics(self) -> dict[str, Any]:
        await self.client.refresh_metadata(None)
        infos = dict(self.client.cluster.topics)
        sizes = await self._leader_sizes(infos)
        return {"topics": [_topic_summary(infos[name], sizes) for name in sorted(infos)]}

    async def _leader_sizes(
        self, infos: Mapping[str, TopicInfo]
    ) -> dict[TopicPartition, int] | None:
        """The size of each partition's leader replica, None unless every broker that leads
        a partition describes its log dirs."""
        leaders = {
            TopicPartition(name, p.partition): p.leader
            for name, info in infos.items()
            for p in info.partitions.values()
            if p.leader >= 0
        }
        sizes: dict[TopicPartition, int] = {}
        for broker in sorted(set(leaders.values())):
            log_dirs, _ = await self._log_dirs(broker)
            if log_dirs is None:
                return None
            for d in log_dirs:
                for tp, replica in d.replicas.items():
                    if leaders.get(tp) == broker and not replica.is_future:
                        sizes[tp] = replica.size
        return sizes

    async def topic(self, name: str) -> dict[str, Any]:
        """One topic: its partitions with leader, replicas, ISR and log start/end offsets,
        and its configs."""
        return await self._bounded(f"Describing topic '{name}'", lambda: self._topic(name))

    async def _topic_info(self, name: str) -> TopicInfo:
        try:
            return (await self.admin.describe_topics([name]))[name]
        except UnknownTopicOrPartitionError:
            raise ConsoleError(
                404,
                "No such topic",
                f"Topic '{name}' does not exist (it may have been deleted).",
                f"Describing topic '{name}'",
            ) from None

    async def _topic(self, name: str) -> dict[str, Any]:
        info = await self._topic_info(name)
        sizes = await self._leader_sizes({name: info})
        summary = _topic_summary(info, sizes)
        fetcher = Fetcher(self.client)
        partitions = []
        for p in sorted(info.partitions):
            part = info.partitions[p]
            entry = _partition_json(part)
            entry["log_start_offset"] = entry["log_end_offset"] = None
            entry["size"] = None if sizes is None else sizes.get(TopicPartition(name, p))
            if part.leader >= 0:
                tp = TopicPartition(name, p)
                start = await fetcher.list_offsets([tp], EARLIEST_TIMESTAMP)
                end = await fetcher.list_offsets([tp], LATEST_TIMESTAMP)
                entry["log_start_offset"], entry["log_end_offset"] = start[tp], end[tp]
            partitions.append(entry)
        resource = ConfigResource.topic(name)
        entries = (await self.admin.describe_configs([resource]))[resource]
        configs = [
            {
                "name": e.name,
                "value": "[hidden]" if e.is_sensitive else e.value,
                "source": e.source.name,
                "is_default": e.is_default,
                "read_only": e.read_only,
            }
            for e in sorted(entries, key=lambda e: e.name)
        ]
        return {**summary, "partition_details": partitions, "configs": configs}

    # --- consumer groups ---

    async def groups(self) -> dict[str, Any]:
        """Every group with its protocol type, state and member count."""
        return await self._bounded("Listing the consumer groups", lambda: self._groups())

    async def _groups(self) -> dict[str, Any]:
        result = []
        for listing in await self.group_admin.list_groups():
            described = await self.group_admin.describe_group(listing.group_id)
            result.append(
                {
                    "group_id": listing.group_id,
                    "protocol_type": listing.protocol_type,
                    "state": described.state,
                    "members": len(described.members),
                }
            )
        return {"groups": result}

    async def group(self, group_id: str) -> dict[str, Any]:
        """One group: state, members and, per partition it committed, the committed
        offset, the end offset and the lag; and the total lag."""
        return await self._bounded(f"Describing group '{group_id}'", lambda: self._group(group_id))

    async def _group(self, group_id: str) -> dict[str, Any]:
        described = await self.group_admin.describe_group(group_id)
        committed = await self.group_admin.list_group_offsets(group_id)
        if described.state == "Dead" and not committed:
            raise ConsoleError(
                404,
                "No such consumer group",
                f"Consumer group '{group_id}' does not exist.",
                f"Describing group '{group_id}'",
            )
        owner = {tp: m for m in described.members for tp in m.assignment}
        tps = sorted(set(committed) | set(owner))
        fetcher = Fetcher(self.client)
        offsets = []
        total_lag = 0
        for tp in tps:
            end: int | None
            try:
                end = (await fetcher.list_offsets([tp], LATEST_TIMESTAMP))[tp]
            except KafkaError:
                end = None  # a deleted topic or a partition without a leader
            done = committed.get(tp)
            lag = end - done if end is not None and done is not None else None
            total_lag += lag or 0
            member = owner.get(tp)
            offsets.append(
                {
                    "topic": tp.topic,
                    "partition": tp.partition,
                    "committed_offset": done,
                    "log_end_offset": end,
                    "lag": lag,
                    "member_id": member.member_id if member else None,
                    "client_id": member.client_id if member else None,
                    "host": member.host if member else None,
                }
            )
        return {
            "group_id": group_id,
            "state": described.state,
            "protocol_type": described.protocol_type,
            "assignor": described.assignor,
            "coordinator": described.coordinator,
            "members": [
                {
                    "member_id": m.member_id,
                    "group_instance_id": m.group_instance_id,
                    "client_id": m.client_id,
                    "host": m.host,
                    "assignment": [str(tp) for tp in m.assignment],
                }
                for m in described.members
            ],
            "offsets": offsets,
            "total_lag": total_lag,
        }

    # --- messages ---

    async def messages(
        self,
        topic: str,
        partition: int,
        *,
        offset: int | None = None,
        timestamp: int | None = None,
        limit: int = DEFAULT_LIMIT,
        fmt: MessageFormat = MessageFormat.AUTO,
    ) -> dict[str, Any]:
        """Up to `limit` records of one partition: from `offset`, from the first at or
        after `timestamp`, or else the latest `limit`."""
        if not 1 <= limit <= MAX_LIMIT:
            raise ConsoleError(
                400, "Bad limit", f"limit={limit}: ask for between 1 and {MAX_LIMIT} records."
            )
        if offset is not None and timestamp is not None:
            raise ConsoleError(
                400, "Bad request", "Give either an offset or a timestamp to start from, not both."
            )
        return await self._bounded(
            f"Reading partition {topic}-{partition}",
            lambda: self._messages(topic, partition, offset, timestamp, limit, fmt),
        )

    async def _messages(
        self,
        topic: str,
        partition: int,
        offset: int | None,
        timestamp: int | None,
        limit: int,
        fmt: MessageFormat,
    ) -> dict[str, Any]:
        info = await self._topic_info(topic)
        if partition not in info.partitions:
            raise ConsoleError(
                404,
                "No such partition",
                f"Topic '{topic}' has no partition {partition}: it has "
                f"{len(info.partitions)} partitions (0 to {len(info.partitions) - 1}).",
            )
        tp = TopicPartition(topic, partition)
        if info.partitions[partition].leader < 0:
            raise ConsoleError(
                503,
                "Partition offline",
                f"Partition {tp} has no leader: none of its replicas "
                f"{list(info.partitions[partition].replicas)} is available, so its records "
                "cannot be read until one is back.",
            )
        fetcher = Fetcher(self.client, max_wait_ms=100, reset=OffsetResetStrategy.NONE)
        log_start = (await fetcher.list_offsets([tp], EARLIEST_TIMESTAMP))[tp]
        log_end = (await fetcher.list_offsets([tp], LATEST_TIMESTAMP))[tp]
        result: dict[str, Any] = {
            "topic": topic,
            "partition": partition,
            "log_start_offset": log_start,
            "log_end_offset": log_end,
            "format": fmt.value,
            "records": [],
            "note": None,
        }
        if offset is not None:
            if not log_start <= offset <= log_end:
                holds = (
                    f"it is empty (log start and end offset {log_end})"
                    if log_start == log_end
                    else f"it holds offsets {log_start} to {log_end - 1} (log end offset {log_end})"
                )
                raise ConsoleError(
                    416,
                    "Offset out of range",
                    f"Offset {offset} is out of range for partition {tp}: {holds}.",
                )
            start = offset
        elif timestamp is not None:
            start = (await fetcher.list_offsets([tp], timestamp))[tp]
            if start < 0:
                result["note"] = (
                    f"No record of {tp} has a timestamp at or after {format_timestamp(timestamp)}."
                )
                result["start_offset"] = log_end
                return result
        else:
            start = max(log_start, log_end - limit)
        result["start_offset"] = start
        fetcher.assign({tp: start})
        records: list[ConsumerRecord] = []
        try:
            while len(records) < limit and fetcher.positions[tp] < log_end:
                before = fetcher.positions[tp]
                records.extend(await fetcher.fetch())
                if fetcher.positions[tp] == before:
                    break
        except OffsetOutOfRangeError:
            raise ConsoleError(
                416,
                "Offset out of range",
                f"Offset {start} of partition {tp} is no longer in the log (retention or "
                "deletion moved its start); reload to read from the new start.",
            ) from None
        shown = records[:limit]
        show: Callable[[bytes | None, MessageFormat], ShownBytes] = show_bytes
        if self.schema_decoder is not None:
            await self.schema_decoder.prefetch(v for r in shown for v in (r.key, r.value))
            show = self.schema_decoder.show
        result["records"] = [
            {
                "offset": r.offset,
                "timestamp": r.timestamp,
                "time": format_timestamp(r.timestamp),
                "timestamp_type": r.timestamp_type.name,
                "key": show(r.key, fmt).as_json(),
                "value": show(r.value, fmt).as_json(),
                "headers": [
                    {"key": k, "value": show_bytes(v, fmt).as_json()} for k, v in r.headers
                ],
            }
            for r in shown
        ]
        if not shown:
            result["note"] = f"No records in {tp} from offset {start} (log end offset {log_end})."
        result["next_offset"] = shown[-1].offset + 1 if shown else start
        return result

    # --- writes (only with --allow-writes; the app checks) ---

    async def create_topic(
        self, name: str, partitions: int, replication_factor: int, configs: Mapping[str, str]
    ) -> None:
        await self._bounded(
            f"Creating topic '{name}'",
            lambda: self.admin.create_topics(
                [NewTopic(name, partitions, replication_factor, configs=dict(configs))]
            ),
        )

    async def delete_topic(self, name: str) -> None:
        await self._bounded(f"Deleting topic '{name}'", lambda: self.admin.delete_topics([name]))

    async def reset_group_offsets(
        self, group_id: str, topic: str, strategy: str, offset: int | None = None
    ) -> dict[TopicPartition, int]:
        """Set `group_id`'s committed offsets on every partition of `topic` to the log's
        start (earliest), end (latest), or `offset` (clamped into the log, as Kafka's
        tool does); returns the new offsets."""
        if strategy not in RESET_STRATEGIES:
            raise ConsoleError(
                400,
                "Bad reset",
                f"Unknown reset {strategy!r}: use one of {', '.join(RESET_STRATEGIES)}.",
            )
        if strategy == "offset" and offset is None:
            raise ConsoleError(400, "Bad reset", "A reset to an offset needs the offset.")
        return await self._bounded(
            f"Resetting the offsets of group '{group_id}' on topic '{topic}'",
            lambda: self._reset(group_id, topic, strategy, offset),
        )

    async def _reset(
        self, group_id: str, topic: str, strategy: str, offset: int | None
    ) -> dict[TopicPartition, int]:
        info = await self._topic_info(topic)
        tps = [TopicPartition(topic, p) for p in sorted(info.partitions)]
        fetcher = Fetcher(self.client)
        start = await fetcher.list_offsets(tps, EARLIEST_TIMESTAMP)
        end = await fetcher.list_offsets(tps, LATEST_TIMESTAMP)
        if strategy == "earliest":
            new = start
        elif strategy == "latest":
            new = end
        else:
            assert offset is not None
            new = {tp: min(max(offset, start[tp]), end[tp]) for tp in tps}
        await self.group_admin.alter_group_offsets(group_id, new)
        return new
