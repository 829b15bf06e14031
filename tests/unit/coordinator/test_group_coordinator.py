from __future__ import annotations

import asyncio
from typing import Any

from kafpy.common.scheduler import MockScheduler
from kafpy.common.time import MockTime
from kafpy.common.topic_partition import TopicPartition
from kafpy.coordinator.group_config import GroupConfig, OffsetConfig
from kafpy.coordinator.group_coordinator import GroupCoordinator
from kafpy.coordinator.group_metadata import GroupState
from kafpy.coordinator.offset_and_metadata import OffsetAndMetadata
from kafpy.protocol.consumer_protocol import encode_subscription
from kafpy.protocol.errors import Errors
from tests.unit.coordinator.fakes import FakeOffsetsLog

PROTOCOLS = [("range", b"sub")]
TP = TopicPartition("t", 0)


class Harness:
    def __init__(self, initial_delay_ms: int = 0) -> None:
        self.time = MockTime()
        self.timer = MockScheduler(self.time)
        self.log = FakeOffsetsLog()
        self.coordinator = GroupCoordinator(
            0, GroupConfig(group_initial_rebalance_delay_ms=initial_delay_ms),
            OffsetConfig(offsets_topic_num_partitions=1), self.log, self.time, timer=self.timer,
        )  # fmt: skip
        self.coordinator.startup()
        self.coordinator.manager.owned_partitions.add(0)

    def join(self, member: str = "", instance: str | None = None, v4: bool = False,
             protocols: list[tuple[str, bytes]] = PROTOCOLS, session_ms: int = 10_000) -> list[dict[str, Any]]:  # fmt: skip
        out: list[dict[str, Any]] = []
        self.coordinator.handle_join_group("g", member, instance, v4, "client", "/h", 20_000, session_ms,
                                           "consumer", protocols, out.append)  # fmt: skip
        return out

    def sync(
        self, member: str, generation: int, assignments: dict[str, bytes] | None = None
    ) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        self.coordinator.handle_sync_group(
            "g", generation, member, None, assignments or {}, out.append
        )
        return out

    async def settle(self) -> None:
        for _ in range(5):
            await asyncio.sleep(0)

    @property
    def group(self) -> Any:
        return self.coordinator.manager.get_group("g")


def test_join_sync_heartbeat_and_a_second_member_rebalances() -> None:
    async def run() -> None:
        h = Harness()
        [first] = h.join(v4=True)
        assert first["error_code"] == Errors.MEMBER_ID_REQUIRED and first["member_id"].startswith(
            "client-"
        )
        m1 = first["member_id"]
        [joined] = h.join(m1, v4=True)
        assert (
            joined["error_code"] == Errors.NONE
            and joined["leader"] == m1
            and joined["generation_id"] == 1
        )
        assert [m["member_id"] for m in joined["members"]] == [m1]
        synced = h.sync(m1, 1, {m1: b"all"})
        await h.settle()
        assert synced[0]["assignment"] == b"all" and h.group.is_in(GroupState.STABLE)
        assert h.coordinator.handle_heartbeat("g", m1, None, 1) == Errors.NONE
        assert h.coordinator.handle_heartbeat("g", m1, None, 2) == Errors.ILLEGAL_GENERATION
        assert h.coordinator.handle_heartbeat("g", "who", None, 1) == Errors.UNKNOWN_MEMBER_ID

        second = h.join()  # waits for m1 to rejoin
        assert second == [] and h.group.is_in(GroupState.PREPARING_REBALANCE)
        assert h.coordinator.handle_heartbeat("g", m1, None, 1) == Errors.REBALANCE_IN_PROGRESS
        rejoin = h.join(m1)
        assert rejoin[0]["generation_id"] == 2 and len(rejoin[0]["members"]) == 2
        assert second[0]["leader"] == m1 and second[0]["members"] == []
        m2 = second[0]["member_id"]
        follower = h.sync(m2, 2)
        assert follower == []  # waits for the leader's assignment
        h.sync(m1, 2, {m1: b"a", m2: b"b"})
        await h.settle()
        assert follower[0]["assignment"] == b"b"

        # m2 stops heartbeating: its session expires and m1 is asked to rejoin
        h.time.advance(6_000)
        assert h.coordinator.handle_heartbeat("g", m1, None, 2) == Errors.NONE
        h.time.advance(5_000)
        assert m2 not in h.group.members and h.group.is_in(GroupState.PREPARING_REBALANCE)

    asyncio.run(run())


