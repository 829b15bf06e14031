"""GroupMetadataManager: the groups and offsets of the __consumer_offsets partitions this broker leads.

It owns the cache of groups, writes group metadata and offset commits as records to the
group's partition of __consumer_offsets (the schemas of group_metadata_records), loads a
partition's groups and offsets from its log when this broker becomes its leader, drops
them when it stops leading, and runs the `delete-expired-group-metadata` task that
expires offsets after `offsets.retention.minutes` and removes groups left with nothing.

It talks to the broker only through `OffsetsLog`: append records as leader (internal
topics allowed) and find a partition's local log and high watermark.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol

from kafpy.common.errors import InvalidRecordError
from kafpy.common.java_hash import java_string_hash
from kafpy.common.logger import component_logger
from kafpy.common.scheduler import Scheduler
from kafpy.common.time import Time
from kafpy.common.topic_partition import TopicPartition
from kafpy.coordinator import group_metadata_records as records
from kafpy.coordinator.group_config import OffsetConfig
from kafpy.coordinator.group_metadata import GroupMetadata, GroupState
from kafpy.coordinator.internal_topic_loader import read_to_log_end
from kafpy.coordinator.member_metadata import MemberMetadata
from kafpy.coordinator.offset_and_metadata import OffsetAndMetadata
from kafpy.protocol.errors import Errors
from kafpy.records.builder import RecordBatchBuilder
from kafpy.records.control_record import ControlRecordType, control_record_type
from kafpy.records.record_batch import (
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    RecordBatch,
)
from kafpy.storage.producer_state_manager import AppendOrigin

GROUP_METADATA_TOPIC_NAME = "__consumer_offsets"


class OffsetsLog(Protocol):
    """What the manager needs from the broker's ReplicaManager."""

    async def append_records(
        self,
        timeout_ms: int,
        required_acks: int,
        entries: Mapping[TopicPartition, memoryview | bytes | None],
        internal_topics_allowed: bool = False,
        origin: AppendOrigin = AppendOrigin.CLIENT,
    ) -> dict[TopicPartition, dict[str, Any]]: ...

    def get_partition(self, tp: TopicPartition) -> Any: ...


def partition_for(group_id: str, num_partitions: int) -> int:
    """The __consumer_offsets partition of a group: Kafka's Utils.abs(hashCode) % partitions."""
    h = java_string_hash(group_id)
    return (0 if h == -(2**31) else abs(h)) % num_partitions


# Kafka maps the append errors of a group or offsets write to what a group client handles.
_STORE_ERRORS: dict[int, int] = {
    Errors.UNKNOWN_TOPIC_OR_PARTITION: Errors.COORDINATOR_NOT_AVAILABLE,
    Errors.NOT_ENOUGH_REPLICAS: Errors.COORDINATOR_NOT_AVAILABLE,
    Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND: Errors.COORDINATOR_NOT_AVAILABLE,
    Errors.REQUEST_TIMED_OUT: Errors.COORDINATOR_NOT_AVAILABLE,
    Errors.NOT_LEADER_OR_FOLLOWER: Errors.NOT_COORDINATOR,
    Errors.KAFKA_STORAGE_ERROR: Errors.NOT_COORDINATOR,
}
_TOO_LARGE = (Errors.MESSAGE_TOO_LARGE, Errors.RECORD_LIST_TOO_LARGE, Errors.INVALID_FETCH_SIZE)


def _store_error(code: int, too_large: int) -> int:
    if code in _TOO_LARGE:
        return too_large
    return _STORE_ERRORS.get(code, code)


