"""KafkaController over the embedded store: election, topic creation, expansion, ISR change
and log dir notifications, with requests captured by a recording channel (no sockets)."""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Callable

import pytest

from kafpy.common.topic_partition import TopicPartition
from kafpy.controller.controller_context import PartitionAndReplica
from kafpy.controller.partition_state_machine import PartitionState
from kafpy.controller.replica_state_machine import ReplicaState
from kafpy.metadata.zk_data import (
    IsrChangeNotificationSequenceZNode,
    TopicZNode,
)
from kafpy.protocol.api_keys import ApiKey
from tests.unit.controller.fixtures import (
    ControllerCluster,
    SentRequest,
    assert_encodable,
    healthy_response,
    run,
    state_json,
)

LAI, UM, SR = ApiKey.LEADER_AND_ISR, ApiKey.UPDATE_METADATA, ApiKey.STOP_REPLICA


# -- election ---------------------------------------------------------------------------------


def test_first_broker_is_elected_and_the_second_follows() -> None:
    async def body(cluster: ControllerCluster) -> None:
        await cluster.start(0, 1)
        c0, c1 = cluster.brokers[0].controller, cluster.brokers[1].controller
        assert c0.is_active and not c1.is_active
        assert c0.epoch == 1 and c1.active_controller_id == 0
        data, _ = await cluster.admin.store.get("/controller")
        node = json.loads(data)
        assert node["version"] == 1 and node["brokerid"] == 0 and isinstance(node["timestamp"], str)
        epoch, stat = await cluster.admin.get_controller_epoch()  # type: ignore[misc]
        assert epoch == 1 and c0.epoch_zk_version == stat.version

    run(body)


def test_failover_to_a_second_controller_with_a_higher_epoch() -> None:
    async def body(cluster: ControllerCluster) -> None:
        await cluster.start(0, 1)
        await cluster.admin.create_topic_with_config("t", {0: [0, 1]}, {})
        await cluster.settle()
        old_epoch = cluster.controller().epoch
        await cluster.stop_broker(0)
        await cluster.settle()
        new = cluster.controller()
        assert new.broker_id == 1 and new.epoch == old_epoch + 1
        assert await cluster.admin.get_controller_id() == 1
        # the new controller knows the topic and took leadership away from the dead broker
        state = await state_json(cluster, "t", 0)
        assert state is not None and state["leader"] == 1 and state["isr"] == [1]
        assert state["controller_epoch"] == new.epoch
        # and it keeps working: a new topic is created by it
        cluster.sent.clear()
        await cluster.admin.create_topic_with_config("u", {0: [1]}, {})
        await cluster.settle()
        assert (await state_json(cluster, "u", 0)) == {
            "controller_epoch": new.epoch,
            "leader": 1,
            "version": 1,
            "leader_epoch": 0,
            "isr": [1],
        }
        assert {r.controller_id for r in cluster.sent} == {1}

    run(body)


def test_session_expiry_resigns_and_one_controller_remains() -> None:
    async def body(cluster: ControllerCluster) -> None:
        await cluster.start(0, 1)
        assert cluster.controller().broker_id == 0
        await cluster.brokers[0].store.expire_session()
        await cluster.settle()
        active = cluster.active()
        assert len(active) == 1 and active[0].epoch == 2
        # the expired broker registered itself again
        assert await cluster.admin.get_all_broker_ids() == [0, 1]
        other = cluster.brokers[1 - active[0].broker_id].controller
        assert other.active_controller_id == active[0].broker_id

    run(body)


# -- topic creation ----------------------------------------------------------------------------


