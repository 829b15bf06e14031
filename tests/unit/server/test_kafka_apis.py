"""Tests of KafkaApis: each handler through encoded requests and decoded responses."""

from __future__ import annotations

import asyncio
import threading
import uuid
from pathlib import Path
from typing import Any

import pytest

from kafpy.admin.admin_zk_client import AdminZkClient
from kafpy.common.topic_partition import TopicPartition
from kafpy.controller.kafka_controller import KafkaController
from kafpy.metadata.embedded_store import EmbeddedStore
from kafpy.metadata.kafka_zk_client import KafkaZkClient
from kafpy.metadata.zk_data import Broker as ZkBroker
from kafpy.metadata.zk_data import BrokerInfo, EndPoint
from kafpy.network.request_channel import CloseConnection, Request
from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.api_versions import SUPPORTED_VERSIONS
from kafpy.protocol.headers import (
    RequestHeader,
    decode_request_header,
    decode_response,
    encode_request,
)
from kafpy.protocol.messages import REQUESTS
from kafpy.records.builder import build_batch
from kafpy.records.compression import CompressionType
from kafpy.records.memory_records import MemoryRecords
from kafpy.server.kafka_apis import KafkaApis
from kafpy.server.kafka_config import KafkaConfig
from kafpy.server.replica_selector import RackAwareReplicaSelector
from kafpy.storage.log_validator import LogValidator
from tests.fixtures.forged_batches import lying_batches
from tests.unit.server.fixtures import Broker, leader_and_isr, partition_state, update_metadata


def make_request(
    api_key: int, version: int, body: dict[str, Any] | None, correlation_id: int = 7
) -> Request:
    frame = memoryview(
        bytearray(
            encode_request(RequestHeader(api_key, version, correlation_id, "c"), body or {})[4:]
        )
    )
    header, offset = decode_request_header(frame)
    lo_hi = SUPPORTED_VERSIONS.get(ApiKey(api_key))
    decoded = None
    if lo_hi is not None and lo_hi[0] <= version <= lo_hi[1]:
        decoded = REQUESTS[ApiKey(api_key)].decode(version, frame, offset)
    return Request(header, decoded, frame, len(frame), 0, "conn-0", ("127.0.0.1", 1), "PLAINTEXT")


def call(
    apis: KafkaApis, api_key: int, version: int, body: dict[str, Any] | None
) -> dict[str, Any] | None:
    parts = asyncio.run(apis.handle(make_request(api_key, version, body)))
    if parts is None:
        return None
    frame = b"".join(bytes(p) for p in parts)
    cid, decoded = decode_response(api_key, version, frame[4:])
    assert cid == 7
    return decoded


def apis_for(broker: Broker, **config: str) -> KafkaApis:
    cfg = KafkaConfig(
        {"broker.id": str(broker.broker_id), "log.dirs": str(broker.tmp_path / "x"), **config}
    )
    return KafkaApis(cfg, broker.replica_manager, broker.metadata_cache, None, "cluster-1")


def test_api_versions_lists_served_apis(broker: Broker) -> None:
    resp = call(apis_for(broker), ApiKey.API_VERSIONS, 2, {})
    assert resp is not None and resp["error_code"] == 0
    ranges = {e["api_key"]: (e["min_version"], e["max_version"]) for e in resp["api_keys"]}
    assert ranges[ApiKey.METADATA] == (0, 11) and ranges[ApiKey.FETCH] == (0, 12)
    assert ranges[ApiKey.PRODUCE] == (0, 9) and ranges[ApiKey.API_VERSIONS] == (0, 3)
    assert all(k in SUPPORTED_VERSIONS for k in ranges)


def test_api_versions_fallback_for_newer_versions(broker: Broker) -> None:
    parts = asyncio.run(apis_for(broker).handle(make_request(ApiKey.API_VERSIONS, 4, {})))
    assert parts is not None
    frame = b"".join(bytes(p) for p in parts)
    cid, body = decode_response(ApiKey.API_VERSIONS, 0, frame[4:])
    assert cid == 7 and body["error_code"] == 35
    assert body["api_keys"] == [{"api_key": 18, "min_version": 0, "max_version": 3}]


