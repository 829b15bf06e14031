"""TopicDeletionManager driven by the controller over the embedded store: deletion end to
end, dead replicas, failed StopReplica, disabled deletion, markers of unknown topics, and a
new controller finishing a pending deletion."""

from __future__ import annotations

import logging

import pytest

from kafpy.controller.controller_context import PartitionAndReplica
from kafpy.controller.replica_state_machine import ReplicaState
from kafpy.protocol.api_keys import ApiKey
from tests.unit.controller.fixtures import (
    ControllerCluster,
    SentRequest,
    assert_encodable,
    run,
    state_json,
)

UM, SR = ApiKey.UPDATE_METADATA, ApiKey.STOP_REPLICA


def test_deletion_end_to_end(caplog: pytest.LogCaptureFixture) -> None:
    async def body(cluster: ControllerCluster) -> None:
        await cluster.start(0, 1, 2)
        await cluster.admin.create_topic_with_config(
            "t", {0: [1, 2, 0], 1: [2, 0, 1]}, {"retention.ms": "1"}
        )
        await cluster.settle()
        cluster.sent.clear()
        with caplog.at_level(logging.DEBUG, logger="kafpy"):
            await cluster.admin.create_delete_topic_path("t")
            await cluster.settle()
        # brokers were told to stop serving it (leader -2), then to stop and delete replicas
        um = cluster.requests(UM)
        assert sorted(r.broker_id for r in um) == [0, 1, 2]
        assert all(s["leader"] == -2 for r in um for _, s in r.partition_states())
        for broker in (0, 1, 2):
            stops = cluster.requests(SR, broker)
            assert [r.delete_partitions() for r in stops] == [False, True]
            for r in stops:
                assert_encodable(r)
                assert sorted(r.partitions()) == [("t", 0), ("t", 1)]
        for path in ("/brokers/topics/t", "/config/topics/t", "/admin/delete_topics/t"):
            assert await cluster.admin.store.exists(path) is None, path
        ctl = cluster.controller()
        assert "t" not in ctl.context.all_topics and not ctl.context.topics_to_be_deleted
        assert not [r for r in ctl.context.replica_states if r.topic == "t"]
        text = caplog.text
        assert "[Controller id=0] Delete topics listener fired for topics t to be deleted" in text
        assert "[Topic Deletion Manager 0] Handling deletion for topics t" in text
        assert "[Topic Deletion Manager 0] Deletion started for replicas" in text
        assert (
            "The stop replica request (delete = true) sent to broker 1 is "
            "StopReplicaRequestInfo([Topic=t,Partition=0,Replica=1],true),"
            "StopReplicaRequestInfo([Topic=t,Partition=1,Replica=1],true)"
        ) in text
        assert (
            "Delete topic callback invoked on StopReplica response received from broker 2: "
            "request error = NONE, partition errors = Map(t-0 -> NONE, t-1 -> NONE)"
        ) in text
        assert "[Topic Deletion Manager 0] Deletion of topic t successfully completed" in text

        # the same name created again at once is a new topic
        cluster.sent.clear()
        await cluster.admin.create_topic_with_config("t", {0: [0]}, {})
        await cluster.settle()
        assert (await state_json(cluster, "t", 0)) == {
            "controller_epoch": 1,
            "leader": 0,
            "version": 1,
            "leader_epoch": 0,
            "isr": [0],
        }

    run(body)


