"""AbstractCoordinator's group membership against a real embedded broker: members of a
protocol type of the test's own join, the leader assigns, a member leaving or a rebalance
makes the others rejoin, and coordinator errors make a member find the coordinator anew."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any, TypeVar

from kafpy.client.abstract_coordinator import AbstractCoordinator
from kafpy.client.kafka_client import KafkaClient
from kafpy.common.logger import component_logger
from kafpy.protocol.api_keys import ApiKey
from kafpy.testing.faults import FaultInjector
from kafpy.testing.wait import async_wait_until

T = TypeVar("T")


class CountingClient(KafkaClient):
    """A client that counts its FindCoordinator requests."""

    lookups = 0

    async def send_to_any(
        self, api_key: int, body: Mapping[str, Any], *args: Any, **kw: Any
    ) -> Any:
        if api_key == ApiKey.FIND_COORDINATOR:
            self.lookups += 1
        return await super().send_to_any(api_key, body, *args, **kw)


class Member(AbstractCoordinator):
    """A member of protocol type "kafpy-test" whose metadata is its name; the leader
    assigns each member the text "<leader's name> assigns <member's name>"."""

    def __init__(self, client: KafkaClient, group_id: str, name: str) -> None:
        super().__init__(
            client,
            group_id,
            session_timeout_ms=6000,
            rebalance_timeout_ms=10000,
            heartbeat_interval_ms=100,
            log=component_logger(__name__, "Member", name),
        )
        self.name = name
        self.prepared: list[tuple[int, str]] = []
        # (generation, protocol, {member id: metadata}) of each assignment computed as leader
        self.led: list[tuple[int, str, dict[str, bytes]]] = []
        self.joined: list[tuple[int, str, bytes]] = []
        self.task: asyncio.Task[None] | None = None

    def protocol_type(self) -> str:
        return "kafpy-test"

    def metadata(self) -> list[tuple[str, bytes]]:
        return [("v2", b"v2 " + self.name.encode()), ("v1", self.name.encode())]

    async def on_join_prepare(self, generation_id: int, member_id: str) -> None:
        self.prepared.append((generation_id, member_id))

    async def perform_assignment(
        self, leader_id: str, protocol: str, members: Mapping[str, bytes]
    ) -> dict[str, bytes]:
        assert leader_id == self.member_id
        self.led.append((self.generation_id, protocol, dict(members)))
        return {m: f"{self.name} assigns ".encode() + meta for m, meta in members.items()}

    async def on_join_complete(
        self, generation_id: int, member_id: str, protocol: str, assignment: bytes
    ) -> None:
        self.joined.append((generation_id, protocol, assignment))

    def stable_in(self) -> int | None:
        """The generation this member has its assignment of (None while it rejoins)."""
        if self.rejoin_needed or not self.joined:
            return None
        return self.joined[-1][0]

    def start(self) -> None:
        """Keep the membership as an owner does: rejoin whenever the group rebalances."""

        async def keep() -> None:
            while True:
                await self.ensure_active_group()
                await self.wait_rejoin_needed()

        self.task = asyncio.create_task(keep())

    async def stop(self) -> None:
        """Stop rejoining, and leave the group."""
        if self.task is not None:
            self.task.cancel()
            await asyncio.gather(self.task, return_exceptions=True)
        await self.close()


@contextlib.asynccontextmanager
async def group_of(
    bootstrap: str, *names: str, client: type[KafkaClient] = KafkaClient, **options: Any
) -> AsyncIterator[list[Member]]:
    """Members named `names` of a new group, each on its own client, started; stopped at
    the end."""
    group = f"ac-{uuid.uuid4().hex[:8]}"
    async with contextlib.AsyncExitStack() as stack:
        members = []
        for name in names:
            member = Member(
                await stack.enter_async_context(client(bootstrap, **options)), group, name
            )
            member.start()
            stack.push_async_callback(member.stop)
            members.append(member)
        yield members


def run(scenario: Callable[[], Awaitable[T]]) -> T:
    async def main() -> T:
        return await asyncio.wait_for(scenario(), 60)

    return asyncio.run(main())


async def _in_one_generation(*members: Member) -> int:
    def same() -> int | None:
        generations = {m.stable_in() for m in members}
        return generations.pop() if len(generations) == 1 and None not in generations else None

    names = ", ".join(m.name for m in members)
    return await async_wait_until(same, 30, f"{names} in one generation")


def test_two_members_join_and_the_leader_assigns(kafka_bootstrap: str) -> None:
    async def scenario() -> None:
        async with group_of(kafka_bootstrap, "a", "b") as (a, b):
            generation = await _in_one_generation(a, b)
            [leader] = [m for m in (a, b) if m.led and m.led[-1][0] == generation]
            _, protocol, members = leader.led[-1]
            # both support v2 and v1, in that order: the coordinator picks v2
            assert protocol == "v2"
            assert members == {a.member_id: b"v2 a", b.member_id: b"v2 b"}
            assert a.joined[-1] == (generation, "v2", f"{leader.name} assigns v2 a".encode())
            assert b.joined[-1] == (generation, "v2", f"{leader.name} assigns v2 b".encode())
            assert a.member_id and b.member_id and a.member_id != b.member_id

    run(scenario)


def test_a_member_leaving_makes_the_other_rejoin_alone(kafka_bootstrap: str) -> None:
    async def scenario() -> None:
        async with group_of(kafka_bootstrap, "a", "b") as (a, b):
            together = await _in_one_generation(a, b)
            a_id = a.member_id
            await a.stop()  # LeaveGroup: b learns of the rebalance from its heartbeat
            assert (a.member_id, a.generation_id, a.rejoin_needed) == ("", -1, True)
            alone = await async_wait_until(
                lambda: (b.stable_in() or 0) > together and b.stable_in(),
                30,
                "b in a generation after a left",
            )
            assert b.led[-1] == (alone, "v2", {b.member_id: b"v2 b"})
            assert b.joined[-1] == (alone, "v2", b"b assigns v2 b")
            assert a_id not in b.led[-1][2]
            # b's previous assignment was over before it rejoined
            assert (together, b.member_id) in b.prepared

    run(scenario)


def test_a_heartbeat_answered_unknown_member_makes_it_rejoin_as_a_new_member(
    kafka_bootstrap: str, kafka_faults: FaultInjector
) -> None:
    async def scenario() -> None:
        async with group_of(kafka_bootstrap, "a") as (member,):
            first = await _in_one_generation(member)
            first_id = member.member_id
            kafka_faults.fail_next("Heartbeat", "UNKNOWN_MEMBER_ID")
            await async_wait_until(lambda: (member.stable_in() or 0) > first, 30, "a rejoined")
            assert member.member_id and member.member_id != first_id
            assert member.prepared == [(-1, ""), (first, "")]
            assert member.led[-1][2] == {member.member_id: b"v2 a"}

    run(scenario)


def test_a_heartbeat_answered_not_coordinator_makes_it_find_the_coordinator_anew(
    kafka_bootstrap: str, kafka_faults: FaultInjector
) -> None:
    async def scenario() -> None:
        async with group_of(kafka_bootstrap, "a", client=CountingClient) as (member,):
            generation = await _in_one_generation(member)
            client = member.client
            assert isinstance(client, CountingClient) and client.lookups == 1
            kafka_faults.fail_next("Heartbeat", "NOT_COORDINATOR")
            await async_wait_until(lambda: client.lookups == 2, 30, "a second lookup")
            # the member kept its generation: the coordinator did not move, it was asked
            assert member.stable_in() == generation
            assert kafka_faults.fired("Heartbeat") == 1

    run(scenario)


def test_a_join_answered_coordinator_not_available_is_sent_to_the_coordinator_found_anew(
    kafka_bootstrap: str, kafka_faults: FaultInjector
) -> None:
    async def scenario() -> None:
        kafka_faults.fail_next("JoinGroup", "COORDINATOR_NOT_AVAILABLE")
        async with group_of(kafka_bootstrap, "a", client=CountingClient, retry_backoff_ms=10) as (
            member,
        ):
            await _in_one_generation(member)
            assert kafka_faults.fired("JoinGroup") == 1
            assert isinstance(member.client, CountingClient) and member.client.lookups == 2
            assert member.joined[-1][2] == b"a assigns v2 a"

    run(scenario)