def test_unsupported_version_closes_the_connection(broker: Broker) -> None:
    with pytest.raises(CloseConnection, match=r"Metadata v12 .* serves versions 0 to 11"):
        asyncio.run(apis_for(broker).handle(make_request(ApiKey.METADATA, 12, {"topics": None})))


def test_metadata_lists_brokers_topics_and_unknown_topics(broker: Broker) -> None:
    broker.lead("t", 2)
    apis = apis_for(broker, **{"auto.create.topics.enable": "false"})
    resp = call(
        apis, ApiKey.METADATA, 8, {"topics": [{"name": "t"}, {"name": "nope"}, {"name": "b@d"}]}
    )
    assert resp is not None
    assert resp["brokers"] == [{"node_id": 0, "host": "127.0.0.1", "port": 9092, "rack": None}]
    assert resp["cluster_id"] == "cluster-1" and resp["controller_id"] == 0
    t, nope, bad = resp["topics"]
    assert [p["leader_id"] for p in t["partitions"]] == [0, 0]
    assert (nope["name"], nope["error_code"]) == ("nope", 3)
    assert bad["error_code"] == 17
    all_topics = call(apis, ApiKey.METADATA, 1, {"topics": None})
    assert [x["name"] for x in all_topics["topics"]] == ["t"]  # type: ignore[index]
    v0_all = call(apis, ApiKey.METADATA, 0, {"topics": []})
    assert [x["name"] for x in v0_all["topics"]] == ["t"]  # type: ignore[index]


def test_metadata_answers_are_reused_until_the_next_update_metadata(broker: Broker) -> None:
    broker.lead("t", 2)
    apis = apis_for(broker, **{"auto.create.topics.enable": "false"})
    request = {"topics": [{"name": "t"}]}
    first = call(apis, ApiKey.METADATA, 8, request)
    assert call(apis, ApiKey.METADATA, 8, request) == first
    assert apis.metadata_responses_reused == 1
    # the reused body gets the request's own correlation id
    parts = asyncio.run(apis.handle(make_request(ApiKey.METADATA, 8, request, correlation_id=9)))
    assert parts is not None
    cid, again = decode_response(ApiKey.METADATA, 8, b"".join(bytes(p) for p in parts)[4:])
    assert (cid, again) == (9, first)
    assert apis.metadata_responses_reused == 2
    # another version is another answer
    assert call(apis, ApiKey.METADATA, 1, request)["topics"][0]["name"] == "t"  # type: ignore[index]
    assert apis.metadata_responses_reused == 2

    broker.metadata_cache.update_metadata(
        update_metadata([partition_state("t", 0, 0, leader_epoch=5), partition_state("t", 1, 0)])
    )
    after = call(apis, ApiKey.METADATA, 8, request)
    assert after is not None and after["topics"][0]["partitions"][0]["leader_epoch"] == 5
    assert apis.metadata_responses_reused == 2

    # an answer naming an unknown topic is built every time
    unknown = {"topics": [{"name": "t"}, {"name": "nope"}]}
    call(apis, ApiKey.METADATA, 8, unknown)
    assert call(apis, ApiKey.METADATA, 8, unknown)["topics"][1]["error_code"] == 3  # type: ignore[index]
    assert apis.metadata_responses_reused == 2


def test_metadata_auto_creates_topics(broker: Broker, tmp_path: Path) -> None:
    async def scenario() -> tuple[dict[str, Any], Any]:
        store = EmbeddedStore(tmp_path / "meta")
        await store.start()
        zk = KafkaZkClient(store)
        await zk.make_sure_persistent_paths_exist()
        await zk.register_broker(
            BrokerInfo(ZkBroker(0, (EndPoint("127.0.0.1", 9092, "PLAINTEXT", "PLAINTEXT"),), None))
        )
        cfg = KafkaConfig(
            {"broker.id": "0", "log.dirs": str(tmp_path / "x"), "num.partitions": "3"}
        )
        apis = KafkaApis(cfg, broker.replica_manager, broker.metadata_cache, AdminZkClient(zk), "c")
        parts = await apis.handle(make_request(ApiKey.METADATA, 8, {"topics": [{"name": "auto"}]}))
        assert parts is not None
        _, resp = decode_response(ApiKey.METADATA, 8, b"".join(bytes(p) for p in parts)[4:])
        no_auto = await apis.handle(
            make_request(
                ApiKey.METADATA,
                8,
                {"topics": [{"name": "other"}], "allow_auto_topic_creation": False},
            )
        )
        assert no_auto is not None
        assignment = await zk.get_partition_assignment_for_topics(["auto"])
        other = await zk.topic_exists("other")
        await store.close()
        return resp, (assignment, other)

    resp, (assignment, other_exists) = asyncio.run(scenario())
    assert resp["topics"][0]["error_code"] == 5  # LEADER_NOT_AVAILABLE while it comes online
    assert len(assignment["auto"]) == 3
    assert not other_exists