def test_topic_creation_writes_states_and_sends_requests(caplog: pytest.LogCaptureFixture) -> None:
    async def body(cluster: ControllerCluster) -> None:
        await cluster.start(0, 1, 2)
        cluster.sent.clear()
        with caplog.at_level(logging.DEBUG, logger="kafpy"):
            await cluster.admin.create_topic_with_config("t", {0: [1, 2, 0], 1: [2, 0, 1]}, {})
            await cluster.settle()
        data = await cluster.admin.store.get_data_or_none("/brokers/topics/t/partitions/0/state")
        assert (
            data == b'{"controller_epoch":1,"leader":1,"version":1,"leader_epoch":0,"isr":[1,2,0]}'
        )
        assert (await state_json(cluster, "t", 1))["leader"] == 2  # type: ignore[index]

        # the topic was written without an id (as by a tool): the controller gave it one
        topic_id = TopicZNode.decode_topic_id(
            await cluster.admin.store.get_data_or_none("/brokers/topics/t")
        )
        assert topic_id is not None and ctl_topic_id(cluster, "t") == topic_id
        lai = cluster.requests(LAI)
        assert sorted(r.broker_id for r in lai) == [0, 1, 2]
        for r in lai:
            assert_encodable(r)
            assert r.version == 5 and r.body["controller_epoch"] == 1
            assert [t["topic_id"] for t in r.body["topic_states"]] == [topic_id]
            assert r.body["broker_epoch"] > 0
            states = dict(((t, s["partition_index"]), s) for t, s in r.partition_states())
            assert set(states) == {("t", 0), ("t", 1)}
            assert states[("t", 0)]["leader"] == 1 and states[("t", 0)]["is_new"] is True
            assert states[("t", 0)]["replicas"] == [1, 2, 0]
            assert {ll["broker_id"] for ll in r.body["live_leaders"]} == {1, 2}
        um = cluster.requests(UM)
        assert sorted(r.broker_id for r in um) == [0, 1, 2]
        for r in um:
            assert_encodable(r)
            assert r.version == 7 and [t["topic_id"] for t in r.body["topic_states"]] == [topic_id]
            assert sorted(r.partitions()) == [("t", 0), ("t", 1)]
            assert [b["id"] for b in r.body["live_brokers"]] == [0, 1, 2]
            assert r.body["live_brokers"][0]["endpoints"][0]["port"] == 9092
        ctl = cluster.controller()
        assert (
            ctl.context.partition_states[TopicPartition("t", 0)] is PartitionState.ONLINE_PARTITION
        )
        assert (
            ctl.context.replica_states[PartitionAndReplica("t", 0, 2)]
            is ReplicaState.ONLINE_REPLICA
        )

        text = caplog.text
        assert (
            "[Controller id=0] New topics: [Set(t)], deleted topics: [Set()], new partition "
            "replica assignment [Map(t-0 -> Vector(1, 2, 0), t-1 -> Vector(2, 0, 1))]"
        ) in text
        assert "New partition creation callback for t-0,t-1" in text
        assert "Processing event TopicChange" in text
        assert "Processed event TopicChange in" in text

    run(body)


def ctl_topic_id(cluster: ControllerCluster, topic: str) -> uuid.UUID | None:
    return cluster.controller().context.topic_ids.get(topic)


def test_creation_with_a_dead_assigned_replica_uses_the_live_ones() -> None:
    async def body(cluster: ControllerCluster) -> None:
        await cluster.start(0, 1)
        cluster.sent.clear()
        await cluster.admin.create_topic_with_config("t", {0: [5, 1, 0]}, {})
        await cluster.settle()
        state = await state_json(cluster, "t", 0)
        assert state is not None and state["leader"] == 1 and state["isr"] == [1, 0]
        assert sorted(r.broker_id for r in cluster.requests(LAI)) == [0, 1]

    run(body)


def test_creation_with_no_live_replica_stays_new() -> None:
    async def body(cluster: ControllerCluster) -> None:
        await cluster.start(0)
        await cluster.admin.create_topic_with_config("t", {0: [7]}, {})
        await cluster.settle()
        assert await state_json(cluster, "t", 0) is None
        tp = TopicPartition("t", 0)
        assert cluster.controller().context.partition_states[tp] is PartitionState.NEW_PARTITION
        # the broker arrives: the partition goes online
        await cluster.start_broker(7)
        await cluster.settle()
        state = await state_json(cluster, "t", 0)
        assert state is not None and state["leader"] == 7

    run(body)


# -- partition expansion -----------------------------------------------------------------------


def test_added_partitions_go_online() -> None:
    async def body(cluster: ControllerCluster) -> None:
        await cluster.start(0, 1, 2)
        await cluster.admin.create_topic_with_config("t", {0: [0, 1]}, {})
        await cluster.settle()
        cluster.sent.clear()
        await cluster.admin.set_topic_assignment(
            "t", {0: [0, 1], 1: [2, 0]}, topic_id=ctl_topic_id(cluster, "t")
        )
        await cluster.settle()
        state = await state_json(cluster, "t", 1)
        assert state is not None and state["leader"] == 2 and state["isr"] == [2, 0]
        lai = cluster.requests(LAI)
        assert sorted(r.broker_id for r in lai) == [0, 2]
        assert all(r.partitions() == [("t", 1)] for r in lai)
        assert sorted(r.broker_id for r in cluster.requests(UM)) == [0, 1, 2]

    run(body)