def test_deletion_with_a_dead_replica_waits_for_the_broker(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def body(cluster: ControllerCluster) -> None:
        await cluster.start(0, 1, 2)
        await cluster.admin.create_topic_with_config("t", {0: [1, 2], 1: [2, 0]}, {})
        await cluster.settle()
        await cluster.stop_broker(2)
        await cluster.settle()
        cluster.sent.clear()
        with caplog.at_level(logging.DEBUG, logger="kafpy"):
            await cluster.admin.create_delete_topic_path("t")
            await cluster.settle()
        assert (
            "Changed state of replica 2 for partition t-0 from OfflineReplica to "
            "ReplicaDeletionIneligible"
        ) in caplog.text
        assert "Halted deletion of topics t" in caplog.text
        assert (
            "Not retrying deletion of topic t at this time since it is marked ineligible for "
            "deletion"
        ) in caplog.text
        ctl = cluster.controller()
        ctx, tdm = ctl.context, ctl.topic_deletion_manager
        assert await cluster.admin.store.exists("/brokers/topics/t") is not None
        assert "t" in tdm.topics_to_be_deleted and "t" in tdm.topics_ineligible_for_deletion
        # the dead replica failed at once (ReplicaDeletionIneligible); the next pass marked it
        # for retry (OfflineReplica), which waits because the topic is ineligible
        assert ctx.replica_states[PartitionAndReplica("t", 0, 2)] is ReplicaState.OFFLINE_REPLICA
        assert (
            ctx.replica_states[PartitionAndReplica("t", 0, 1)]
            is ReplicaState.REPLICA_DELETION_SUCCESSFUL
        )
        assert {r.broker_id for r in cluster.requests(SR)} == {0, 1}

        cluster.sent.clear()
        await cluster.start_broker(2)
        await cluster.settle()
        stops = cluster.requests(SR, 2)
        assert [r.delete_partitions() for r in stops] == [False, True]
        assert sorted(stops[-1].partitions()) == [("t", 0), ("t", 1)]
        for path in ("/brokers/topics/t", "/admin/delete_topics/t"):
            assert await cluster.admin.store.exists(path) is None, path
        assert not tdm.topics_to_be_deleted and not tdm.topics_ineligible_for_deletion

    run(body)


def test_failed_replica_deletion_is_retried_and_completes() -> None:
    async def body(cluster: ControllerCluster) -> None:
        await cluster.start(0, 1)
        await cluster.admin.create_topic_with_config("t", {0: [0, 1]}, {})
        await cluster.settle()
        failures = {"left": 1}

        def responder(request: SentRequest) -> dict[str, object]:
            error = 0
            if request.api_key == SR and request.delete_partitions() and request.broker_id == 1:
                if failures["left"]:
                    failures["left"] -= 1
                    error = 56  # KAFKA_STORAGE_ERROR
            return {
                "error_code": 0,
                "partition_errors": [
                    {"topic_name": t, "partition_index": p, "error_code": error}
                    for t, p in request.partitions()
                ],
            }

        cluster.responder = responder
        await cluster.admin.create_delete_topic_path("t")
        await cluster.settle()
        ctl = cluster.controller()
        # broker 1 failed once: the replica is ineligible, the topic waits
        assert await cluster.admin.store.exists("/brokers/topics/t") is not None
        assert "t" in ctl.topic_deletion_manager.topics_ineligible_for_deletion
        # broker 1 restarts: the deletion resumes and completes
        await cluster.stop_broker(1)
        await cluster.settle()
        await cluster.start_broker(1)
        await cluster.settle()
        assert await cluster.admin.store.exists("/brokers/topics/t") is None
        assert failures["left"] == 0

    run(body)


def test_delete_topic_disabled_removes_the_marker_and_keeps_the_topic() -> None:
    async def body(cluster: ControllerCluster) -> None:
        await cluster.start(0)
        await cluster.admin.create_topic_with_config("t", {0: [0]}, {})
        await cluster.settle()
        cluster.sent.clear()
        await cluster.admin.create_delete_topic_path("t")
        await cluster.settle()
        assert await cluster.admin.store.exists("/admin/delete_topics/t") is None
        assert await cluster.admin.store.exists("/brokers/topics/t") is not None
        assert not cluster.requests(SR)
        assert "t" in cluster.controller().context.all_topics

    run(body, delete_topic_enable=False)


def test_markers_of_non_existent_topics_are_removed() -> None:
    async def body(cluster: ControllerCluster) -> None:
        await cluster.start(0)
        await cluster.admin.create_delete_topic_path("ghost")
        await cluster.settle()
        assert await cluster.admin.store.exists("/admin/delete_topics/ghost") is None

    run(body)


def test_a_new_controller_finishes_a_pending_deletion() -> None:
    async def body(cluster: ControllerCluster) -> None:
        await cluster.start(0, 1, 2)
        await cluster.admin.create_topic_with_config("t", {0: [1, 2]}, {})
        await cluster.settle()
        await cluster.stop_broker(2)
        await cluster.settle()
        await cluster.admin.create_delete_topic_path("t")
        await cluster.settle()
        await cluster.stop_broker(0)  # the controller dies with the deletion pending
        await cluster.settle()
        assert cluster.controller().broker_id == 1
        assert await cluster.admin.store.exists("/brokers/topics/t") is not None
        await cluster.start_broker(2)
        await cluster.settle()
        assert await cluster.admin.store.exists("/brokers/topics/t") is None
        assert await cluster.admin.store.exists("/admin/delete_topics/t") is None

    run(body)