def produce_body(records: bytes | None, acks: int = 1, topic: str = "t") -> dict[str, Any]:
    return {"acks": acks, "timeout_ms": 1000,
            "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": records}]}]}  # fmt: skip


def test_produce_then_fetch_round_trip(broker: Broker) -> None:
    broker.lead("t")
    apis = apis_for(broker)
    batch = build_batch([b"a", b"b"], timestamp=123)
    resp = call(apis, ApiKey.PRODUCE, 8, produce_body(batch))
    assert resp is not None
    [p] = resp["responses"][0]["partition_responses"]
    assert (p["error_code"], p["base_offset"], p["log_start_offset"]) == (0, 0, 0)
    assert call(apis, ApiKey.PRODUCE, 7, produce_body(batch, acks=0)) is None
    fetch = {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 1 << 20, "isolation_level": 0,
             "session_id": 0, "session_epoch": -1,
             "topics": [{"topic": "t", "partitions": [{"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20,
                                                       "current_leader_epoch": -1, "log_start_offset": -1}]}],
             "forgotten_topics_data": [], "rack_id": ""}  # fmt: skip
    resp = call(apis, ApiKey.FETCH, 11, fetch)
    assert resp is not None and resp["error_code"] == 0 and resp["session_id"] == 0
    [part] = resp["responses"][0]["partitions"]
    assert (part["high_watermark"], part["last_stable_offset"], part["log_start_offset"]) == (
        4,
        4,
        0,
    )
    assert [r.offset for r in MemoryRecords(part["records"]).records()] == [0, 1, 2, 3]
    unknown = {
        **fetch,
        "session_id": 5,
        "session_epoch": 1,
    }  # an incremental fetch, no such session
    assert call(apis, ApiKey.FETCH, 11, unknown)["error_code"] == 70  # type: ignore[index]


def test_produce_rejections(broker: Broker) -> None:
    broker.lead("t")
    apis = apis_for(broker)
    batch = build_batch([b"a"])

    def error(body: dict[str, Any], version: int = 8) -> int:
        resp = call(apis, ApiKey.PRODUCE, version, body)
        assert resp is not None
        return int(resp["responses"][0]["partition_responses"][0]["error_code"])

    assert error(produce_body(batch, acks=2)) == 21
    assert error(produce_body(batch + batch)) == 87  # two batches
    assert error(produce_body(None)) == 87
    assert error(produce_body(batch[:-5])) == 87  # torn
    assert error(produce_body(batch[:16] + b"\x01" + batch[17:])) == 87  # magic 1
    corrupt = bytearray(batch)
    corrupt[-1] ^= 1
    assert error(produce_body(bytes(corrupt))) == 2
    assert error(produce_body(batch, topic="other")) == 3
    with pytest.raises(CloseConnection, match="ack=0"):
        asyncio.run(
            apis.handle(make_request(ApiKey.PRODUCE, 8, produce_body(bytes(corrupt), acks=0)))
        )


def test_list_offsets(broker: Broker) -> None:
    broker.lead("t", leader_epoch=2)
    apis = apis_for(broker)
    call(apis, ApiKey.PRODUCE, 8, produce_body(build_batch([b"a"], timestamp=100)))
    call(apis, ApiKey.PRODUCE, 8, produce_body(build_batch([b"b"], timestamp=200)))

    def lookup(ts: int, version: int = 5) -> dict[str, Any]:
        body = {"replica_id": -1, "isolation_level": 0,
                "topics": [{"name": "t", "partitions": [{"partition_index": 0, "current_leader_epoch": -1, "timestamp": ts}]}]}  # fmt: skip
        resp = call(apis, ApiKey.LIST_OFFSETS, version, body)
        assert resp is not None
        return dict(resp["topics"][0]["partitions"][0])

    assert (lookup(-2)["offset"], lookup(-2)["leader_epoch"]) == (0, 2)
    assert lookup(-1)["offset"] == 2
    assert (lookup(150)["offset"], lookup(150)["timestamp"]) == (1, 200)
    assert lookup(999)["offset"] == -1
    assert lookup(-1, version=1)["offset"] == 2