class GroupMetadataManager:
    """Groups and committed offsets of the offsets partitions this broker leads, kept in
    memory and in __consumer_offsets."""

    def __init__(
        self,
        broker_id: int,
        config: OffsetConfig,
        offsets_log: OffsetsLog,
        time: Time,
        scheduler: Scheduler | None = None,
    ) -> None:
        self.broker_id = broker_id
        self.config = config
        self.offsets_log = offsets_log
        self.time = time
        self.scheduler = scheduler
        self.groups: dict[str, GroupMetadata] = {}
        self.owned_partitions: set[int] = set()
        self.loading_partitions: set[int] = set()
        self._load_tasks: dict[int, asyncio.Task[None]] = {}
        self._expiration_task: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.log = component_logger(
            "kafpy.coordinator.GroupMetadataManager", f"GroupMetadataManager brokerId={broker_id}"
        )

    # -- lifecycle ------------------------------------------------------------------------

    def startup(self, loop: asyncio.AbstractEventLoop | None = None) -> None:
        """Schedule delete-expired-group-metadata (it runs on the loop: the cache lives there)."""
        self._loop = loop
        if self.scheduler is not None:
            interval = self.config.offsets_retention_check_interval_ms
            self._expiration_task = self.scheduler.schedule(
                "delete-expired-group-metadata", self._cleanup_from_scheduler, interval, interval
            )

    def shutdown(self) -> None:
        if self._expiration_task is not None:
            self._expiration_task.cancel()
        for task in self._load_tasks.values():
            task.cancel()
        self._load_tasks.clear()
        self.groups.clear()
        self.owned_partitions.clear()
        self.loading_partitions.clear()

    def _cleanup_from_scheduler(self) -> None:
        loop = self._loop
        if loop is None:
            asyncio.ensure_future(self.cleanup_group_metadata())
        elif not loop.is_closed():
            loop.call_soon_threadsafe(lambda: asyncio.ensure_future(self.cleanup_group_metadata()))

    # -- placement ------------------------------------------------------------------------

    def partition_for(self, group_id: str) -> int:
        return partition_for(group_id, self.config.offsets_topic_num_partitions)

    def topic_partition_for(self, group_id: str) -> TopicPartition:
        return TopicPartition(GROUP_METADATA_TOPIC_NAME, self.partition_for(group_id))

    def is_group_local(self, group_id: str) -> bool:
        return self.partition_for(group_id) in self.owned_partitions

    def is_group_loading(self, group_id: str) -> bool:
        return self.partition_for(group_id) in self.loading_partitions

    def is_loading(self) -> bool:
        return bool(self.loading_partitions)

    # -- cache ----------------------------------------------------------------------------

    def get_group(self, group_id: str) -> GroupMetadata | None:
        return self.groups.get(group_id)

    def add_group(self, group: GroupMetadata) -> GroupMetadata:
        """Add the group unless one of that id exists; returns the one in the cache."""
        return self.groups.setdefault(group.group_id, group)

    def current_groups(self) -> list[GroupMetadata]:
        return list(self.groups.values())

    # -- writes ---------------------------------------------------------------------------

    async def _append(self, group_id: str, entries: Iterable[tuple[bytes, bytes | None]]) -> int:
        return (await self._append_batch(group_id, entries))[0]

    async def _append_batch(
        self,
        group_id: str,
        entries: Iterable[tuple[bytes, bytes | None]],
        producer_id: int = NO_PRODUCER_ID,
        producer_epoch: int = NO_PRODUCER_EPOCH,
    ) -> tuple[int, int]:
        """Write records to the group's offsets partition: (error code, the batch's base
        offset). With a producer id they are a transactional batch of that producer (a
        TxnOffsetCommit), written as the coordinator (no sequence checks; the partition
        still fences an older epoch)."""
        transactional = producer_id != NO_PRODUCER_ID
        builder = RecordBatchBuilder(
            compression=self.config.offsets_topic_compression_codec,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            base_sequence=0 if transactional else NO_SEQUENCE,
            is_transactional=transactional,
        )
        now = self.time.milliseconds()
        for key, value in entries:
            builder.append(now, key, value)
        if builder.record_count == 0:
            return Errors.NONE, -1
        tp = self.topic_partition_for(group_id)
        result = await self.offsets_log.append_records(
            self.config.offsets_commit_timeout_ms, self.config.offsets_commit_required_acks,
            {tp: builder.build()}, internal_topics_allowed=True,
            origin=AppendOrigin.COORDINATOR if transactional else AppendOrigin.CLIENT,
        )  # fmt: skip
        return int(result[tp]["error_code"]), int(result[tp].get("base_offset", -1))

    def group_metadata_value(self, group: GroupMetadata, assignment: Mapping[str, bytes]) -> bytes:
        protocol = group.protocol_name
        members = []
        for m in group.members.values():
            subscription = m.metadata(protocol) if protocol is not None else b""
            members.append({
                "member_id": m.member_id, "group_instance_id": m.group_instance_id,
                "client_id": m.client_id, "client_host": m.client_host,
                "rebalance_timeout": m.rebalance_timeout_ms, "session_timeout": m.session_timeout_ms,
                "subscription": subscription, "assignment": assignment.get(m.member_id, b""),
            })  # fmt: skip
        return records.group_metadata_value({
            "protocol_type": group.protocol_type or "", "generation": group.generation_id,
            "protocol": protocol, "leader": group.leader_id,
            "current_state_timestamp": group.current_state_timestamp_ms, "members": members,
        })  # fmt: skip

    async def store_group(self, group: GroupMetadata, assignment: Mapping[str, bytes]) -> int:
        """Write the group's metadata (with this assignment); returns a group error code."""
        value = self.group_metadata_value(group, assignment)
        code = await self._append(
            group.group_id, [(records.group_metadata_key(group.group_id), value)]
        )
        if code != Errors.NONE:
            self.log.warning(
                "Failed to write the metadata of group %s: %s", group.group_id, Errors(code).name
            )
        return _store_error(code, Errors.UNKNOWN_SERVER_ERROR)

    async def store_offsets(
        self,
        group: GroupMetadata,
        offsets: Mapping[TopicPartition, OffsetAndMetadata],
        producer_id: int = NO_PRODUCER_ID,
        producer_epoch: int = NO_PRODUCER_EPOCH,
    ) -> dict[TopicPartition, int]:
        """Write offset commits; on success they become the group's committed offsets,
        or, from a transactional producer (TxnOffsetCommit), its pending offsets until the
        transaction's marker. Returns an error code per partition."""
        result: dict[TopicPartition, int] = {}
        valid: dict[TopicPartition, OffsetAndMetadata] = {}
        for tp, om in offsets.items():
            if len(om.metadata.encode("utf-8")) > self.config.max_metadata_size:
                result[tp] = Errors.OFFSET_METADATA_TOO_LARGE
            else:
                valid[tp] = om
        if not valid:
            return result
        for tp in valid:
            group.pending_offset_commits[tp] = group.pending_offset_commits.get(tp, 0) + 1
        try:
            code, record_offset = await self._append_batch(
                group.group_id,
                [(records.offset_commit_key(group.group_id, tp), records.offset_commit_value(om))
                 for tp, om in valid.items()],
                producer_id, producer_epoch,
            )  # fmt: skip
        finally:
            for tp in valid:
                left = group.pending_offset_commits.get(tp, 1) - 1
                if left > 0:
                    group.pending_offset_commits[tp] = left
                else:
                    group.pending_offset_commits.pop(tp, None)
        code = _store_error(code, Errors.INVALID_COMMIT_OFFSET_SIZE)
        if code == Errors.NONE and not group.is_in(GroupState.DEAD):
            if producer_id != NO_PRODUCER_ID:
                group.prepare_txn_offset_commit(producer_id, valid, record_offset)
            else:
                group.record_offset_commit(valid, record_offset)
        elif code != Errors.NONE:
            self.log.debug(
                "Offset commit of group %s failed: %s", group.group_id, Errors(code).name
            )
        for tp in valid:
            result[tp] = code
        return result

    def get_offsets(
        self, group_id: str, partitions: list[TopicPartition] | None
    ) -> dict[TopicPartition, OffsetAndMetadata | None]:
        """Committed offsets (all of the group's when `partitions` is None); None where none."""
        group = self.groups.get(group_id)
        if group is None or group.is_in(GroupState.DEAD):
            return {} if partitions is None else dict.fromkeys(partitions)
        if partitions is None:
            return dict(group.offsets)
        return {tp: group.offsets.get(tp) for tp in partitions}

    async def delete_groups(self, groups: list[GroupMetadata]) -> None:
        """Write tombstones for the groups' offsets and metadata (they are Dead already)."""
        for group in groups:
            tombstones: list[tuple[bytes, bytes | None]] = [
                (records.offset_commit_key(group.group_id, tp), None) for tp in group.offsets
            ]
            tombstones.append((records.group_metadata_key(group.group_id), None))
            group.offsets.clear()
            if self.groups.get(group.group_id) is group:
                del self.groups[group.group_id]
            code = await self._append(group.group_id, tombstones)
            if code != Errors.NONE:
                self.log.warning(
                    "Failed to write tombstones of group %s: %s", group.group_id, Errors(code).name
                )

    async def delete_offsets(self, group: GroupMetadata, partitions: list[TopicPartition]) -> int:
        """OffsetDelete: drop these committed offsets and write their tombstones; an empty
        group left without offsets becomes Dead (Kafka's cleanupGroupMetadata). Returns how
        many offsets were removed."""
        removed = [tp for tp in partitions if group.offsets.pop(tp, None) is not None]
        tombstones: list[tuple[bytes, bytes | None]] = [
            (records.offset_commit_key(group.group_id, tp), None) for tp in removed
        ]
        if group.is_in(GroupState.EMPTY) and not group.has_offsets():
            group.transition_to(GroupState.DEAD, self.time.milliseconds())
            self.groups.pop(group.group_id, None)
            tombstones.append((records.group_metadata_key(group.group_id), None))
        code = await self._append(group.group_id, tombstones)
        if code != Errors.NONE:
            self.log.warning(
                "Failed to write offset tombstones of group %s: %s",
                group.group_id,
                Errors(code).name,
            )
        return len(removed)

    def handle_txn_completion(
        self, producer_id: int, partitions: set[int], is_commit: bool
    ) -> None:
        """A COMMIT or ABORT marker of `producer_id` reached these offsets partitions:
        complete the transaction's pending offsets of their groups (Kafka's
        handleTxnCompletion)."""
        for group in list(self.groups.values()):
            if (
                producer_id in group.pending_txn_offset_commits
                and self.partition_for(group.group_id) in partitions
            ):
                group.complete_pending_txn_offset_commit(producer_id, is_commit)
                self.log.debug(
                    "Completed the transactional offsets of producer %d in group %s (%s)",
                    producer_id, group.group_id, "commit" if is_commit else "abort",
                )  # fmt: skip

    # -- expiration -----------------------------------------------------------------------

    def expired_offsets(self, group: GroupMetadata, now_ms: int) -> list[TopicPartition]:
        """Offsets past their retention (Kafka 2.1+: the clock starts when the group became
        Empty; for a consumer group still running, offsets of topics it no longer subscribes
        to expire from their commit time; an explicit expiry time always wins)."""
        retention = self.config.offsets_retention_ms
        if group.is_in(GroupState.EMPTY):
            base: Callable[[OffsetAndMetadata], int] = lambda om: (  # noqa: E731
                group.current_state_timestamp_ms
                if group.current_state_timestamp_ms >= 0
                else om.commit_timestamp
            )
            candidates = list(group.offsets)
        else:
            subscribed = group.subscribed_topics()
            if subscribed is None:
                candidates = [
                    tp for tp, om in group.offsets.items() if om.expire_timestamp is not None
                ]
            else:
                candidates = [tp for tp in group.offsets if tp.topic not in subscribed]
            base = lambda om: om.commit_timestamp  # noqa: E731
        out = []
        for tp in candidates:
            if tp in group.pending_offset_commits:
                continue
            om = group.offsets[tp]
            expires = (
                om.expire_timestamp if om.expire_timestamp is not None else base(om) + retention
            )
            if now_ms >= expires:
                out.append(tp)
        return out

    async def cleanup_group_metadata(self) -> int:
        """Expire offsets and drop empty groups with no offsets left; returns how many
        offsets expired."""
        now = self.time.milliseconds()
        total = 0
        for group in list(self.groups.values()):
            if group.is_in(GroupState.DEAD):
                continue
            expired = self.expired_offsets(group, now)
            for tp in expired:
                del group.offsets[tp]
            tombstones: list[tuple[bytes, bytes | None]] = [
                (records.offset_commit_key(group.group_id, tp), None) for tp in expired
            ]
            if group.is_in(GroupState.EMPTY) and not group.has_offsets():
                group.transition_to(GroupState.DEAD, now)
                self.groups.pop(group.group_id, None)
                tombstones.append((records.group_metadata_key(group.group_id), None))
                self.log.info(
                    "Group %s transitioned to Dead in generation %d",
                    group.group_id,
                    group.generation_id,
                )
            total += len(expired)
            if tombstones and self.partition_for(group.group_id) in self.owned_partitions:
                await self._append(group.group_id, tombstones)
        if total:
            self.log.info(
                "Removed %d expired offsets in %d milliseconds.",
                total,
                self.time.milliseconds() - now,
            )
        return total

    # -- leadership -----------------------------------------------------------------------

    def schedule_load(
        self, partition: int, on_group_loaded: Callable[[GroupMetadata], None]
    ) -> None:
        """Become the coordinator of an offsets partition: load it in the background
        (requests for its groups get COORDINATOR_LOAD_IN_PROGRESS meanwhile)."""
        if partition in self.owned_partitions or partition in self.loading_partitions:
            return
        self.log.info(
            "Scheduling loading of offsets and group metadata from %s-%d",
            GROUP_METADATA_TOPIC_NAME,
            partition,
        )
        self.loading_partitions.add(partition)
        self._load_tasks[partition] = asyncio.ensure_future(self._load(partition, on_group_loaded))

    async def _load(self, partition: int, on_group_loaded: Callable[[GroupMetadata], None]) -> None:
        start = self.time.milliseconds()
        try:
            groups = await self.load_partition(partition)
            if partition not in self.loading_partitions:
                return  # resigned meanwhile
            for group in groups:
                if group.group_id in self.groups:
                    continue
                self.groups[group.group_id] = group
                on_group_loaded(group)
            self.owned_partitions.add(partition)
            self.log.info(
                "Finished loading offsets and group metadata from %s-%d in %d milliseconds.",
                GROUP_METADATA_TOPIC_NAME, partition, self.time.milliseconds() - start,
            )  # fmt: skip
        except asyncio.CancelledError:
            raise
        except Exception:
            self.log.exception(
                "Error loading offsets from %s-%d", GROUP_METADATA_TOPIC_NAME, partition
            )
        finally:
            self.loading_partitions.discard(partition)
            self._load_tasks.pop(partition, None)

    async def load_partition(self, partition: int) -> list[GroupMetadata]:
        """Read one offsets partition from its log start to its log end offset and rebuild
        its groups and offsets (later records win; tombstones delete). To the log end, not the
        high watermark, as Kafka 2.8's loadGroupsAndOffsets (FetchLogEnd): a new leader's own
        log is what the group's state is from now on, replicated or not yet."""
        tp = TopicPartition(GROUP_METADATA_TOPIC_NAME, partition)
        p = self.offsets_log.get_partition(tp)
        log = None if p is None else p.log
        if log is None:
            return []
        # group -> partition -> (offset of the record that wrote it, the offset committed)
        offsets: dict[str, dict[TopicPartition, tuple[int, OffsetAndMetadata]]] = {}
        # transactional offset commits by producer id, until their marker is read
        pending: dict[
            int, dict[str, dict[TopicPartition, tuple[int, OffsetAndMetadata | None]]]
        ] = {}
        group_values: dict[str, dict[str, Any] | None] = {}
        async for batch in read_to_log_end(log, self.config.offsets_load_buffer_size):
            if batch.is_control:
                _replay_marker(batch, pending, offsets)
                continue
            for record in batch.records():
                if record.key is None:
                    continue
                key = records.read_key(record.key)
                if isinstance(key, records.OffsetKey):
                    om = None if record.value is None else records.read_offset_value(record.value)
                    if batch.is_transactional:
                        by_producer = pending.setdefault(batch.producer_id, {})
                        by_group = by_producer.setdefault(key.group, {})
                        by_group[key.topic_partition] = (record.offset, om)
                        continue
                    by_tp = offsets.setdefault(key.group, {})
                    if om is None:
                        by_tp.pop(key.topic_partition, None)
                    else:
                        by_tp[key.topic_partition] = (record.offset, om)
                else:
                    group_values[key.group] = (
                        None if record.value is None else records.read_group_value(record.value)
                    )
        now = self.time.milliseconds()
        out: list[GroupMetadata] = []
        open_groups = [g for by_group in pending.values() for g in by_group]
        for group_id in dict.fromkeys([*group_values, *offsets, *open_groups]):
            value = group_values.get(group_id)
            group_offsets = offsets.get(group_id, {})
            open_txns = {
                pid: {tp: (at, om) for tp, (at, om) in by_group[group_id].items() if om is not None}
                for pid, by_group in pending.items()
                if group_id in by_group
            }
            if value is None and not group_offsets and not any(open_txns.values()):
                continue
            group = GroupMetadata(group_id, GroupState.EMPTY, now)
            if value is not None:
                _restore(group, value)
            for tp, (at, om) in group_offsets.items():
                group.record_offset_commit({tp: om}, at)
            for pid, txn_offsets in open_txns.items():
                for tp, (at, om) in txn_offsets.items():
                    group.prepare_txn_offset_commit(pid, {tp: om}, at)
            out.append(group)
        return out

    def remove_groups_for_partition(
        self, partition: int, on_group_unloaded: Callable[[GroupMetadata], None]
    ) -> None:
        """Stop coordinating an offsets partition: drop its groups from the cache."""
        self.loading_partitions.discard(partition)
        task = self._load_tasks.pop(partition, None)
        if task is not None:
            task.cancel()
        if partition not in self.owned_partitions:
            return
        self.owned_partitions.discard(partition)
        removed = 0
        for group_id in [g for g in self.groups if self.partition_for(g) == partition]:
            group = self.groups.pop(group_id)
            on_group_unloaded(group)
            removed += 1
        self.log.info("Unloaded %d groups of %s-%d", removed, GROUP_METADATA_TOPIC_NAME, partition)