def test_initial_rebalance_delay_collects_members_into_one_generation() -> None:
    async def run() -> None:
        h = Harness(initial_delay_ms=3000)
        a, b = h.join(), []
        h.time.advance(2000)
        b = h.join()
        for _ in range(3):
            h.time.advance(1000)
        assert a == [] and b == []  # the new member extended the delay by another 3 s from t=3 s
        h.time.advance(1000)
        assert a[0]["generation_id"] == b[0]["generation_id"] == 1

    asyncio.run(run())


def test_commit_checks_generation_and_member() -> None:
    async def run() -> None:
        h = Harness()
        c = h.coordinator
        # simple consumers (generation -1) may commit to a group with no members
        assert await c.handle_commit_offsets("g", "", None, -1, {TP: OffsetAndMetadata(4)}) == {
            TP: Errors.NONE
        }
        assert c.handle_fetch_offsets("g", None)[1][TP].offset == 4
        assert await c.handle_commit_offsets("other", "m", None, 3, {TP: OffsetAndMetadata(1)}) == {
            TP: Errors.ILLEGAL_GENERATION
        }
        [j] = h.join()
        m = j["member_id"]
        assert await c.handle_commit_offsets("g", m, None, 1, {TP: OffsetAndMetadata(1)}) == {
            TP: Errors.REBALANCE_IN_PROGRESS
        }
        h.sync(m, 1, {m: b""})
        await h.settle()
        assert await c.handle_commit_offsets("g", m, None, 7, {TP: OffsetAndMetadata(1)}) == {
            TP: Errors.ILLEGAL_GENERATION
        }
        assert await c.handle_commit_offsets("g", "x", None, 1, {TP: OffsetAndMetadata(1)}) == {
            TP: Errors.UNKNOWN_MEMBER_ID
        }
        assert await c.handle_commit_offsets("g", m, None, 1, {TP: OffsetAndMetadata(9)}) == {
            TP: Errors.NONE
        }
        assert await c.handle_delete_groups(["g", "nope"]) == {"g": Errors.NON_EMPTY_GROUP,
                                                               "nope": Errors.GROUP_ID_NOT_FOUND}  # fmt: skip
        assert c.handle_leave_group("g", [(m, None)]) == (Errors.NONE, [Errors.NONE])
        await h.settle()
        assert h.group.is_in(GroupState.EMPTY)
        assert await c.handle_delete_groups(["g"]) == {"g": Errors.NONE}
        assert c.handle_fetch_offsets("g", [TP]) == (Errors.NONE, {TP: None})
        assert c.handle_fetch_offsets("", None)[0] == Errors.INVALID_GROUP_ID

    asyncio.run(run())


def test_static_member_rejoining_keeps_its_assignment_without_rebalance() -> None:
    async def run() -> None:
        h = Harness()
        [j] = h.join(instance="i1")
        old = j["member_id"]
        h.sync(old, 1, {old: b"mine"})
        await h.settle()
        [again] = h.join(instance="i1")
        new = again["member_id"]
        assert new != old and again["generation_id"] == 1 and h.group.is_in(GroupState.STABLE)
        assert h.sync(new, 1)[0]["assignment"] == b"mine"
        assert h.coordinator.handle_heartbeat("g", old, "i1", 1) == Errors.FENCED_INSTANCE_ID

    asyncio.run(run())


def test_groups_are_reloaded_by_a_new_coordinator() -> None:
    async def run() -> None:
        h = Harness()
        [j] = h.join()
        m = j["member_id"]
        h.sync(m, 1, {m: b"x"})
        await h.settle()
        await h.coordinator.handle_commit_offsets(
            "g", m, None, 1, {TP: OffsetAndMetadata(11, -1, "md")}
        )
        other = GroupCoordinator(0, GroupConfig(), OffsetConfig(offsets_topic_num_partitions=1), h.log, h.time,
                                 timer=h.timer)  # fmt: skip
        other.startup()
        other.on_election(0)
        assert other.handle_fetch_offsets("g", None)[0] == Errors.COORDINATOR_LOAD_IN_PROGRESS
        await h.settle()
        err, offsets = other.handle_fetch_offsets("g", None)
        assert err == Errors.NONE and offsets[TP] == OffsetAndMetadata(11, -1, "md")
        group = other.manager.get_group("g")
        assert group.is_in(GroupState.STABLE) and group.members[m].assignment == b"x"
        other.on_resignation(0)
        assert other.handle_fetch_offsets("g", None)[0] == Errors.NOT_COORDINATOR

    asyncio.run(run())


