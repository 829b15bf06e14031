"""KafkaGroupLeaderElector: which registry instance writes, chosen through a Kafka group
(Confluent's KafkaGroupLeaderElector, SchemaRegistryCoordinator and SchemaRegistryProtocol).

Every instance joins the group `schema.registry.group.id` with protocol type "sr" and
sub-protocol "v0", its metadata the JSON of its identity:

    {"host":"10.0.0.5","port":8081,"master_eligibility":true,"scheme":"http","version":1}

The group's Kafka leader assigns: the leader-eligible member with the smallest URL leads,
and every member receives the same assignment

    {"version":1,"error":0,"master":"<member id>","master_identity":{...}}

(error 1 when two members have the same URL, as Confluent: no leader then). The membership
(join, sync, heartbeats, rejoining when the group rebalances, leaving on close) is
kafpy.client.abstract_coordinator's; the elector tells the registry who leads after each
rebalance (None while it rebalances). Confluent instances and kafpy instances can share one
group: the formats are Confluent's.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kafpy.client.abstract_coordinator import AbstractCoordinator
from kafpy.client.kafka_client import KafkaClient
from kafpy.common.logger import component_logger

PROTOCOL_TYPE = "sr"
SUBPROTOCOL_V0 = "v0"
ASSIGNMENT_VERSION = 1
NO_ERROR = 0
DUPLICATE_URLS = 1
SESSION_TIMEOUT_MS = 10000
HEARTBEAT_INTERVAL_MS = 3000
REBALANCE_TIMEOUT_MS = 10000


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


class KafkaGroupLeaderElector(AbstractCoordinator):
    """This instance's membership of the registries' group, on its own KafkaClient
    (Confluent's KafkaGroupLeaderElector with its SchemaRegistryCoordinator, an
    AbstractCoordinator): joins in the background, and tells `on_leader` who leads."""

    def __init__(
        self,
        client: KafkaClient,
        group_id: str,
        identity: SchemaRegistryIdentity,
        on_leader: LeaderListener,
    ) -> None:
        super().__init__(
            client,
            group_id,
            session_timeout_ms=SESSION_TIMEOUT_MS,
            rebalance_timeout_ms=REBALANCE_TIMEOUT_MS,
            heartbeat_interval_ms=HEARTBEAT_INTERVAL_MS,
            log=component_logger(__name__, "KafkaGroupLeaderElector", group_id),
        )
        self.identity = identity
        self.on_leader = on_leader
        self._task: asyncio.Task[None] | None = None
        self._assigned = asyncio.Event()

    async def start(self) -> None:
        """Join the group in the background."""
        await self.client.start()
        self._task = asyncio.create_task(self._run(), name="schema-registry-leader-elector")

    async def wait_assigned(self) -> None:
        """Wait for the first rebalance to finish."""
        await self._assigned.wait()

    async def _run(self) -> None:
        while True:
            try:
                await self.ensure_active_group()
                await self.wait_rejoin_needed()
            except asyncio.CancelledError:
                raise
            except Exception as e:  # the elector outlives any failure, and logs it
                self._log.warning(f"Membership of group {self.group_id} failed: {e}; retrying")
                self._mark_coordinator_unknown()
                await asyncio.sleep(self.client.retry_backoff_ms / 1000)

    def protocol_type(self) -> str:
        return PROTOCOL_TYPE

    def metadata(self) -> list[tuple[str, bytes]]:
        return [(SUBPROTOCOL_V0, json.dumps(self.identity.as_json()).encode())]

    async def on_join_prepare(self, generation_id: int, member_id: str) -> None:
        if self._assigned.is_set():  # the leader elected last time leads no more
            await self.on_leader(None)

    async def perform_assignment(
        self, leader_id: str, protocol: str, members: Mapping[str, bytes]
    ) -> dict[str, bytes]:
        identities = {}
        for member, metadata in members.items():
            try:
                identities[member] = SchemaRegistryIdentity.from_json(json.loads(metadata))
            except (ValueError, KeyError, TypeError) as e:
                self._log.warning(f"Member {member} has metadata that is not an identity: {e}")
        assignment = json.dumps(assign(identities)).encode()
        return dict.fromkeys(identities, assignment)

    async def on_join_complete(
        self, generation_id: int, member_id: str, protocol: str, assignment: bytes
    ) -> None:
        leader = self._leader_of(assignment)
        self._log.info(
            f"Finished rebalance with leader election result: "
            f"{'no leader' if leader is None else leader.url} (generation {generation_id})"
        )
        await self.on_leader(leader)
        self._assigned.set()

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

    async def close(self) -> None:
        """Stop, and leave the group so that another instance leads at once."""
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except (asyncio.CancelledError, Exception):
                pass
            self._task = None
        await super().close()
