"""KafkaOffsetReader: the driver's view of the topics a query reads, after Spark's class of
the same name: which partitions the subscription covers now, and their earliest, latest
or by-timestamp offsets. Each instance runs its own asyncio loop and kafpy client, so it
can be used from Spark's synchronous planning calls and kept across micro-batches.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Coroutine, Iterable
from typing import Any, TypeVar

from kafpy.client.client_security import ClientSecurity
from kafpy.client.fetcher import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, Fetcher
from kafpy.client.kafka_client import KafkaClient
from kafpy.common.errors import InvalidConfigurationError, UnknownTopicOrPartitionError
from kafpy.common.topic_partition import TopicPartition
from kafpy.spark.errors import OptionError
from kafpy.spark.offsets import TP
from kafpy.spark.options import ClientSettings, OffsetSpec, ReadOptions

T = TypeVar("T")


def close_loop(loop: asyncio.AbstractEventLoop, client: KafkaClient) -> None:
    """Close the client, let the tasks it leaves (connection readers) finish, close the
    loop: no "Task was destroyed but it is pending" warnings from a worker."""
    loop.run_until_complete(client.close())
    pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
    for task in pending:
        task.cancel()
    if pending:
        loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
    loop.close()


def new_client(settings: ClientSettings) -> KafkaClient:
    """kafpy's client as the `kafka.*` options ask, TLS included; a trust or key store that
    cannot be read is an OptionError naming it."""
    try:
        security = ClientSecurity.from_config(
            dict(settings.security), source="the kafka.security.protocol and kafka.ssl.* options"
        )
    except InvalidConfigurationError as e:
        raise OptionError(str(e)) from None
    return KafkaClient(
        settings.bootstrap_servers,
        client_id=settings.client_id,
        request_timeout_ms=settings.request_timeout_ms,
        retries=settings.retries,
        retry_backoff_ms=settings.retry_backoff_ms,
        security=security,
    )


class KafkaOffsetReader:
    """Partitions and offsets of a read's subscription (subscribe, subscribePattern or
    assign), asked of the cluster through kafpy's client."""

    def __init__(self, options: ReadOptions, *, batch: bool = False) -> None:
        self.options = options
        # a batch query reads the topics as they are now: a subscribed topic that does not
        # exist is an error (as in Spark's connector), where a stream waits for it
        self.batch = batch
        self._loop = asyncio.new_event_loop()
        self._client = new_client(options.client)
        self._fetcher = Fetcher(self._client, isolation_level=options.client.isolation_level)

    @property
    def client(self) -> KafkaClient:
        """The reader's client, connected to the cluster once started."""
        return self._client

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        return self._loop.run_until_complete(coro)

    def close(self) -> None:
        if not self._loop.is_closed():
            close_loop(self._loop, self._client)

    def __enter__(self) -> KafkaOffsetReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- partitions ---

    def partitions(self) -> list[TP]:
        """The partitions the subscription covers now, sorted."""
        return self.run(self._partitions())

    async def _partitions(self) -> list[TP]:
        opts = self.options
        client = self._client
        await client.start()
        if opts.assign is not None:
            await client.refresh_metadata(sorted(opts.assign))
            result: list[TP] = []
            for topic, parts in opts.assign.items():
                info = client.cluster.topic(topic)
                if info is None or not info.partitions:
                    raise OptionError(
                        f"Topic '{topic}' named in option 'assign' does not exist; create it "
                        "or fix the name."
                    )
                missing = [p for p in parts if p not in info.partitions]
                if missing:
                    raise OptionError(
                        f"Option 'assign' names partitions {missing} of topic '{topic}', which "
                        f"has only {len(info.partitions)} partitions."
                    )
                result.extend((topic, p) for p in parts)
            return sorted(result)
        if opts.subscribe is not None:
            await client.refresh_metadata(list(opts.subscribe))
            topics: Iterable[str] = opts.subscribe
        else:
            await client.refresh_metadata(None)
            assert opts.subscribe_pattern is not None
            pattern = re.compile(opts.subscribe_pattern)
            topics = [t for t in client.cluster.topics if pattern.fullmatch(t)]
        result = []
        for topic in topics:
            info = client.cluster.topic(topic)
            if info is not None and info.error_code == 0 and info.partitions:
                result.extend((topic, p) for p in info.partitions)
            elif self.batch and opts.subscribe is not None:
                raise UnknownTopicOrPartitionError(
                    f"This server does not host this topic-partition: topic '{topic}' named in "
                    "option 'subscribe' does not exist; create it or fix the name (a batch "
                    "query reads the topics as they are when it starts)."
                )
        return sorted(result)

    # --- offsets ---

    def earliest(self, tps: Iterable[TP]) -> dict[TP, int]:
        return self.run(self._list(tps, EARLIEST_TIMESTAMP))

    def latest(self, tps: Iterable[TP]) -> dict[TP, int]:
        return self.run(self._list(tps, LATEST_TIMESTAMP))

    async def _list(self, tps: Iterable[TP], timestamp: int) -> dict[TP, int]:
        wanted = [TopicPartition(t, p) for t, p in tps]
        if not wanted:
            return {}
        got = await self._fetcher.list_offsets(wanted, timestamp)
        return {(tp.topic, tp.partition): offset for tp, offset in got.items()}

    def resolve(self, spec: OffsetSpec, tps: list[TP], *, starting: bool) -> dict[TP, int]:
        """Concrete offsets for `tps` from a startingOffsets/endingOffsets-like spec."""
        return self.run(self._resolve(spec, tps, starting))

    async def _resolve(self, spec: OffsetSpec, tps: list[TP], starting: bool) -> dict[TP, int]:
        which = "startingOffsets" if starting else "endingOffsets"
        if spec.kind == "earliest":
            return await self._list(tps, EARLIEST_TIMESTAMP)
        if spec.kind == "latest":
            return await self._list(tps, LATEST_TIMESTAMP)
        if spec.kind == "offsets":
            _check_covers(spec.offsets, tps, which)
            result = {tp: spec.offsets[tp] for tp in tps}
            early = [tp for tp, o in result.items() if o == -2]
            late = [tp for tp, o in result.items() if o == -1]
            result.update(await self._list(early, EARLIEST_TIMESTAMP))
            result.update(await self._list(late, LATEST_TIMESTAMP))
            return result
        if spec.kind == "timestamp":
            stamps = dict.fromkeys(tps, spec.timestamp)
        else:
            name = which.replace("Offsets", "OffsetsByTimestamp")
            _check_covers(spec.offsets, tps, name)
            stamps = {tp: spec.offsets[tp] for tp in tps}
        result = {}
        latest: dict[TP, int] | None = None
        for tp, ts in stamps.items():
            found = (await self._list([tp], ts))[tp]
            if found < 0:
                if starting and self.options.starting_by_timestamp_strategy == "error":
                    raise OptionError(
                        f"No record of partition {tp[0]}-{tp[1]} has a timestamp at or after "
                        f"{ts} ms, so the starting offset by timestamp is undefined; use an "
                        "earlier time or set startingOffsetsByTimestampStrategy=latest."
                    )
                if latest is None:
                    latest = await self._list(list(stamps), LATEST_TIMESTAMP)
                found = latest[tp]
            result[tp] = found
        return result


def _check_covers(offsets: dict[TP, int], tps: list[TP], name: str) -> None:
    """Specific offsets must name exactly the partitions the query reads (Spark's
    connector asserts the same)."""
    missing = sorted(set(tps) - set(offsets))
    extra = sorted(set(offsets) - set(tps))
    if not missing and not extra:
        return

    def names(items: Iterable[TP]) -> str:
        return ", ".join(f"{t}-{p}" for t, p in items)

    problems = []
    if missing:
        problems.append(f"gives no offset for partitions {names(missing)}")
    if extra:
        problems.append(f"names partitions {names(extra)}, which the query does not read")
    raise OptionError(
        f"Option '{name}' {' and '.join(problems)}. If {name} contains specific offsets, you "
        "must specify all TopicPartitions (use -1 for latest, -2 for earliest). Specified: "
        f"[{names(sorted(offsets))}] Assigned: [{names(sorted(tps))}]"
    )
