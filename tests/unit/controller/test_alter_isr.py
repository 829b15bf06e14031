"""AlterIsr processing in the controller (KIP-497): validation, the ZooKeeper write, the
answer and the UpdateMetadata that follows, on controllers over a real metadata store."""

from __future__ import annotations

from kafpy.common.topic_partition import TopicPartition
from kafpy.controller.alter_isr import alter_isr_request_items, alter_isr_response
from kafpy.metadata.zk_data import LeaderAndIsr
from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.errors import Errors
from kafpy.protocol.messages import RESPONSES
from tests.unit.controller.fixtures import ControllerCluster, run, state_json

TP = TopicPartition("t", 0)


async def _cluster_with_topic(cluster: ControllerCluster) -> None:
    await cluster.start(0, 1, 2)
    # leader 1 (the first replica), ISR [1, 2, 0]
    await cluster.admin.create_topic_with_config("t", {0: [1, 2, 0]}, {})
    await cluster.settle()


def _epoch(cluster: ControllerCluster, broker_id: int) -> int:
    return cluster.controller().context.live_broker_epoch(broker_id)


def test_a_shrink_is_written_and_answered_with_the_new_version() -> None:
    async def body(cluster: ControllerCluster) -> None:
        await _cluster_with_topic(cluster)
        before = await state_json(cluster, "t", 0)
        assert before is not None and before["leader"] == 1 and before["isr"] == [1, 2, 0]
        cluster.sent.clear()
        ctl = cluster.controller()
        result = await ctl.alter_isr(1, _epoch(cluster, 1), {TP: LeaderAndIsr(1, 0, (1, 2), 0)})
        assert result.error_code == Errors.NONE
        assert result.partitions == {TP: LeaderAndIsr(1, 0, (1, 2), 1)}
        after = await state_json(cluster, "t", 0)
        assert after == {**before, "isr": [1, 2]}
        await cluster.settle()
        # every broker learns it through UpdateMetadata; no LeaderAndIsr is sent
        um = cluster.requests(ApiKey.UPDATE_METADATA)
        assert {r.broker_id for r in um} == {0, 1, 2}
        assert all(r.body["topic_states"][0]["partition_states"][0]["isr"] == [1, 2] for r in um)
        assert cluster.requests(ApiKey.LEADER_AND_ISR) == []
        # the controller's context has the new state
        assert ctl.context.partition_leadership_info[TP].leader_and_isr.zk_version == 1

    run(body)


def test_a_state_already_as_asked_is_answered_without_a_write() -> None:
    async def body(cluster: ControllerCluster) -> None:
        await _cluster_with_topic(cluster)
        ctl = cluster.controller()
        result = await ctl.alter_isr(1, _epoch(cluster, 1), {TP: LeaderAndIsr(1, 0, (1, 2, 0), 0)})
        assert result.partitions == {TP: LeaderAndIsr(1, 0, (1, 2, 0), 0)}
        _, stat = await cluster.admin.store.get("/brokers/topics/t/partitions/0/state")
        assert stat.version == 0

    run(body)


def test_partition_errors() -> None:
    async def body(cluster: ControllerCluster) -> None:
        await _cluster_with_topic(cluster)
        ctl = cluster.controller()
        unknown = TopicPartition("nope", 0)
        result = await ctl.alter_isr(
            1,
            _epoch(cluster, 1),
            {unknown: LeaderAndIsr(1, 0, (1,), 0), TP: LeaderAndIsr(1, 0, (1,), 7)},
        )
        assert result.partitions == {
            unknown: Errors.UNKNOWN_TOPIC_OR_PARTITION,
            TP: Errors.INVALID_UPDATE_VERSION,  # the znode is at version 0, not 7
        }
        # not the leader
        result = await ctl.alter_isr(2, _epoch(cluster, 2), {TP: LeaderAndIsr(2, 0, (2,), 0)})
        assert result.partitions == {TP: Errors.NOT_LEADER_OR_FOLLOWER}
        # an older leader epoch: move leadership away (epoch 1), then send at epoch 0
        state = await state_json(cluster, "t", 0)
        assert state is not None
        await cluster.admin.store.set(
            "/brokers/topics/t/partitions/0/state",
            b'{"controller_epoch":1,"leader":1,"version":1,"leader_epoch":1,"isr":[1,2,0]}',
        )
        ctl.context.partition_leadership_info[TP] = (
            await cluster.admin.get_topic_partition_states([TP])
        )[TP]
        result = await ctl.alter_isr(1, _epoch(cluster, 1), {TP: LeaderAndIsr(1, 0, (1,), 1)})
        assert result.partitions == {TP: Errors.FENCED_LEADER_EPOCH}
        assert (await state_json(cluster, "t", 0))["isr"] == [1, 2, 0]  # type: ignore[index]

    run(body)


def test_request_errors() -> None:
    async def body(cluster: ControllerCluster) -> None:
        await _cluster_with_topic(cluster)
        ctl = cluster.controller()
        item = {TP: LeaderAndIsr(1, 0, (1,), 0)}
        stale = await ctl.alter_isr(1, _epoch(cluster, 1) - 1, item)
        assert (stale.error_code, stale.partitions) == (Errors.STALE_BROKER_EPOCH, {})
        unknown_broker = await ctl.alter_isr(9, 5, item)
        assert unknown_broker.error_code == Errors.STALE_BROKER_EPOCH
        other = next(h.controller for h in cluster.brokers.values() if not h.controller.is_active)
        assert (
            await other.alter_isr(1, _epoch(cluster, 1), item)
        ).error_code == Errors.NOT_CONTROLLER
        assert (await state_json(cluster, "t", 0))["isr"] == [1, 2, 0]  # type: ignore[index]

    run(body)


def test_request_and_response_bodies() -> None:
    body = {
        "broker_id": 1, "broker_epoch": 5,
        "topics": [{"name": "t", "partitions": [
            {"partition_index": 0, "leader_epoch": 3, "new_isr": [1, 2], "current_isr_version": 4},
        ]}],
    }  # fmt: skip
    items = alter_isr_request_items(body)
    assert items == {TP: LeaderAndIsr(1, 3, (1, 2), 4)}
    from kafpy.controller.alter_isr import AlterIsrResult

    response = alter_isr_response(
        AlterIsrResult(Errors.NONE, {TP: LeaderAndIsr(1, 3, (1, 2), 5), TopicPartition("t", 1): 74})
    )
    encoded = RESPONSES[ApiKey.ALTER_ISR].encode(0, response)
    decoded = RESPONSES[ApiKey.ALTER_ISR].decode(0, encoded)
    parts = decoded["topics"][0]["partitions"]
    assert parts[0]["isr"] == [1, 2] and parts[0]["current_isr_version"] == 5
    assert parts[1]["error_code"] == Errors.FENCED_LEADER_EPOCH
