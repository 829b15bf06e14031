"""AbstractCoordinator: a client's membership of a group (Kafka's AbstractCoordinator).

The group membership protocol, once, for every kind of member: find the group's
coordinator (find_coordinator), join the group (JoinGroup with the subclass's protocol type
and metadata; MEMBER_ID_REQUIRED is answered by joining again with the member id given),
let the leader compute every member's assignment (the subclass's `perform_assignment`),
hand the assignments out (SyncGroup), heartbeat every `heartbeat.interval.ms` on a
background task, rejoin when the coordinator answers REBALANCE_IN_PROGRESS,
ILLEGAL_GENERATION or UNKNOWN_MEMBER_ID, find the coordinator anew when it answers
NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE or COORDINATOR_LOAD_IN_PROGRESS (or the
connection to it fails), and leave the group on close (LeaveGroup) so that the others
rebalance at once instead of after the session timeout.

Subclasses say what the group is for: `protocol_type` and `metadata` (what this member
offers), `on_join_prepare` (before rejoining), `perform_assignment` (on the leader) and
`on_join_complete` (this member's assignment of the new generation). Kafka's
ConsumerCoordinator (kafpy.client.consumer_coordinator) and Confluent's
SchemaRegistryCoordinator (kafpy.schema_registry.leader_elector) are the two.
"""

from __future__ import annotations

import abc
import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

from kafpy.client.find_coordinator import COORDINATOR_RETRIABLE, CoordinatorType, find_coordinator
from kafpy.client.kafka_client import KafkaClient
from kafpy.client.response_errors import error_for_code
from kafpy.common.errors import KafkaError
from kafpy.common.logger import PrefixAdapter
from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.errors import Errors

REJOIN_ERRORS: frozenset[int] = frozenset(
    {Errors.REBALANCE_IN_PROGRESS, Errors.ILLEGAL_GENERATION, Errors.UNKNOWN_MEMBER_ID}
)
"""The error codes that mean "this member's generation is over: join the group again"."""

# the coordinator answers JoinGroup once every member has joined, up to the rebalance timeout
_JOIN_TIMEOUT_MARGIN_MS = 5000


