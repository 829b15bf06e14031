"""The APIs ReplicaManager answers (Kafka's KafkaApis handlers of the log): Produce, Fetch,
ListOffsets, DeleteRecords, OffsetForLeaderEpoch, DescribeLogDirs, AlterReplicaLogDirs,
DescribeProducers and WriteTxnMarkers.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from kafpy.cluster.partition import READ_COMMITTED
from kafpy.common.errors import KafkaError
from kafpy.common.topic_partition import TopicPartition
from kafpy.network.request_channel import CloseConnection, Request
from kafpy.protocol.errors import Errors, error_code_of
from kafpy.protocol.messages import produce
from kafpy.protocol.messages.fetch import INVALID_SESSION_ID, LEGACY_FETCH_METADATA, FetchMetadata
from kafpy.records.legacy_record import first_magic
from kafpy.records.memory_records import MemoryRecords
from kafpy.server.api_context import ApiContext, body_of
from kafpy.server.describe_producers import describe_producers
from kafpy.server.produce_validation import validate_compressed_records, validate_produce_records
from kafpy.server.record_conversion import (
    convert_for_old_message_formats,
    down_convert_fetch,
    up_convert_produce,
)
from kafpy.server.replica_manager import (
    DEBUGGING_CONSUMER_ID,
    FetchParams,
    FetchPartitionData,
    PartitionFetchInfo,
)
from kafpy.server.replica_selector import ClientMetadata
from kafpy.server.write_txn_markers import TxnMarkerWriter
from kafpy.storage.log_config import LogConfig

CONSUMER_REPLICA_ID = -1
_INT32_MAX = 2**31 - 1


class ReplicaApis:
    """Answers the log APIs from the ReplicaManager."""

    def __init__(self, ctx: ApiContext) -> None:
        self.ctx = ctx
        # transactions, the partition leader's side (issue 15)
        self.txn_marker_writer = TxnMarkerWriter(
            ctx.replica_manager, ctx.group_coordinator, ctx.replica_manager.time
        )

    async def handle_produce(self, request: Request) -> dict[str, Any] | None:
        body = request.body
        assert body is not None
        acks = body["acks"]
        entries: dict[TopicPartition, MemoryRecords | memoryview | bytes | None] = {}
        answers: dict[TopicPartition, dict[str, Any]] = {}
        order: list[TopicPartition] = []
        legacy: dict[TopicPartition, memoryview | bytes] = {}
        for topic in body["topic_data"]:
            for p in topic["partition_data"]:
                tp = TopicPartition(topic["name"], p["index"])
                order.append(tp)
                records = p["records"]
                if request.api_version < 3 and records and first_magic(records) in (0, 1):
                    legacy[tp] = records
                    continue
                error = validate_produce_records(records)
                if error is not None:
                    answers[tp] = produce.partition_error(
                        tp.partition, error_code_of(error), str(error)
                    )
                else:
                    entries[tp] = records
        for tp, records in legacy.items():
            try:
                entries[tp] = await up_convert_produce(records, self._log_config(tp))
            except KafkaError as e:
                answers[tp] = produce.partition_error(tp.partition, error_code_of(e), str(e))
        if acks not in (0, 1, -1):
            for tp in order:
                answers[tp] = produce.partition_error(
                    tp.partition, Errors.INVALID_REQUIRED_ACKS, None
                )
        elif entries:
            await validate_compressed_records(self.ctx.replica_manager, entries)
            await convert_for_old_message_formats(self._old_format_logs(entries), entries)
            answers.update(
                await self.ctx.replica_manager.append_records(
                    body["timeout_ms"],
                    acks,
                    entries,
                    # lets the socket server start the connection's next request
                    on_appended=request.context.get("release"),
                )  # fmt: skip
            )
        if acks == 0:
            failed = {
                str(tp): Errors(r["error_code"]).name
                for tp, r in answers.items()
                if r["error_code"]
            }
            if failed:
                raise CloseConnection(
                    f"error during produce request with correlation id {request.header.correlation_id} "
                    f"from client id {request.header.client_id} with ack=0; partitions and errors: {failed}"
                )
            return None
        by_topic: dict[str, list[dict[str, Any]]] = {}
        for tp in dict.fromkeys(order):
            by_topic.setdefault(tp.topic, []).append(answers[tp])
        return {
            "responses": [{"name": t, "partition_responses": ps} for t, ps in by_topic.items()],
            "throttle_time_ms": 0,
        }

    async def handle_fetch(self, request: Request) -> dict[str, Any]:
        """Fetch (Kafka's handleFetchRequest): the request's fetch context (a session's,
        KIP-227, from v7) says which partitions to read and which answers go out."""
        body = body_of(request)
        version = request.api_version
        replica_id = body["replica_id"]
        fetch_data: dict[TopicPartition, PartitionFetchInfo] = {}
        for topic in body["topics"]:
            for p in topic["partitions"]:
                fetch_data[TopicPartition(topic["topic"], p["partition"])] = PartitionFetchInfo(
                    p["fetch_offset"], p["partition_max_bytes"], p.get("current_leader_epoch", -1),
                    p.get("log_start_offset", -1),
                    p.get("last_fetched_epoch", -1) if version >= 12 else -1,
                )  # fmt: skip
        if version >= 7:
            metadata = FetchMetadata(body["session_id"], body["session_epoch"])
            to_forget = [TopicPartition(t["topic"], p)
                         for t in body["forgotten_topics_data"] for p in t["partitions"]]  # fmt: skip
        else:
            metadata, to_forget = LEGACY_FETCH_METADATA, []
        params = FetchParams(
            replica_id=replica_id,
            max_wait_ms=body["max_wait_ms"],
            min_bytes=body["min_bytes"],
            max_bytes=body.get("max_bytes", _INT32_MAX),
            isolation_level=body.get("isolation_level", 0),
            client_metadata=_client_metadata(request) if version >= 11 else None,
        )
        # a consumer's answers may name a preferred read replica, whose choice depends on
        # more than the partition: its session reads every partition (as Kafka's does)
        redirectable = (not params.is_from_follower and params.client_metadata is not None
                        and self.ctx.replica_manager.replica_selector is not None)  # fmt: skip
        context = self.ctx.fetch_manager.new_context(
            metadata, fetch_data, to_forget, params.is_from_follower,
            read_committed=params.isolation_level == READ_COMMITTED, reads_all=redirectable,
            from_leader_only=params.fetch_only_from_leader,
        )  # fmt: skip
        if context.error != Errors.NONE:
            return {"throttle_time_ms": 0, "error_code": context.error,
                    "session_id": INVALID_SESSION_ID, "responses": []}  # fmt: skip
        infos: list[tuple[TopicPartition, PartitionFetchInfo]] = []
        answers: dict[TopicPartition, dict[str, Any]] = {}
        for tp, info in context.partitions():
            answers[tp] = {}  # keeps the context's order
            answer = None
            if info.last_fetched_epoch >= 0:
                answer = self._check_last_fetched_epoch(tp, info, info.last_fetched_epoch,
                                                        replica_id)  # fmt: skip
            if answer is None:
                infos.append((tp, info))
            else:
                answers[tp] = answer
        if len(infos) < len(answers):
            # an answer about a diverging epoch goes out at once, as Kafka's does
            params = dataclasses.replace(params, max_wait_ms=0)
        idle = context.idle_partitions()
        results = (
            await self.ctx.replica_manager.fetch_messages(params, infos, idle)
            if infos or idle is not None
            else []
        )
        if version < 4:
            results = await self._down_convert(version, dict(infos), results)
        for tp, r in results:
            answers[tp] = {
                "partition_index": tp.partition,
                "error_code": r.error_code,
                "high_watermark": r.high_watermark,
                "last_stable_offset": r.last_stable_offset,
                "log_start_offset": r.log_start_offset,
                "aborted_transactions": r.aborted_transactions,
                "preferred_read_replica": r.preferred_read_replica,
                "records": r.records if r.records is not None else b"",
            }  # fmt: skip
        positions = (
            {tp: r.fetch_offset_metadata for tp, r in results} if context.keeps_positions else None
        )
        response = context.update_and_generate_response_data(answers, positions)
        by_topic: dict[str, list[dict[str, Any]]] = {}
        for tp, answer in response.partitions.items():
            by_topic.setdefault(tp.topic, []).append(answer)
        return {
            "throttle_time_ms": 0,
            "error_code": response.error,
            "session_id": response.session_id,
            "responses": [{"topic": t, "partitions": ps} for t, ps in by_topic.items()],
        }

    def _log_config(self, tp: TopicPartition) -> LogConfig:
        """The topic's log config where this broker holds the partition, else the
        broker's defaults (the append then answers why it cannot take the data)."""
        partition = self.ctx.replica_manager.get_partition(tp)
        log = partition.log if partition is not None else None
        return log.config if log is not None else LogConfig()

    def _old_format_logs(
        self, entries: Mapping[TopicPartition, object]
    ) -> dict[TopicPartition, LogConfig]:
        """The configs of the leader logs among `entries` whose format is v0/v1."""
        out = {}
        for tp in entries:
            partition = self.ctx.replica_manager.get_partition(tp)
            log = partition.log if partition is not None and partition.is_leader else None
            if log is not None and log.config.record_version < 2:
                out[tp] = log.config
        return out

    async def _down_convert(
        self,
        version: int,
        infos: Mapping[TopicPartition, PartitionFetchInfo],
        results: list[tuple[TopicPartition, FetchPartitionData]],
    ) -> list[tuple[TopicPartition, FetchPartitionData]]:
        """Fetch v0-3: the stored batches as the message format the version carries."""
        for tp, r in results:
            if r.records is None or len(r.records) == 0:
                continue
            try:
                converted = await down_convert_fetch(
                    r.records, version, infos[tp].fetch_offset, self._log_config(tp)
                )
            except KafkaError as e:
                r.error_code, r.records = error_code_of(e), None
            else:
                r.records = memoryview(converted)
        return results

    def _check_last_fetched_epoch(
        self, tp: TopicPartition, info: PartitionFetchInfo, last_fetched_epoch: int, replica_id: int
    ) -> dict[str, Any] | None:
        """Fetch v12+ (KIP-595's truncation detection, Kafka's Partition.readRecords): the
        partition's answer when the fetcher's last fetched epoch diverges from this log
        (or cannot be checked), else None (read as usual)."""

        def answer(
            error: int, hw: int = -1, log_start: int = -1, epoch: int = -1, end: int = -1,
            lso: int | None = None,
        ) -> dict[str, Any]:  # fmt: skip
            return {"partition_index": tp.partition, "error_code": error, "high_watermark": hw,
                    "last_stable_offset": hw if lso is None else lso, "log_start_offset": log_start,
                    "diverging_epoch": None if epoch < 0 and end < 0 else {"epoch": epoch, "end_offset": end},
                    "aborted_transactions": None, "preferred_read_replica": -1, "records": b""}  # fmt: skip

        from_leader = replica_id != DEBUGGING_CONSUMER_ID
        try:
            partition = self.ctx.replica_manager.get_partition_or_error(tp)
            log = partition.local_log_or_error(info.current_leader_epoch, from_leader)
            epoch, end = partition.last_offset_for_leader_epoch(
                info.current_leader_epoch, last_fetched_epoch, from_leader
            )
        except KafkaError as e:
            return answer(error_code_of(e))
        hw, log_start = partition.high_watermark, log.log_start_offset
        lso = partition.last_stable_offset
        if epoch < 0 or end < 0 or info.fetch_offset < log_start:
            return answer(Errors.OFFSET_OUT_OF_RANGE, hw, log_start, lso=lso)
        if epoch < last_fetched_epoch or end < info.fetch_offset:
            return answer(Errors.NONE, hw, log_start, epoch, end, lso)
        return None

    async def handle_list_offsets(self, request: Request) -> dict[str, Any]:
        body = request.body
        assert body is not None
        replica_id = body["replica_id"]
        isolation = body.get("isolation_level", 0) if replica_id == CONSUMER_REPLICA_ID else None
        topics = []
        for topic in body["topics"]:
            parts = []
            for p in topic["partitions"]:
                tp = TopicPartition(topic["name"], p["partition_index"])
                if request.api_version == 0:
                    parts.append(self._legacy_list_offsets(tp, p, replica_id))
                    continue
                answer = {"partition_index": tp.partition, "error_code": Errors.NONE,
                          "timestamp": -1, "offset": -1, "leader_epoch": -1}  # fmt: skip
                try:
                    found = self.ctx.replica_manager.fetch_offset_for_timestamp(
                        tp, p["timestamp"], isolation, p.get("current_leader_epoch", -1),
                        replica_id != DEBUGGING_CONSUMER_ID,
                    )  # fmt: skip
                    if found is not None:
                        answer.update(timestamp=found.timestamp, offset=found.offset,
                                      leader_epoch=found.leader_epoch)  # fmt: skip
                except KafkaError as e:
                    answer["error_code"] = error_code_of(e)
                parts.append(answer)
            topics.append({"name": topic["name"], "partitions": parts})
        return {"throttle_time_ms": 0, "topics": topics}

    def _legacy_list_offsets(
        self, tp: TopicPartition, p: Mapping[str, Any], replica_id: int
    ) -> dict[str, Any]:
        """ListOffsets v0 (Kafka's legacyFetchOffsetsForTimestamp): up to
        max_num_offsets offsets, newest first, a consumer seeing none above the high
        watermark."""
        answer: dict[str, Any] = {"partition_index": tp.partition, "error_code": Errors.NONE,
                                  "old_style_offsets": []}  # fmt: skip
        try:
            partition = self.ctx.replica_manager.get_partition_or_error(tp)
            log = partition.local_log_or_error(-1, replica_id != DEBUGGING_CONSUMER_ID)
            offsets = log.legacy_fetch_offsets_before(p["timestamp"], p["max_num_offsets"])
        except KafkaError as e:
            answer["error_code"] = error_code_of(e)
            return answer
        if replica_id == CONSUMER_REPLICA_ID:
            hw = partition.high_watermark
            if any(o > hw for o in offsets):
                offsets = [hw, *(o for o in offsets if o <= hw)][: p["max_num_offsets"]]
        answer["old_style_offsets"] = offsets
        return answer

    async def handle_delete_records(self, request: Request) -> dict[str, Any]:
        body = request.body
        assert body is not None
        offsets = {
            TopicPartition(t["name"], p["partition_index"]): p["offset"]
            for t in body["topics"] for p in t["partitions"]
        }  # fmt: skip
        results = await self.ctx.replica_manager.delete_records(body["timeout_ms"], offsets)
        by_topic: dict[str, list[dict[str, Any]]] = {}
        for tp, (low, error) in results.items():
            by_topic.setdefault(tp.topic, []).append(
                {"partition_index": tp.partition, "low_watermark": low, "error_code": error}
            )
        return {
            "throttle_time_ms": 0,
            "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()],
        }

    async def handle_describe_log_dirs(self, request: Request) -> dict[str, Any]:
        topics = body_of(request).get("topics")
        wanted = None if topics is None else {t["topic"]: t["partitions"] for t in topics}
        return {"throttle_time_ms": 0, "results": self.ctx.log_dirs.describe_log_dirs(wanted)}

    async def handle_alter_replica_log_dirs(self, request: Request) -> dict[str, Any]:
        moves = {
            TopicPartition(t["name"], p): d["path"]
            for d in body_of(request)["dirs"] for t in d["topics"] for p in t["partitions"]
        }  # fmt: skip
        by_topic: dict[str, list[dict[str, Any]]] = {}
        for tp, error in self.ctx.log_dirs.alter_replica_log_dirs(moves).items():
            by_topic.setdefault(tp.topic, []).append(
                {"partition_index": tp.partition, "error_code": error}
            )
        return {
            "throttle_time_ms": 0,
            "results": [{"topic_name": t, "partitions": ps} for t, ps in by_topic.items()],
        }

    async def handle_offset_for_leader_epoch(self, request: Request) -> dict[str, Any]:
        body = request.body
        assert body is not None
        replica_id = body.get("replica_id", -2)
        topics = []
        for t in body["topics"]:
            parts = []
            for p in t["partitions"]:
                tp = TopicPartition(t["topic"], p["partition"])
                answer = {
                    "error_code": Errors.NONE,
                    "partition": tp.partition,
                    "leader_epoch": -1,
                    "end_offset": -1,
                }
                try:
                    epoch, end = self.ctx.replica_manager.last_offset_for_leader_epoch(
                        tp,
                        p.get("current_leader_epoch", -1),
                        p["leader_epoch"],
                        replica_id != DEBUGGING_CONSUMER_ID,
                    )
                    answer.update(leader_epoch=epoch, end_offset=end)
                except KafkaError as e:
                    answer["error_code"] = error_code_of(e)
                parts.append(answer)
            topics.append({"topic": t["topic"], "partitions": parts})
        return {"throttle_time_ms": 0, "topics": topics}

    async def handle_write_txn_markers(self, request: Request) -> dict[str, Any]:
        # authorize ClusterAction: Kafka answers CLUSTER_AUTHORIZATION_FAILED for every
        # partition of every marker when the principal may not act for the cluster
        return await self.txn_marker_writer.write_txn_markers(body_of(request))

    async def handle_describe_producers(self, request: Request) -> dict[str, Any]:
        return describe_producers(self.ctx.replica_manager, body_of(request))


def _client_metadata(request: Request) -> ClientMetadata:
    """Who sent a Fetch v11+ and from which rack (KIP-392's `rack_id`, the consumer's
    client.rack)."""
    host, _ = request.client_address
    return ClientMetadata(
        rack_id=body_of(request).get("rack_id") or "",
        client_id=request.header.client_id or "",
        client_address=host,
        principal=str(request.principal),
        listener_name=request.listener_name,
    )
