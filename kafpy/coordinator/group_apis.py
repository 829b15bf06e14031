"""GroupApis: the group APIs' request and response bodies, translated to GroupCoordinator calls.

KafkaApis hands each group request's decoded body here (with the client id and address)
and encodes the dict that comes back. JoinGroup and SyncGroup wait for the rebalance
through a future completed by the coordinator's callback.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from kafpy.common.topic_partition import TopicPartition
from kafpy.coordinator.group_coordinator import GroupCoordinator
from kafpy.coordinator.group_metadata import GroupState
from kafpy.coordinator.offset_and_metadata import NO_LEADER_EPOCH, OffsetAndMetadata
from kafpy.protocol.acl_operations import GROUP_OPERATIONS, to_bit_field
from kafpy.protocol.errors import Errors
from kafpy.protocol.messages.describe_groups import AUTHORIZED_OPERATIONS_OMITTED

INVALID_OFFSET = -1


class GroupApis:
    """Request bodies in, response bodies out, for JoinGroup, SyncGroup, Heartbeat,
    LeaveGroup, OffsetCommit, TxnOffsetCommit, OffsetFetch, OffsetDelete, ListGroups,
    DescribeGroups and DeleteGroups.

    `partition_exists(tp)`: whether the cluster has the partition (a commit to an unknown
    one gets UNKNOWN_TOPIC_OR_PARTITION, as Kafka answers).
    """

    def __init__(
        self, coordinator: GroupCoordinator, partition_exists: Callable[[TopicPartition], bool]
    ) -> None:
        self.coordinator = coordinator
        self.partition_exists = partition_exists

    def _requested_partitions(
        self, body: dict[str, Any]
    ) -> tuple[
        list[TopicPartition], dict[TopicPartition, dict[str, Any]], dict[TopicPartition, int]
    ]:
        """The partitions of a request's `topics` in request order, those the cluster has
        with their request entry (a repeated one: its last), and UNKNOWN_TOPIC_OR_PARTITION
        for the others."""
        order: list[TopicPartition] = []
        known: dict[TopicPartition, dict[str, Any]] = {}
        errors: dict[TopicPartition, int] = {}
        for t in body["topics"]:
            for p in t["partitions"]:
                tp = TopicPartition(t["name"], p["partition_index"])
                order.append(tp)
                if self.partition_exists(tp):
                    known[tp] = p
                else:
                    errors[tp] = Errors.UNKNOWN_TOPIC_OR_PARTITION
        return order, known, errors

    # -- membership -----------------------------------------------------------------------

    async def join_group(
        self, body: dict[str, Any], version: int, client_id: str, client_host: str
    ) -> dict[str, Any]:
        future, done = _response_future()

        rebalance_timeout = body.get("rebalance_timeout_ms", -1)
        session_timeout = body["session_timeout_ms"]
        self.coordinator.handle_join_group(
            body["group_id"], body["member_id"], body.get("group_instance_id") if version >= 5 else None,
            version >= 4, client_id, client_host,
            session_timeout if version == 0 or rebalance_timeout < 0 else rebalance_timeout, session_timeout,
            body["protocol_type"], [(p["name"], bytes(p["metadata"])) for p in body["protocols"]], done,
        )  # fmt: skip
        response = await future
        response.setdefault("throttle_time_ms", 0)
        if version >= 7 and not response.get("protocol_name"):
            response["protocol_name"] = None  # v7+ says "no protocol" with null, as Kafka does
        return response

    async def sync_group(self, body: dict[str, Any], version: int) -> dict[str, Any]:
        future, done = _response_future()

        if version >= 5 and (
            body.get("protocol_type") is None or body.get("protocol_name") is None
        ):
            # v5+ must name the protocol type and name the member joined with
            return {"throttle_time_ms": 0, "error_code": Errors.INCONSISTENT_GROUP_PROTOCOL,
                    "protocol_type": None, "protocol_name": None, "assignment": b""}  # fmt: skip
        assignments = {a["member_id"]: bytes(a["assignment"]) for a in body["assignments"]}
        self.coordinator.handle_sync_group(
            body["group_id"], body["generation_id"], body["member_id"],
            body.get("group_instance_id") if version >= 3 else None, assignments, done,
            body.get("protocol_type") if version >= 5 else None,
            body.get("protocol_name") if version >= 5 else None,
        )  # fmt: skip
        response = await future
        response.setdefault("throttle_time_ms", 0)
        return response

    async def heartbeat(self, body: dict[str, Any], version: int) -> dict[str, Any]:
        error = self.coordinator.handle_heartbeat(
            body["group_id"], body["member_id"], body.get("group_instance_id") if version >= 3 else None,
            body["generation_id"],
        )  # fmt: skip
        return {"throttle_time_ms": 0, "error_code": error}

    async def leave_group(self, body: dict[str, Any], version: int) -> dict[str, Any]:
        if version >= 3:
            leaving = [(m["member_id"], m.get("group_instance_id")) for m in body["members"]]
        else:
            leaving = [(body["member_id"], None)]
        error, errors = self.coordinator.handle_leave_group(body["group_id"], leaving)
        if version < 3 and error == Errors.NONE and errors:
            error = errors[0]
        return {
            "throttle_time_ms": 0,
            "error_code": error,
            "members": [
                {"member_id": m, "group_instance_id": i, "error_code": e}
                for (m, i), e in zip(leaving, errors, strict=True)
            ],
        }

    # -- offsets --------------------------------------------------------------------------

    async def offset_commit(self, body: dict[str, Any], version: int) -> dict[str, Any]:
        now = self.coordinator.time.milliseconds()
        retention = body.get("retention_time_ms", -1) if 2 <= version <= 4 else -1
        order, known, errors = self._requested_partitions(body)
        offsets: dict[TopicPartition, OffsetAndMetadata] = {}
        for tp, p in known.items():
            commit_ts = p.get("commit_timestamp", -1) if version == 1 else -1
            commit_ts = now if commit_ts < 0 else commit_ts
            expire = commit_ts + retention if retention >= 0 else None
            offsets[tp] = OffsetAndMetadata(
                p["committed_offset"], p.get("committed_leader_epoch", NO_LEADER_EPOCH) if version >= 6 else
                NO_LEADER_EPOCH, p.get("committed_metadata") or "", commit_ts, expire,
            )  # fmt: skip
        if offsets:
            errors.update(await self.coordinator.handle_commit_offsets(
                body["group_id"], body.get("member_id", ""),
                body.get("group_instance_id") if version >= 7 else None,
                body.get("generation_id_or_member_epoch", -1) if version >= 1 else -1, offsets,
            ))  # fmt: skip
        return {"throttle_time_ms": 0, "topics": _partition_errors_by_topic(order, errors)}

    async def txn_offset_commit(self, body: dict[str, Any], version: int) -> dict[str, Any]:
        """TxnOffsetCommit (v0-3): a transactional producer's offsets for a group; v3
        carries the group's generation and member (KIP-447)."""
        # authorize Read on the group and Write on the transactional id (Kafka checks both;
        # the ACL engineer adds them here)
        now = self.coordinator.time.milliseconds()
        order, known, errors = self._requested_partitions(body)
        offsets: dict[TopicPartition, OffsetAndMetadata] = {}
        for tp, p in known.items():
            epoch = (
                p.get("committed_leader_epoch", NO_LEADER_EPOCH)
                if version >= 2
                else NO_LEADER_EPOCH
            )
            offsets[tp] = OffsetAndMetadata(
                p["committed_offset"], epoch, p.get("committed_metadata") or "", now
            )  # fmt: skip
        if offsets:
            errors.update(await self.coordinator.handle_txn_commit_offsets(
                body["group_id"], body["producer_id"], body["producer_epoch"],
                body.get("member_id", "") if version >= 3 else "",
                body.get("group_instance_id") if version >= 3 else None,
                body.get("generation_id", -1) if version >= 3 else -1, offsets,
            ))  # fmt: skip
        return {"throttle_time_ms": 0, "topics": _partition_errors_by_topic(order, errors)}

    async def offset_fetch(self, body: dict[str, Any], version: int) -> dict[str, Any]:
        topics = body.get("topics")
        requested = None if topics is None else [
            TopicPartition(t["name"], p) for t in topics for p in t["partition_indexes"]
        ]  # fmt: skip
        error, offsets = self.coordinator.handle_fetch_offsets(body["group_id"], requested)
        if error != Errors.NONE:
            if version >= 2:
                return {"throttle_time_ms": 0, "topics": [], "error_code": error}
            offsets = dict.fromkeys(requested or ())
        # v7 (KIP-447): a consumer asking for stable offsets must not read over an open
        # transaction's pending commit
        unstable = (
            self.coordinator.unstable_offsets(body["group_id"])
            if version >= 7 and body.get("require_stable") and requested is not None
            else set()
        )
        by_topic: dict[str, list[dict[str, Any]]] = {}
        for tp, om in offsets.items():
            if tp in unstable:
                om = None
            by_topic.setdefault(tp.topic, []).append({
                "partition_index": tp.partition,
                "committed_offset": INVALID_OFFSET if om is None else om.offset,
                "committed_leader_epoch": NO_LEADER_EPOCH if om is None else om.leader_epoch,
                "metadata": "" if om is None else om.metadata,
                "error_code": Errors.UNSTABLE_OFFSET_COMMIT if tp in unstable else error,
            })  # fmt: skip
        return {"throttle_time_ms": 0, "error_code": Errors.NONE,
                "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()]}  # fmt: skip

    # -- groups ---------------------------------------------------------------------------

    async def offset_delete(self, body: dict[str, Any], version: int) -> dict[str, Any]:
        """OffsetDelete (KIP-496): partitions of unknown topics answer UNKNOWN_TOPIC_OR_PARTITION;
        the coordinator deletes the rest unless the group still consumes their topic."""
        order, known, errors = self._requested_partitions(body)
        error, deleted = await self.coordinator.handle_delete_offsets(body["group_id"], list(known))
        if error != Errors.NONE:
            return {"error_code": error, "throttle_time_ms": 0, "topics": []}
        errors.update(deleted)
        return {"error_code": Errors.NONE, "throttle_time_ms": 0,
                "topics": _partition_errors_by_topic(order, errors)}  # fmt: skip

    async def list_groups(self, body: dict[str, Any], version: int) -> dict[str, Any]:
        error, groups = self.coordinator.handle_list_groups()
        states = set(body.get("states_filter") or ()) if version >= 4 else set()
        if states:  # KIP-518: only groups in these states (Kafka's state names, matched exactly)
            groups = [g for g in groups if g.state.value in states]
        return {
            "throttle_time_ms": 0,
            "error_code": error,
            "groups": [{"group_id": g.group_id, "protocol_type": g.protocol_type or "", "group_state": g.state.value}
                       for g in groups],
        }  # fmt: skip

    async def describe_groups(self, body: dict[str, Any], version: int) -> dict[str, Any]:
        operations = AUTHORIZED_OPERATIONS_OMITTED
        if version >= 3 and body.get("include_authorized_operations"):
            operations = to_bit_field(GROUP_OPERATIONS)  # no authorizer: all a group supports
        out = []
        for group_id in body["groups"]:
            error, group = self.coordinator.handle_describe_group(group_id)
            entry: dict[str, Any] = {"error_code": error, "group_id": group_id, "group_state": "",
                                     "protocol_type": "", "protocol_data": "", "members": []}  # fmt: skip
            if error == Errors.NONE:
                entry["authorized_operations"] = operations
                if group is None:
                    entry["group_state"] = GroupState.DEAD.value
                else:
                    stable = group.is_in(GroupState.STABLE)
                    entry.update(
                        group_state=group.state.value, protocol_type=group.protocol_type or "",
                        protocol_data=(group.protocol_name or "") if stable else "",
                        members=[{
                            "member_id": m.member_id, "group_instance_id": m.group_instance_id,
                            "client_id": m.client_id, "client_host": m.client_host,
                            "member_metadata": m.metadata(group.protocol_name)
                            if stable and group.protocol_name is not None else b"",
                            "member_assignment": m.assignment if stable else b"",
                        } for m in group.members.values()],
                    )  # fmt: skip
            out.append(entry)
        return {"throttle_time_ms": 0, "groups": out}

    async def delete_groups(self, body: dict[str, Any], version: int) -> dict[str, Any]:
        names = list(dict.fromkeys(body["groups_names"]))
        results = await self.coordinator.handle_delete_groups(names)
        return {
            "throttle_time_ms": 0,
            "results": [{"group_id": g, "error_code": results[g]} for g in names],
        }


def _response_future() -> tuple[asyncio.Future[dict[str, Any]], Callable[[dict[str, Any]], None]]:
    """A future for the response the coordinator's callback completes, and that callback
    (a second call is ignored)."""
    future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()

    def done(response: dict[str, Any]) -> None:
        if not future.done():
            future.set_result(response)

    return future, done


def _partition_errors_by_topic(
    order: list[TopicPartition], errors: dict[TopicPartition, int]
) -> list[dict[str, Any]]:
    """The response's topics: each requested partition once, in request order, with its
    error code."""
    by_topic: dict[str, list[dict[str, int]]] = {}
    for tp in dict.fromkeys(order):
        by_topic.setdefault(tp.topic, []).append(
            {"partition_index": tp.partition, "error_code": errors[tp]}
        )
    return [{"name": t, "partitions": ps} for t, ps in by_topic.items()]