class AbstractCoordinator(abc.ABC):
    """One member of group `group_id`, its membership kept by the group protocol.

    `member_id` and `generation_id` are the member's in the current generation ("" and -1
    before it joins); `rejoin_needed` turns true when the group rebalances (the owner then
    calls `ensure_active_group` again). Timeouts are Kafka's session.timeout.ms,
    the rebalance timeout (max.poll.interval.ms for a consumer) and heartbeat.interval.ms."""

    def __init__(
        self,
        client: KafkaClient,
        group_id: str,
        *,
        session_timeout_ms: int,
        rebalance_timeout_ms: int,
        heartbeat_interval_ms: int,
        log: PrefixAdapter,
    ) -> None:
        self.client = client
        self.group_id = group_id
        self.session_timeout_ms = session_timeout_ms
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.heartbeat_interval_ms = heartbeat_interval_ms
        self.member_id = ""
        self.generation_id = -1
        self._rejoin = asyncio.Event()
        self._rejoin.set()
        self._needs_join_prepare = True
        self._coordinator: int | None = None
        self._heartbeat: asyncio.Task[None] | None = None
        self._log = log

    # what a subclass says about its group

    @abc.abstractmethod
    def protocol_type(self) -> str:
        """The group's protocol type ("consumer", "sr", ...)."""

    @abc.abstractmethod
    def metadata(self) -> Sequence[tuple[str, bytes]]:
        """The protocols this member supports, preferred first: (name, metadata)."""

    async def on_join_prepare(self, generation_id: int, member_id: str) -> None:  # noqa: B027
        """Called once before this member (re)joins: its previous assignment is over."""

    @abc.abstractmethod
    async def perform_assignment(
        self, leader_id: str, protocol: str, members: Mapping[str, bytes]
    ) -> Mapping[str, bytes]:
        """On the leader: each member's assignment, from every member's metadata (member
        id -> the metadata it joined with for `protocol`)."""

    @abc.abstractmethod
    async def on_join_complete(
        self, generation_id: int, member_id: str, protocol: str, assignment: bytes
    ) -> None:
        """This member's assignment of generation `generation_id`."""

    # the state machine

    @property
    def rejoin_needed(self) -> bool:
        """Whether this member must join the group again before it has an assignment."""
        return self._rejoin.is_set()

    @rejoin_needed.setter
    def rejoin_needed(self, needed: bool) -> None:
        if needed:
            self._rejoin.set()
        else:
            self._rejoin.clear()

    async def wait_rejoin_needed(self) -> None:
        """Wait until the group rebalances (at once when it already is)."""
        await self._rejoin.wait()

    async def _coordinator_id(self) -> int:
        if self._coordinator is None:
            self._coordinator = await find_coordinator(
                self.client,
                self.group_id,
                CoordinatorType.GROUP,
                context=f"Finding the coordinator of group {self.group_id}",
            )
        return self._coordinator

    def _mark_coordinator_unknown(self) -> None:
        self._coordinator = None

    async def _send(
        self, api_key: ApiKey, body: Mapping[str, Any], timeout_ms: int | None = None
    ) -> dict[str, Any]:
        """Send to the group's coordinator (found first if unknown); a failed request
        makes it unknown, so that the next one finds it anew."""
        node = await self._coordinator_id()
        try:
            return await self.client.send_to_node(node, api_key, body, timeout_ms=timeout_ms)
        except KafkaError:
            self._mark_coordinator_unknown()
            raise

    async def ensure_active_group(self) -> object:
        """Join (or rejoin) the group until this member has its assignment of the current
        generation, and heartbeat from then on. (A subclass may return the assignment, as
        ConsumerCoordinator its partitions.)"""
        while self.rejoin_needed:
            if self._needs_join_prepare:
                # cleared first: should the hook fail, the retry does not call it twice
                self._needs_join_prepare = False
                await self.on_join_prepare(self.generation_id, self.member_id)
            await self._join_and_sync()
        if self._heartbeat is None or self._heartbeat.done():
            self._heartbeat = asyncio.create_task(self._heartbeat_loop())
        return None

    async def _join_and_sync(self) -> None:
        """One JoinGroup and, once joined, one SyncGroup; a retriable answer returns with
        `rejoin_needed` still true."""
        join = await self._send(
            ApiKey.JOIN_GROUP,
            {
                "group_id": self.group_id,
                "session_timeout_ms": self.session_timeout_ms,
                "rebalance_timeout_ms": self.rebalance_timeout_ms,
                "member_id": self.member_id,
                "group_instance_id": None,
                "protocol_type": self.protocol_type(),
                "protocols": [{"name": n, "metadata": m} for n, m in self.metadata()],
            },
            timeout_ms=self.rebalance_timeout_ms + _JOIN_TIMEOUT_MARGIN_MS,
        )
        code = join["error_code"]
        if code == Errors.MEMBER_ID_REQUIRED:
            self.member_id = join["member_id"]
            return
        if code == Errors.UNKNOWN_MEMBER_ID:
            self.member_id = ""
            return
        if code in COORDINATOR_RETRIABLE or code == Errors.REBALANCE_IN_PROGRESS:
            if code != Errors.REBALANCE_IN_PROGRESS:
                self._mark_coordinator_unknown()
            await self.client.backoff()
            return
        if code:
            raise error_for_code(code, None, f"Joining group {self.group_id}")
        self.member_id, self.generation_id = join["member_id"], join["generation_id"]
        protocol = join["protocol_name"]
        assignments: list[dict[str, Any]] = []
        if join["leader"] == self.member_id:
            members = {m["member_id"]: m["metadata"] for m in join["members"]}
            assigned = await self.perform_assignment(self.member_id, protocol, members)
            assignments = [{"member_id": m, "assignment": a} for m, a in assigned.items()]
        sync = await self._send(
            ApiKey.SYNC_GROUP,
            {
                "group_id": self.group_id,
                "generation_id": self.generation_id,
                "member_id": self.member_id,
                "group_instance_id": None,
                "protocol_type": self.protocol_type(),
                "protocol_name": protocol,
                "assignments": assignments,
            },
        )
        code = sync["error_code"]
        if code in REJOIN_ERRORS or code in COORDINATOR_RETRIABLE:
            if code == Errors.UNKNOWN_MEMBER_ID:
                self.member_id = ""
            elif code in COORDINATOR_RETRIABLE:
                self._mark_coordinator_unknown()
            return
        if code:
            raise error_for_code(code, None, f"Syncing group {self.group_id}")
        # stable before the hook runs, so that heartbeats go on while it works (and a
        # rebalance they learn of is not forgotten when it returns)
        self.rejoin_needed = False
        self._needs_join_prepare = True
        await self.on_join_complete(
            self.generation_id, self.member_id, protocol, sync["assignment"]
        )

    async def _heartbeat_loop(self) -> None:
        while True:
            await asyncio.sleep(self.heartbeat_interval_ms / 1000)
            if self.rejoin_needed:
                continue
            generation = self.generation_id
            try:
                answer = await self._send(
                    ApiKey.HEARTBEAT,
                    {
                        "group_id": self.group_id,
                        "generation_id": generation,
                        "member_id": self.member_id,
                        "group_instance_id": None,
                    },
                )
            except KafkaError as e:
                self._log.debug("Heartbeat of group %s failed: %s", self.group_id, e)
                continue
            code = answer["error_code"]
            if code in REJOIN_ERRORS:
                if self.rejoin_needed or generation != self.generation_id:
                    continue  # about a generation this member has already left
                self._log.info("Group %s is rebalancing: rejoining", self.group_id)
                if code == Errors.UNKNOWN_MEMBER_ID:
                    self.member_id = ""
                self.rejoin_needed = True
            elif code in COORDINATOR_RETRIABLE:
                self._mark_coordinator_unknown()
            elif code:
                # as Kafka's heartbeat thread: logged, and the next heartbeat tries again
                self._log.warning(
                    "Heartbeat of group %s failed: %s",
                    self.group_id,
                    error_for_code(code, None, "Heartbeat"),
                )

    async def close(self) -> None:
        """Stop heartbeating and leave the group (a failure to leave is only logged: the
        coordinator then drops the member after its session timeout)."""
        if self._heartbeat is not None:
            self._heartbeat.cancel()
            try:
                await self._heartbeat
            except asyncio.CancelledError:
                pass
            self._heartbeat = None
        if not self.member_id:
            return
        try:
            await self._send(
                ApiKey.LEAVE_GROUP,
                {
                    "group_id": self.group_id,
                    "member_id": self.member_id,
                    "members": [{"member_id": self.member_id, "group_instance_id": None}],
                },
            )
        except KafkaError as e:
            self._log.info("Leaving group %s failed: %s", self.group_id, e)
        self.member_id = ""
        self.generation_id = -1
        self.rejoin_needed = True