def test_controller_requests(broker: Broker) -> None:
    apis = apis_for(broker)
    states = [partition_state("t", 0, 0, leader_epoch=1, controller_epoch=3)]
    um = call(apis, ApiKey.UPDATE_METADATA, 5, {**update_metadata(states, controller_epoch=3),
                                                "topic_states": [{"topic_name": "t", "partition_states": states}],
                                                "ungrouped_partition_states": []})  # fmt: skip
    assert um == {"error_code": 0}
    lai = call(apis, ApiKey.LEADER_AND_ISR, 1, leader_and_isr(states, controller_epoch=3))
    assert lai is not None and lai["error_code"] == 0
    assert lai["partition_errors"] == [{"topic_name": "t", "partition_index": 0, "error_code": 0}]
    assert call(apis, ApiKey.UPDATE_METADATA, 4, update_metadata(states, controller_epoch=2)) == {
        "error_code": 11
    }
    # the broker's current epoch is the one its controller holds
    apis.controller = KafkaController(
        apis.config, KafkaZkClient(EmbeddedStore(None)), broker_epoch=10
    )
    header = {"controller_id": 0, "controller_epoch": 3}
    stop_t0 = {
        **header,
        "delete_partitions": True,
        "topics": [{"name": "t", "partition_indexes": [0]}],
    }
    # meant for an earlier registration of this broker: refused, nothing done
    for api_key, version, body in [
        (ApiKey.LEADER_AND_ISR, 2, {**header, "topic_states": [], "live_leaders": []}),
        (ApiKey.UPDATE_METADATA, 5, {**header, "topic_states": [], "live_brokers": []}),
        (ApiKey.STOP_REPLICA, 1, stop_t0),
    ]:
        stale = call(apis, api_key, version, {**body, "broker_epoch": 9})
        assert stale is not None and stale["error_code"] == 77, api_key
    assert broker.log_manager.get_log(TopicPartition("t", 0)) is not None
    # without an epoch (a controller before KIP-380), or a newer one the controller
    # learnt first: taken
    for epoch in (-1, 11):
        lai = call(apis, ApiKey.LEADER_AND_ISR, 2, {**header, "broker_epoch": epoch, "topic_states": [],
                                                    "live_leaders": []})  # fmt: skip
        assert lai is not None and lai["error_code"] == 0
    stop = call(apis, ApiKey.STOP_REPLICA, 1, {**stop_t0, "broker_epoch": 10})
    assert stop is not None and stop["partition_errors"][0]["error_code"] == 0
    assert broker.log_manager.get_log(TopicPartition("t", 0)) is None


def test_leader_and_isr_shuts_down_fetchers_left_idle(broker: Broker) -> None:
    """As Kafka's becomeLeaderOrFollower: a fetcher whose partitions all moved away (here the
    follower became the leader) is stopped, not left polling its old leader."""
    apis = apis_for(broker)

    async def main() -> None:
        follower = [partition_state("t", 0, 1, leader_epoch=1, replicas=[1, 0])]
        broker.metadata_cache.update_metadata(update_metadata(follower, [0, 1], base_port=1))
        await apis.handle(make_request(ApiKey.LEADER_AND_ISR, 1, leader_and_isr(follower)))
        fetchers = broker.replica_manager.replica_fetcher_manager.fetchers
        assert [f.partition_count for f in fetchers.values()] == [1]
        leader = [partition_state("t", 0, 0, leader_epoch=2, replicas=[1, 0])]
        await apis.handle(make_request(ApiKey.LEADER_AND_ISR, 1, leader_and_isr(leader)))
        assert fetchers == {}

    asyncio.run(main())


def _fetch_v12(fetch_offset: int, last_fetched_epoch: int) -> dict[str, Any]:
    return {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 1 << 20,
            "topics": [{"topic": "t", "partitions": [{"partition": 0, "fetch_offset": fetch_offset,
                        "partition_max_bytes": 1 << 20, "last_fetched_epoch": last_fetched_epoch}]}]}  # fmt: skip