def test_sync_group_v5_checks_protocol_type_and_name() -> None:
    async def run() -> None:
        h = Harness()
        [j] = h.join()
        m = j["member_id"]
        out: list[dict[str, Any]] = []
        for ptype, pname in (("consumer", "roundrobin"), ("connect", "range")):
            h.coordinator.handle_sync_group("g", 1, m, None, {m: b"a"}, out.append, ptype, pname)
        assert [r["error_code"] for r in out] == [Errors.INCONSISTENT_GROUP_PROTOCOL] * 2
        h.coordinator.handle_sync_group("g", 1, m, None, {m: b"a"}, out.append, "consumer", "range")
        await h.settle()
        assert out[-1]["error_code"] == Errors.NONE and out[-1]["protocol_name"] == "range"

    asyncio.run(run())


def test_delete_offsets_spares_topics_a_running_group_consumes() -> None:
    async def run() -> None:
        h = Harness()
        c = h.coordinator
        t, u = TopicPartition("t", 0), TopicPartition("u", 0)
        [j] = h.join(protocols=[("range", encode_subscription(["t"]))])
        m = j["member_id"]
        h.sync(m, 1, {m: b""})
        await h.settle()
        await c.handle_commit_offsets(
            "g", m, None, 1, {t: OffsetAndMetadata(1), u: OffsetAndMetadata(2)}
        )
        assert await c.handle_delete_offsets("g", [t, u]) == (
            Errors.NONE, {t: Errors.GROUP_SUBSCRIBED_TO_TOPIC, u: Errors.NONE},
        )  # fmt: skip
        left = c.handle_fetch_offsets("g", [t, u])[1]
        assert left[u] is None and left[t] is not None and left[t].offset == 1
        assert c.handle_leave_group("g", [(m, None)]) == (Errors.NONE, [Errors.NONE])
        await h.settle()
        # an empty group loses what it asks for, and with no offsets left it is gone
        appends = h.log.appends
        assert await c.handle_delete_offsets("g", [t]) == (Errors.NONE, {t: Errors.NONE})
        assert h.log.appends == appends + 1  # the tombstones are written
        assert await c.handle_delete_offsets("g", [t]) == (Errors.GROUP_ID_NOT_FOUND, {})
        assert await c.handle_delete_offsets("", [t]) == (Errors.INVALID_GROUP_ID, {})

    asyncio.run(run())


def test_txn_commit_checks_member_and_generation_only_when_given() -> None:
    async def run() -> None:
        h = Harness()
        c = h.coordinator

        async def commit(member: str, generation: int, offset: int) -> int:
            answer = await c.handle_txn_commit_offsets(
                "g", 42, 0, member, None, generation, {TP: OffsetAndMetadata(offset)}
            )
            return answer[TP]

        # v0-2 (no member, generation -1): an unknown group is created, the commit pends
        assert await commit("", -1, 5) == Errors.NONE
        assert c.handle_fetch_offsets("g", [TP])[1] == {TP: None}
        assert c.unstable_offsets("g") == {TP}
        [j] = h.join()
        m = j["member_id"]
        h.sync(m, 1, {m: b""})
        await h.settle()
        assert await commit("x", 1, 6) == Errors.UNKNOWN_MEMBER_ID
        assert await commit(m, 4, 6) == Errors.ILLEGAL_GENERATION
        assert await commit(m, 1, 7) == Errors.NONE
        c.handle_txn_completion(42, {0}, True)
        assert c.handle_fetch_offsets("g", [TP])[1][TP] == OffsetAndMetadata(7, commit_timestamp=-1)
        assert c.unstable_offsets("g") == set()
        assert (
            await c.handle_txn_commit_offsets("", 42, 0, "", None, -1, {TP: OffsetAndMetadata(1)})
        )[TP] == Errors.INVALID_GROUP_ID

    asyncio.run(run())
