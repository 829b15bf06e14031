"""KafkaGroupLeaderElector: which registry instance writes, chosen through a Kafka group
(Confluent's KafkaGroupLeaderElector, SchemaRegistryCoordinator and SchemaRegistryProtocol).

Every instance joins the group `schema.registry.group.id` with protocol type "sr" and
sub-protocol "v0", its metadata the JSON of its identity:

    {"host":"10.0.0.5","port":8081,"master_eligibility":true,"scheme":"http","version":1}

The group's Kafka leader assigns: the leader-eligible member with the smallest URL leads,
and every member receives the same assignment

    {"version":1,"error":0,"master":"<member id>","master_identity":{...}}

(error 1 when two members have the same URL, as Confluent: no leader then). The elector
heartbeats, rejoins when the group rebalances, and tells the registry who leads after each
rebalance (None while it rebalances). Confluent instances and kafpy instances can share one
group: the formats are Confluent's.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kafpy.client.find_coordinator import COORDINATOR_RETRIABLE, CoordinatorType, find_coordinator
from kafpy.client.kafka_client import KafkaClient
from kafpy.client.response_errors import error_for_code
from kafpy.common.errors import KafkaError
from kafpy.common.logger import component_logger
from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.errors import Errors

PROTOCOL_TYPE = "sr"
SUBPROTOCOL_V0 = "v0"
ASSIGNMENT_VERSION = 1
NO_ERROR = 0
DUPLICATE_URLS = 1
SESSION_TIMEOUT_MS = 10000
HEARTBEAT_INTERVAL_MS = 3000
REBALANCE_TIMEOUT_MS = 10000
_REJOIN = (Errors.REBALANCE_IN_PROGRESS, Errors.ILLEGAL_GENERATION, Errors.UNKNOWN_MEMBER_ID)


@dataclass(frozen=True)
class SchemaRegistryIdentity:
    """An instance as the group knows it: where it serves and whether it may lead."""

    host: str
    port: int
    leader_eligibility: bool = True
    scheme: str = "http"

    @property
    def url(self) -> str:
        return f"{self.scheme}://{self.host}:{self.port}"

    def as_json(self) -> dict[str, Any]:
        return {
            "host": self.host,
            "port": self.port,
            "master_eligibility": self.leader_eligibility,
            "scheme": self.scheme,
            "version": 1,
        }

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> SchemaRegistryIdentity:
        return cls(
            str(obj["host"]),
            int(obj["port"]),
            bool(obj.get("master_eligibility", True)),
            str(obj.get("scheme") or "http"),
        )


def assign(members: Mapping[str, SchemaRegistryIdentity]) -> dict[str, Any]:
    """The assignment every member receives: the eligible member with the smallest URL
    leads; two members with one URL is an error (no leader)."""
    eligible = sorted(
        (
            (identity.url, member)
            for member, identity in members.items()
            if identity.leader_eligibility
        )
    )
    urls = {identity.url for identity in members.values()}
    if len(urls) != len(members):
        return {"version": ASSIGNMENT_VERSION, "error": DUPLICATE_URLS}
    if not eligible:
        return {"version": ASSIGNMENT_VERSION, "error": NO_ERROR}
    leader = eligible[0][1]
    return {
        "version": ASSIGNMENT_VERSION,
        "error": NO_ERROR,
        "master": leader,
        "master_identity": members[leader].as_json(),
    }


LeaderListener = Callable[[SchemaRegistryIdentity | None], Awaitable[None]]
"""Told the leader after each rebalance (None: no leader, or a rebalance under way)."""


class KafkaGroupLeaderElector:
    """This instance's membership of the registries' group, on its own KafkaClient."""

    def __init__(
        self,
        client: KafkaClient,
        group_id: str,
        identity: SchemaRegistryIdentity,
        on_leader: LeaderListener,
    ) -> None:
        self.client = client
        self.group_id = group_id
        self.identity = identity
        self.on_leader = on_leader
        self.member_id = ""
        self.generation_id = -1
        self._coordinator: int | None = None
        self._task: asyncio.Task[None] | None = None
        self._assigned = asyncio.Event()
        self._log = component_logger(__name__, "KafkaGroupLeaderElector", group_id)

    async def start(self) -> None:
        """Join the group in the background."""
        await self.client.start()
        self._task = asyncio.create_task(self._run(), name="schema-registry-leader-elector")

    async def wait_assigned(self) -> None:
        """Wait for the first rebalance to finish."""
        await self._assigned.wait()

    async def _coordinator_id(self) -> int:
        if self._coordinator is None:
            self._coordinator = await find_coordinator(
                self.client, self.group_id, CoordinatorType.GROUP,
                context=f"Finding the coordinator of group {self.group_id}",
            )  # fmt: skip
        return self._coordinator

    async def _send(
        self, api_key: ApiKey, body: Mapping[str, Any], timeout_ms: int | None = None
    ) -> dict[str, Any]:
        node = await self._coordinator_id()
        try:
            return await self.client.send_to_node(node, api_key, body, timeout_ms=timeout_ms)
        except KafkaError:
            self._coordinator = None
            raise

    async def _run(self) -> None:
        while True:
            try:
                while not await self._join_and_sync():
                    pass
                await self._heartbeat_until_rebalance()
            except asyncio.CancelledError:
                raise
            except Exception as e:  # the elector outlives any failure, and logs it
                self._log.warning(f"Membership of group {self.group_id} failed: {e}; retrying")
                self._coordinator = None
                await asyncio.sleep(self.client.retry_backoff_ms / 1000)
            await self.on_leader(None)

    async def _join_and_sync(self) -> bool:
        """One JoinGroup and SyncGroup; True once this member has its assignment."""
        join = await self._send(
            ApiKey.JOIN_GROUP,
            {
                "group_id": self.group_id,
                "session_timeout_ms": SESSION_TIMEOUT_MS,
                "rebalance_timeout_ms": REBALANCE_TIMEOUT_MS,
                "member_id": self.member_id,
                "group_instance_id": None,
                "protocol_type": PROTOCOL_TYPE,
                "protocols": [
                    {
                        "name": SUBPROTOCOL_V0,
                        "metadata": json.dumps(self.identity.as_json()).encode(),
                    }
                ],
            },
            timeout_ms=REBALANCE_TIMEOUT_MS + 5000,
        )
        code = join["error_code"]
        if code in (Errors.MEMBER_ID_REQUIRED, Errors.UNKNOWN_MEMBER_ID):
            self.member_id = join["member_id"] if code == Errors.MEMBER_ID_REQUIRED else ""
            return False
        if code in COORDINATOR_RETRIABLE or code == Errors.REBALANCE_IN_PROGRESS:
            if code != Errors.REBALANCE_IN_PROGRESS:
                self._coordinator = None
            await self.client.backoff()
            return False
        if code:
            raise error_for_code(code, None, f"Joining group {self.group_id}")
        self.member_id, self.generation_id = join["member_id"], join["generation_id"]
        assignments = []
        if join["leader"] == self.member_id:
            members = {}
            for m in join["members"]:
                try:
                    members[m["member_id"]] = SchemaRegistryIdentity.from_json(
                        json.loads(m["metadata"])
                    )
                except (ValueError, KeyError, TypeError) as e:
                    self._log.warning(
                        f"Member {m['member_id']} has metadata that is not an identity: {e}"
                    )
            assignment = json.dumps(assign(members)).encode()
            assignments = [{"member_id": m, "assignment": assignment} for m in members]
        sync = await self._send(
            ApiKey.SYNC_GROUP,
            {
                "group_id": self.group_id,
                "generation_id": self.generation_id,
                "member_id": self.member_id,
                "group_instance_id": None,
                "protocol_type": PROTOCOL_TYPE,
                "protocol_name": SUBPROTOCOL_V0,
                "assignments": assignments,
            },
        )
        code = sync["error_code"]
        if code in _REJOIN or code in COORDINATOR_RETRIABLE:
            if code == Errors.UNKNOWN_MEMBER_ID:
                self.member_id = ""
            return False
        if code:
            raise error_for_code(code, None, f"Syncing group {self.group_id}")
        leader = self._leader_of(sync["assignment"])
        self._log.info(
            f"Finished rebalance with leader election result: "
            f"{'no leader' if leader is None else leader.url} (generation {self.generation_id})"
        )
        await self.on_leader(leader)
        self._assigned.set()
        return True

    def _leader_of(self, data: bytes | None) -> SchemaRegistryIdentity | None:
        try:
            assignment = json.loads(data or b"{}")
            if assignment.get("error", NO_ERROR) != NO_ERROR:
                self._log.error(
                    "Found duplicate URLs for schema registry group members: set host.name "
                    "on each instance to a name the others can reach it by"
                )
                return None
            identity = assignment.get("master_identity")
            return None if identity is None else SchemaRegistryIdentity.from_json(identity)
        except (ValueError, KeyError, TypeError, AttributeError) as e:
            self._log.error(f"The group's assignment is not a schema registry assignment: {e}")
            return None

    async def _heartbeat_until_rebalance(self) -> None:
        while True:
            await asyncio.sleep(HEARTBEAT_INTERVAL_MS / 1000)
            answer = await self._send(
                ApiKey.HEARTBEAT,
                {
                    "group_id": self.group_id,
                    "generation_id": self.generation_id,
                    "member_id": self.member_id,
                    "group_instance_id": None,
                },
            )
            code = answer["error_code"]
            if code in _REJOIN:
                if code == Errors.UNKNOWN_MEMBER_ID:
                    self.member_id = ""
                self._log.info(f"Group {self.group_id} is rebalancing: rejoining")
                return
            if code in COORDINATOR_RETRIABLE:
                self._coordinator = None
            elif code:
                raise error_for_code(code, None, f"Heartbeating in group {self.group_id}")

    async def close(self) -> None:
        """Stop, and leave the group so that another instance leads at once."""
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except (asyncio.CancelledError, Exception):
                pass
            self._task = None
        if self.member_id:
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
                self._log.info(f"Leaving group {self.group_id} failed: {e}")
            self.member_id = ""