def test_fetch_v12_answers_a_diverging_epoch(broker: Broker) -> None:
    broker.lead("t")
    apis = apis_for(broker)
    call(apis, ApiKey.PRODUCE, 9, produce_body(build_batch([b"a", b"b"])))
    broker.lead("t", leader_epoch=2)
    call(apis, ApiKey.PRODUCE, 9, produce_body(build_batch([b"c", b"d"])))

    def partition(fetch_offset: int, last_fetched_epoch: int) -> dict[str, Any]:
        resp = call(apis, ApiKey.FETCH, 12, _fetch_v12(fetch_offset, last_fetched_epoch))
        assert resp is not None
        [part] = resp["responses"][0]["partitions"]
        return part

    # epoch 0 ended at offset 2: a fetcher at 3 that last saw epoch 0 (or 1) has diverged
    for last in (0, 1):
        diverged = partition(3, last)
        assert diverged["error_code"] == 0 and diverged["high_watermark"] == 4
        assert diverged["diverging_epoch"] == {"epoch": 0, "end_offset": 2}
        assert not diverged["records"]
    same = partition(2, 0)
    assert same["diverging_epoch"] is None
    assert [r.offset for r in MemoryRecords(same["records"]).records()] == [2, 3]
    # without last_fetched_epoch (or below v12) nothing is checked
    assert partition(3, -1)["diverging_epoch"] is None
    assert (
        partition(0, 5)["error_code"] == 1
    )  # an epoch this log never had past its end: out of range


def test_api_versions_v3_checks_the_client_software(broker: Broker) -> None:
    apis = apis_for(broker)
    ok = call(apis, ApiKey.API_VERSIONS, 3,
              {"client_software_name": "kafka-python", "client_software_version": "3.0.1"})  # fmt: skip
    assert ok is not None and ok["error_code"] == 0 and ok["api_keys"]
    for name, version in (("", "1.0"), ("bad name", "1.0"), ("x", "1.0-")):
        bad = call(apis, ApiKey.API_VERSIONS, 3,
                   {"client_software_name": name, "client_software_version": version})  # fmt: skip
        assert bad is not None and (bad["error_code"], bad["api_keys"]) == (42, [])


def test_metadata_v10_v11_and_authorized_operations(broker: Broker) -> None:
    broker.lead("t")
    apis = apis_for(broker, **{"auto.create.topics.enable": "false"})
    resp = call(apis, ApiKey.METADATA, 10, {"topics": [{"name": "t"}], "include_cluster_authorized_operations": True,
                                            "include_topic_authorized_operations": True})  # fmt: skip
    assert resp is not None
    [t] = resp["topics"]
    # no authorizer: every operation of Kafka's AclEntry.supportedOperations
    assert t["topic_authorized_operations"] == 0b1101_1111_1000
    assert resp["cluster_authorized_operations"] == 0b1_1111_1010_0000
    plain = call(apis, ApiKey.METADATA, 11, {"topics": [{"name": "t"}]})
    assert plain is not None and plain["topics"][0]["topic_authorized_operations"] == -(2**31)
    by_id = call(apis, ApiKey.METADATA, 11, {"topics": [{"name": "t", "topic_id": uuid.uuid4()}]})
    assert by_id is not None and by_id["topics"][0]["error_code"] == 42
    # a null name (which the request allows from v10) is refused as Kafka 2.8 does: the
    # whole request, each name answered, a null one as "" (the response has no null names)
    null_name = call(apis, ApiKey.METADATA, 11, {"topics": [{"name": None}, {"name": "t"}]})
    assert null_name is not None
    assert [(t["name"], t["error_code"]) for t in null_name["topics"]] == [("", 42), ("t", 42)]


def test_describe_cluster(broker: Broker) -> None:
    broker.lead("t")
    apis = apis_for(broker)
    resp = call(apis, ApiKey.DESCRIBE_CLUSTER, 0, {"include_cluster_authorized_operations": True})
    assert resp is not None and resp["error_code"] == 0
    assert (resp["cluster_id"], resp["controller_id"]) == ("cluster-1", 0)
    assert resp["brokers"] == [{"broker_id": 0, "host": "127.0.0.1", "port": 9092, "rack": None}]
    assert resp["cluster_authorized_operations"] == 0b1_1111_1010_0000
    plain = call(apis, ApiKey.DESCRIBE_CLUSTER, 0, {})
    assert plain is not None and plain["cluster_authorized_operations"] == -(2**31)