def test_expansion_is_skipped_while_the_topic_is_queued_for_deletion(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def body(cluster: ControllerCluster) -> None:
        await cluster.start(0, 1, 2)
        await cluster.admin.create_topic_with_config("t", {0: [1, 2]}, {})
        await cluster.settle()
        await cluster.stop_broker(2)  # its replica cannot be deleted: the deletion stays queued
        await cluster.settle()
        await cluster.admin.create_delete_topic_path("t")
        await cluster.settle()
        with caplog.at_level(logging.ERROR, logger="kafpy.controller"):
            await cluster.admin.set_topic_assignment(
                "t", {0: [1, 2], 1: [0, 1]}, topic_id=ctl_topic_id(cluster, "t")
            )
            await cluster.settle()
        assert await state_json(cluster, "t", 1) is None
        assert (
            "Skipping adding partitions 1 for topic t since it is currently being deleted"
            in caplog.text
        )
        assert TopicPartition("t", 1) not in cluster.controller().context.partition_states

    run(body)


# -- ISR changes --------------------------------------------------------------------------------


def test_isr_change_notifications_are_sent_as_update_metadata_and_deleted(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def body(cluster: ControllerCluster) -> None:
        await cluster.start(0, 1)
        await cluster.admin.create_topic_with_config("t", {0: [0, 1], 1: [1, 0]}, {})
        await cluster.settle()
        cluster.sent.clear()
        with caplog.at_level(logging.WARNING, logger="kafpy.controller"):
            for data in (
                b"not json",
                IsrChangeNotificationSequenceZNode.encode([TopicPartition("t", 1)]),
            ):
                await cluster.admin.store.create(
                    IsrChangeNotificationSequenceZNode.path(), data, sequential=True
                )
            await cluster.settle()
        # every broker hears of the changed partition, and only of it
        assert sorted(r.broker_id for r in cluster.requests(UM)) == [0, 1]
        assert {p for r in cluster.requests(UM) for p in r.partitions()} == {("t", 1)}
        # the malformed notification is logged and deleted with the other
        assert "Ignoring ISR change notification isr_change_" in caplog.text
        assert await cluster.admin.store.get_children("/isr_change_notification") == []

    run(body)


# -- log dir failures ---------------------------------------------------------------------------


def test_log_dir_event_moves_leadership_off_the_replicas_in_the_failed_dir() -> None:
    async def body(cluster: ControllerCluster) -> None:
        await cluster.start(0, 1, 2)
        await cluster.admin.create_topic_with_config("t", {0: [1, 2, 0], 1: [2, 1, 0]}, {})
        await cluster.settle()
        storage_error = healthy_response_with_errors({1: 56})
        cluster.responder = storage_error
        cluster.sent.clear()
        await cluster.admin.store.create(
            "/log_dir_event_notification/log_dir_event_",
            b'{"version":1,"broker":1,"event":1}',
            sequential=True,
        )
        await cluster.settle()
        # the controller asked broker 1 about its replicas, learnt they are offline...
        assert sorted(p for r in cluster.requests(LAI, 1) for p in r.partitions()) == [
            ("t", 0),
            ("t", 1),
        ]
        ctx = cluster.controller().context
        assert ctx.replicas_on_offline_dirs[1] == {TopicPartition("t", 0), TopicPartition("t", 1)}
        assert ctx.replica_states[PartitionAndReplica("t", 0, 1)] is ReplicaState.OFFLINE_REPLICA
        # ...and moved leadership away and took them out of the ISRs
        state0 = await state_json(cluster, "t", 0)
        assert state0 is not None and state0["leader"] == 2 and state0["isr"] == [2, 0]
        state1 = await state_json(cluster, "t", 1)
        assert state1 is not None and state1["leader"] == 2 and state1["isr"] == [2, 0]
        assert await cluster.admin.store.get_children("/log_dir_event_notification") == []

    run(body)


def test_enabling_unclean_election_on_a_topic_elects_its_offline_partitions() -> None:
    async def body(cluster: ControllerCluster) -> None:
        await cluster.start(0, 1, 2)
        await cluster.admin.create_topic_with_config("t", {0: [1, 2]}, {})
        await cluster.settle()
        await cluster.stop_broker(2)
        await cluster.settle()
        await cluster.start_broker(2)
        await cluster.settle()
        await cluster.stop_broker(1)
        await cluster.settle()
        assert (await state_json(cluster, "t", 0) or {})["leader"] == -1
        await cluster.admin.set_or_create_entity_configs(
            "topics", "t", {"unclean.leader.election.enable": "true"}
        )
        cluster.controller().enable_topic_unclean_leader_election("t")
        await cluster.settle()
        state = await state_json(cluster, "t", 0)
        assert state is not None and state["leader"] == 2 and state["isr"] == [2]

    run(body)


def healthy_response_with_errors(
    codes: dict[int, int],
) -> Callable[[SentRequest], dict[str, object]]:
    """A broker in `codes` answers LeaderAndIsr with that error for every partition."""

    def respond(request: SentRequest) -> dict[str, object]:
        code = codes.get(request.broker_id)
        if request.api_key == LAI and code is not None:
            return healthy_response(request, code)
        return healthy_response(request)

    return respond