def _replay_marker(
    batch: RecordBatch,
    pending: dict[int, dict[str, dict[TopicPartition, tuple[int, OffsetAndMetadata | None]]]],
    offsets: dict[str, dict[TopicPartition, tuple[int, OffsetAndMetadata]]],
) -> None:
    """A transaction marker read while loading: a COMMIT makes its producer's pending
    offset commits the groups' offsets (unless one written later is there), an ABORT
    drops them."""
    by_group = pending.pop(batch.producer_id, None)
    if by_group is None:
        return
    try:
        committed = control_record_type(batch) is ControlRecordType.COMMIT
    except InvalidRecordError:
        return  # an empty control batch (the cleaner removed its transaction)
    if not committed:
        return
    for group_id, txn_offsets in by_group.items():
        by_tp = offsets.setdefault(group_id, {})
        for tp, (at, om) in txn_offsets.items():
            current = by_tp.get(tp)
            if current is not None and current[0] > at:
                continue  # a later commit of the partition wins
            if om is None:
                by_tp.pop(tp, None)
            else:
                by_tp[tp] = (at, om)


def _restore(group: GroupMetadata, value: Mapping[str, Any]) -> None:
    """Rebuild a loaded group from its metadata record (Stable with members, or Empty)."""
    group.protocol_type = value["protocol_type"] or None
    group.generation_id = value["generation"]
    group.protocol_name = value["protocol"]
    group.leader_id = value["leader"]
    if value.get("current_state_timestamp", -1) >= 0:
        group.current_state_timestamp_ms = value["current_state_timestamp"]
    for m in value["members"]:
        member = MemberMetadata(
            m["member_id"], m["group_instance_id"], m["client_id"], m["client_host"],
            m["rebalance_timeout"], m["session_timeout"], group.protocol_type or "",
            [(group.protocol_name or "", m["subscription"])], assignment=m["assignment"],
        )  # fmt: skip
        group.members[member.member_id] = member
        if member.group_instance_id is not None:
            group.static_members[member.group_instance_id] = member.member_id
    group.state = GroupState.STABLE if group.members else GroupState.EMPTY