def test_compressed_batches_are_validated_off_the_event_loop_once(
    broker: Broker, monkeypatch: pytest.MonkeyPatch
) -> None:
    broker.lead("t")
    apis = apis_for(broker)
    walks: list[int] = []
    original = LogValidator._validate_records

    def spy(self: LogValidator, *args: Any) -> None:
        walks.append(threading.get_ident())
        original(self, *args)

    monkeypatch.setattr(LogValidator, "_validate_records", spy)
    batch = build_batch([b"a", b"b"], compression=CompressionType.ZSTD)
    resp = call(apis, ApiKey.PRODUCE, 8, produce_body(batch))
    assert resp is not None and resp["responses"][0]["partition_responses"][0]["error_code"] == 0
    assert len(walks) == 1 and walks[0] != threading.get_ident()  # once, in a worker thread
    walks.clear()
    garbage = lying_batches(0)["garbage-zstd-payload"]
    resp = call(apis, ApiKey.PRODUCE, 8, produce_body(garbage))
    assert resp is not None and resp["responses"][0]["partition_responses"][0]["error_code"] == 2
    # refused in the thread, then again (bounded) by the append, which answers the error
    assert len(walks) == 2 and walks[1] == threading.get_ident()


def test_fetch_v12_diverging_answer_reports_the_last_stable_offset(broker: Broker) -> None:
    broker.lead("t")
    apis = apis_for(broker)
    call(apis, ApiKey.PRODUCE, 9, produce_body(build_batch([b"a", b"b"])))
    broker.lead("t", leader_epoch=2)
    txn = build_batch(
        [b"t"], producer_id=5, producer_epoch=0, base_sequence=0, is_transactional=True
    )
    call(apis, ApiKey.PRODUCE, 9, produce_body(txn))  # an open transaction at offset 2
    resp = call(apis, ApiKey.FETCH, 12, _fetch_v12(3, 0))
    assert resp is not None
    [part] = resp["responses"][0]["partitions"]
    assert part["diverging_epoch"] == {"epoch": 0, "end_offset": 2}
    assert (part["high_watermark"], part["last_stable_offset"]) == (3, 2)


def test_fetch_v11_names_the_preferred_read_replica_in_full_and_incremental_answers(
    broker: Broker,
) -> None:
    states = [partition_state("t", 0, 0, replicas=[0, 1])]
    broker.metadata_cache.update_metadata(update_metadata(states, [0, 1], racks={0: "a", 1: "b"}))
    broker.replica_manager.become_leader_or_follower(leader_and_isr(states))
    broker.replica_manager.replica_selector = RackAwareReplicaSelector()
    apis = apis_for(broker)
    call(apis, ApiKey.PRODUCE, 9, produce_body(build_batch([b"a", b"b"])))
    follower = {**_fetch_v12(2, -1), "replica_id": 1}
    call(apis, ApiKey.FETCH, 12, follower)  # follower 1 has offsets 0-1: the HW is 2

    def fetch(rack: str, session_id: int, epoch: int, offset: int | None) -> dict[str, Any]:
        body = {**_fetch_v12(offset or 0, -1), "rack_id": rack, "session_id": session_id,
                "session_epoch": epoch, "forgotten_topics_data": []}  # fmt: skip
        if offset is None:
            body["topics"] = []
        resp = call(apis, ApiKey.FETCH, 11, body)
        assert resp is not None and resp["error_code"] == 0
        return resp

    opened = fetch("b", 0, 0, 0)  # a new session
    [part] = opened["responses"][0]["partitions"]
    assert (part["preferred_read_replica"], part["high_watermark"]) == (1, 2)
    assert not part["records"]
    # nothing changed, yet the incremental answer carries the partition: it names a replica
    again = fetch("b", opened["session_id"], 1, None)
    assert again["responses"][0]["partitions"][0]["preferred_read_replica"] == 1
    local = fetch("a", 0, -1, 0)["responses"][0]["partitions"][0]
    assert local["preferred_read_replica"] == -1 and local["records"]
