"""The ZooKeeper layout: paths and codecs compared against the literal bytes Kafka 2.x writes."""

from __future__ import annotations

import pytest

from kafpy.common.kafka_uuid import uuid_from_string
from kafpy.common.topic_partition import TopicPartition
from kafpy.metadata.store import Stat
from kafpy.metadata.zk_data import (
    PERSISTENT_ZK_PATHS,
    Broker,
    BrokerIdsZNode,
    BrokerIdZNode,
    BrokerInfo,
    BrokerSequenceIdZNode,
    ClusterIdZNode,
    ConfigEntityChangeNotificationSequenceZNode,
    ConfigEntityChangeNotificationZNode,
    ConfigEntityZNode,
    ControllerEpochZNode,
    ControllerZNode,
    DeleteTopicsTopicZNode,
    DeleteTopicsZNode,
    EndPoint,
    IsrChangeNotificationSequenceZNode,
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    LogDirEventNotificationSequenceZNode,
    PreferredReplicaElectionZNode,
    ProducerIdBlock,
    ProducerIdBlockZNode,
    ReassignPartitionsZNode,
    ReplicaAssignment,
    TopicPartitionStateZNode,
    TopicPartitionsZNode,
    TopicsZNode,
    TopicZNode,
    ZkDataError,
)

PLAINTEXT = EndPoint("host", 9092, "PLAINTEXT", "PLAINTEXT")


def _stat(version: int) -> Stat:
    return Stat(version, 0, 1, 1, 0, 0, 0, 0, 0)


def test_paths_are_kafkas() -> None:
    tp = TopicPartition("t", 3)
    assert BrokerIdsZNode.path == "/brokers/ids"
    assert BrokerIdZNode.path(5) == "/brokers/ids/5"
    assert TopicsZNode.path == "/brokers/topics"
    assert TopicZNode.path("t") == "/brokers/topics/t"
    assert TopicPartitionsZNode.path("t") == "/brokers/topics/t/partitions"
    assert TopicPartitionStateZNode.path(tp) == "/brokers/topics/t/partitions/3/state"
    assert ConfigEntityZNode.path("topics", "t") == "/config/topics/t"
    assert ConfigEntityChangeNotificationZNode.path == "/config/changes"
    assert (
        ConfigEntityChangeNotificationSequenceZNode.create_path == "/config/changes/config_change_"
    )
    assert DeleteTopicsZNode.path == "/admin/delete_topics"
    assert DeleteTopicsTopicZNode.path("t") == "/admin/delete_topics/t"
    assert ControllerZNode.path == "/controller"
    assert ControllerEpochZNode.path == "/controller_epoch"
    assert BrokerSequenceIdZNode.path == "/brokers/seqid"
    assert ProducerIdBlockZNode.path == "/latest_producer_id_block"
    assert IsrChangeNotificationSequenceZNode.path("0000000001") == (
        "/isr_change_notification/isr_change_0000000001"
    )
    assert LogDirEventNotificationSequenceZNode.path("0000000002") == (
        "/log_dir_event_notification/log_dir_event_0000000002"
    )
    assert ReassignPartitionsZNode.path == "/admin/reassign_partitions"
    assert PreferredReplicaElectionZNode.path == "/admin/preferred_replica_election"
    assert ClusterIdZNode.path == "/cluster/id"
    assert "/config/topics" in PERSISTENT_ZK_PATHS and "/admin/delete_topics" in PERSISTENT_ZK_PATHS


# Topic nodes as Kafka 2.8+ brokers wrote them, read back from ZooKeeper (zkCli `get`)
KAFKA_TOPIC_NODES = [
    ("t", b'{"removing_replicas":{},"partitions":{"0":[0]},"topic_id":"ZOLr9CLNQjSW70hyIHx6BQ",'
          b'"adding_replicas":{},"version":3}'),
    ("test-topic", b'{"removing_replicas":{},"partitions":{"2":[2,1],"1":[1,3],"0":[3,2]},'
                   b'"topic_id":"RSZ--odYRlSOPGRgukKnAQ","adding_replicas":{},"version":3}'),
    ("hello.kafka", b'{"removing_replicas":{},"partitions":{"2":[2],"1":[1],"0":[3],"3":[3]},'
                    b'"topic_id":"qCqvWVu9Q6OJ_udtfKYegA","adding_replicas":{},"version":3}'),
    ("__consumer_offsets",
     b'{"removing_replicas":{},"partitions":{"30":[1],"39":[0],"45":[0],"2":[1],"5":[0],"48":[1],'
     b'"33":[0],"27":[0],"12":[1],"8":[1],"15":[0],"42":[1],"36":[1],"21":[0],"18":[1],"24":[1],'
     b'"35":[0],"41":[0],"7":[0],"17":[0],"1":[0],"44":[1],"23":[0],"38":[1],"47":[0],"4":[1],'
     b'"26":[1],"11":[0],"32":[1],"14":[1],"20":[1],"29":[0],"46":[1],"34":[1],"28":[1],"6":[1],'
     b'"40":[1],"49":[0],"9":[0],"43":[0],"0":[1],"22":[1],"16":[1],"37":[0],"19":[0],"3":[0],'
     b'"10":[1],"31":[0],"25":[0],"13":[0]},"topic_id":"5Yu9oFhVRI6IUtNYNxoJ8w",'
     b'"adding_replicas":{},"version":3}'),
]  # fmt: skip


@pytest.mark.parametrize(("topic", "kafka"), KAFKA_TOPIC_NODES)
def test_topic_assignment_is_kafka_2_8s_json(topic: str, kafka: bytes) -> None:
    assignment = TopicZNode.decode(kafka)
    topic_id = TopicZNode.decode_topic_id(kafka)
    assert topic_id is not None
    # whatever order the assignment comes in, the node is written in Kafka's
    in_partition_order = {p: assignment[p] for p in sorted(assignment)}
    assert TopicZNode.encode(topic, in_partition_order, topic_id) == kafka
    reversed_order = {p: assignment[p] for p in sorted(assignment, reverse=True)}
    assert TopicZNode.encode(topic, reversed_order, topic_id) == kafka
    assert TopicZNode.decode_full(kafka) == {
        p: ReplicaAssignment(tuple(r)) for p, r in assignment.items()
    }


def test_topic_assignment_partition_order_follows_the_topic_name() -> None:
    # 20 partitions of a topic named diytopic222, as Kafka wrote them (the order depends on
    # the hash of TopicPartition, so on the name; the id here is another one)
    order = [2, 5, 12, 8, 15, 18, 7, 1, 17, 4, 11, 14, 6, 0, 9, 16, 10, 3, 19, 13]
    encoded = TopicZNode.encode("diytopic222", {p: [0] for p in range(20)}, None)
    assert list(TopicZNode.decode(encoded)) == order
    assert (
        list(TopicZNode.decode(TopicZNode.encode("other", {p: [0] for p in range(20)}, None)))
        != order
    )


def test_topic_assignment_without_an_id_and_older_versions() -> None:
    # a tool writes no id (the controller adds one); the key is left out, the version is 3
    assert TopicZNode.encode("t", {0: [1, 2, 0]}, None) == (
        b'{"removing_replicas":{},"partitions":{"0":[1,2,0]},"adding_replicas":{},"version":3}'
    )
    worked = {0: [1, 2, 0], 1: [2, 0, 1], 2: [0, 1, 2]}
    v1 = b'{"version":1,"partitions":{"2":[0,1,2],"1":[2,0,1],"0":[1,2,0]}}'
    assert TopicZNode.decode(v1) == worked
    assert list(TopicZNode.decode(v1)) == [2, 1, 0]  # the node's order is kept
    assert TopicZNode.decode_topic_id(v1) is None
    v2 = b'{"version":2,"partitions":{"0":[1]},"adding_replicas":{},"removing_replicas":{}}'
    assert TopicZNode.decode(v2) == {0: [1]}
    assert TopicZNode.decode(b"") == {}
    with pytest.raises(ZkDataError, match="malformed topic_id"):
        TopicZNode.decode_topic_id(b'{"version":3,"partitions":{},"topic_id":"nope"}')


def test_partition_state_is_kafkas_json() -> None:
    state = LeaderIsrAndControllerEpoch(LeaderAndIsr(1, 0, (1, 2, 0)), 1)
    encoded = TopicPartitionStateZNode.encode(state)
    assert encoded == (
        b'{"controller_epoch":1,"leader":1,"version":1,"leader_epoch":0,"isr":[1,2,0]}'
    )
    decoded = TopicPartitionStateZNode.decode(encoded, _stat(7))
    assert decoded == LeaderIsrAndControllerEpoch(LeaderAndIsr(1, 0, (1, 2, 0), 7), 1)


def test_partition_state_malformed_is_an_error_naming_the_data() -> None:
    with pytest.raises(ZkDataError, match="partition state"):
        TopicPartitionStateZNode.decode(b'{"leader":1}')


def test_entity_config_is_kafkas_json() -> None:
    assert ConfigEntityZNode.encode({}) == b'{"version":1,"config":{}}'
    encoded = ConfigEntityZNode.encode({"retention.ms": "1000"})
    assert encoded == b'{"version":1,"config":{"retention.ms":"1000"}}'
    assert ConfigEntityZNode.decode(encoded) == {"retention.ms": "1000"}
    assert ConfigEntityZNode.decode(None) == {}


def test_config_change_notification_is_kafkas_json() -> None:
    encoded = ConfigEntityChangeNotificationSequenceZNode.encode("topics/t")
    assert encoded == b'{"version":2,"entity_path":"topics/t"}'
    assert ConfigEntityChangeNotificationSequenceZNode.decode(encoded) == "topics/t"
    v1 = b'{"version":1,"entity_type":"topics","entity_name":"t"}'
    assert ConfigEntityChangeNotificationSequenceZNode.decode(v1) == "topics/t"


def test_broker_registration_version_4_is_kafkas_json() -> None:
    info = BrokerInfo(Broker(0, (PLAINTEXT,)), 4, -1, 1600000000000)
    assert BrokerIdZNode.encode(info) == (
        b'{"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},'
        b'"endpoints":["PLAINTEXT://host:9092"],"jmx_port":-1,"host":"host",'
        b'"timestamp":"1600000000000","port":9092,"version":4}'
    )


def test_broker_registration_with_rack_puts_rack_where_kafka_does() -> None:
    info = BrokerInfo(Broker(1, (PLAINTEXT,), "rack-a"), 4, 9999, 1600000000000)
    assert info.to_json_bytes() == (
        b'{"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},'
        b'"endpoints":["PLAINTEXT://host:9092"],"rack":"rack-a","jmx_port":9999,"host":"host",'
        b'"timestamp":"1600000000000","port":9092,"version":4}'
    )
    assert info.path == "/brokers/ids/1"


def test_broker_registration_without_plaintext_has_null_host() -> None:
    ssl = EndPoint("h", 9093, "SSL", "SSL")
    info = BrokerInfo(Broker(2, (ssl,)), 4, -1, 1)
    assert BrokerIdZNode.encode(info) == (
        b'{"listener_security_protocol_map":{"SSL":"SSL"},"endpoints":["SSL://h:9093"],'
        b'"jmx_port":-1,"host":null,"timestamp":"1","port":-1,"version":4}'
    )


def test_broker_registration_decodes_kafkas_bytes() -> None:
    kafka = (
        b'{"listener_security_protocol_map":{"INSIDE":"PLAINTEXT","OUTSIDE":"SSL"},'
        b'"endpoints":["INSIDE://10.0.0.1:9094","OUTSIDE://localhost:9092"],"rack":"r1",'
        b'"jmx_port":-1,"host":"10.0.0.1","timestamp":"1673918486526","port":9094,"version":4}'
    )
    info = BrokerIdZNode.decode(3, kafka)
    assert info.broker == Broker(
        3,
        (
            EndPoint("10.0.0.1", 9094, "INSIDE", "PLAINTEXT"),
            EndPoint("localhost", 9092, "OUTSIDE", "SSL"),
        ),
        "r1",
    )
    assert info.version == 4 and info.jmx_port == -1 and info.timestamp_ms == 1673918486526


def test_broker_registration_version_1_and_roundtrip() -> None:
    v1 = b'{"version":1,"host":"h","port":9092,"jmx_port":9999,"timestamp":"2233345666"}'
    assert BrokerIdZNode.decode(0, v1).broker.endpoints == (
        EndPoint("h", 9092, "PLAINTEXT", "PLAINTEXT"),
    )
    info = BrokerInfo(Broker(7, (EndPoint("::1", 9092, "PLAINTEXT", "PLAINTEXT"),), "r"), 4, -1, 5)
    assert BrokerIdZNode.decode(7, info.to_json_bytes()) == info


def test_broker_registration_garbage_is_an_error_naming_the_broker() -> None:
    with pytest.raises(ZkDataError, match="broker 4"):
        BrokerIdZNode.decode(4, b"not json")


def test_controller_and_epoch() -> None:
    assert ControllerZNode.encode(0, 1600000000000) == (
        b'{"version":1,"brokerid":0,"timestamp":"1600000000000"}'
    )
    assert ControllerZNode.decode(b'{"version":1,"brokerid":2,"timestamp":"1"}') == 2
    assert ControllerEpochZNode.encode(3) == b"3"
    assert ControllerEpochZNode.decode(b"12") == 12


def test_notifications_and_admin_requests() -> None:
    tp = TopicPartition("t", 0)
    assert IsrChangeNotificationSequenceZNode.encode([tp]) == (
        b'{"version":1,"partitions":[{"topic":"t","partition":0}]}'
    )
    assert IsrChangeNotificationSequenceZNode.decode(
        b'{"version":1,"partitions":[{"topic":"t","partition":0}]}'
    ) == {tp}
    assert (
        IsrChangeNotificationSequenceZNode.sequence_number(
            "/isr_change_notification/isr_change_0000000042"
        )
        == "0000000042"
    )
    assert LogDirEventNotificationSequenceZNode.encode(1) == b'{"version":1,"broker":1,"event":1}'
    assert ReassignPartitionsZNode.encode({tp: [1, 2]}) == (
        b'{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2]}]}'
    )
    assert ReassignPartitionsZNode.decode(ReassignPartitionsZNode.encode({tp: [1, 2]})) == {
        tp: [1, 2]
    }
    assert PreferredReplicaElectionZNode.encode([tp]) == (
        b'{"version":1,"partitions":[{"topic":"t","partition":0}]}'
    )


def test_cluster_id_and_producer_id_block() -> None:
    assert ClusterIdZNode.to_json("zIe91t8eRW-4e_je0Yarbw") == (
        b'{"version":"1","id":"zIe91t8eRW-4e_je0Yarbw"}'
    )
    assert ClusterIdZNode.from_json(b'{"version":"1","id":"abc"}') == "abc"
    block = ProducerIdBlock(0, 8000, 8999)
    assert ProducerIdBlockZNode.encode(block) == (
        b'{"version":1,"broker":0,"block_start":"8000","block_end":"8999"}'
    )
    assert ProducerIdBlockZNode.decode(ProducerIdBlockZNode.encode(block)) == block


def test_broker_registration_with_two_listeners_matches_kafkas_bytes() -> None:
    # as a Kafka 2.x broker with INSIDE/OUTSIDE listeners registered itself
    kafka = (
        b'{"listener_security_protocol_map":{"INSIDE":"PLAINTEXT","OUTSIDE":"PLAINTEXT"},'
        b'"endpoints":["INSIDE://8e01bd4ee16c:9094","OUTSIDE://localhost:9092"],"jmx_port":-1,'
        b'"host":"8e01bd4ee16c","timestamp":"1673918486526","port":9094,"version":4}'
    )
    info = BrokerIdZNode.decode(1, kafka)
    assert BrokerIdZNode.encode(info) == kafka


# -- ACLs ---------------------------------------------------------------------------------


def test_acl_node_paths_are_kafkas() -> None:
    from kafpy.metadata.zk_data import AclZNode

    assert AclZNode.path("LITERAL", "Topic", "a") == "/kafka-acl/Topic/a"
    assert AclZNode.path("PREFIXED", "Group", "g") == "/kafka-acl-extended/prefixed/Group/g"


def test_acl_node_json_round_trips_kafkas_bytes() -> None:
    from kafpy.metadata.zk_data import AclEntryData, ResourceZNode

    kafka = (b'{"version":1,"acls":[{"principal":"User:alice","permissionType":"Allow",'
             b'"operation":"Read","host":"*"}]}')  # fmt: skip
    entry = AclEntryData("User:alice", "Allow", "Read", "*")
    assert ResourceZNode.encode([entry]) == kafka
    # any key order, as Kafka's own doc comment writes it
    assert ResourceZNode.decode(
        b'{"version":1,"acls":[{"host":"*","permissionType":"Allow","operation":"Read",'
        b'"principal":"User:alice"}]}'
    ) == [entry]


def test_acl_change_notifications_are_kafkas() -> None:
    from kafpy.metadata.zk_data import AclChangeNotificationZNode as N

    assert N.create_path("LITERAL") == "/kafka-acl-changes/acl_changes_"
    assert N.create_path("PREFIXED") == "/kafka-acl-extended-changes/acl_changes_"
    assert N.encode("TRANSACTIONAL_ID", "tx", "LITERAL") == b"TRANSACTIONAL_ID:tx"
    assert N.decode(N.LITERAL_PATH, b"Topic:a:b") == ("TOPIC", "a:b", "LITERAL")
    extended = N.encode("TOPIC", "pay", "PREFIXED")
    assert extended == b'{"version":1,"resourceType":"TOPIC","name":"pay","patternType":"PREFIXED"}'
    assert N.decode(N.EXTENDED_PATH, extended) == ("TOPIC", "pay", "PREFIXED")


def test_malformed_acl_json_names_the_node() -> None:
    from kafpy.metadata.zk_data import ResourceZNode

    with pytest.raises(ZkDataError, match="/kafka-acl/Topic/a is not version 1 ACL JSON"):
        ResourceZNode.decode(b'{"version":2,"acls":[]}', "/kafka-acl/Topic/a")


def test_topic_znode_with_adding_and_removing_replicas() -> None:
    # Kafka 2.4+ TopicZNode: partitions being reassigned carry their AR and RR
    full = {
        0: ReplicaAssignment((1, 2, 0), (2,), (0,)),
        1: ReplicaAssignment((2, 0)),
    }
    topic_id = uuid_from_string("RSZ--odYRlSOPGRgukKnAQ")
    encoded = TopicZNode.encode("t", full, topic_id)
    assert encoded == (
        b'{"removing_replicas":{"0":[0]},"partitions":{"1":[2,0],"0":[1,2,0]},'
        b'"topic_id":"RSZ--odYRlSOPGRgukKnAQ","adding_replicas":{"0":[2]},"version":3}'
    )
    assert TopicZNode.decode_full(encoded) == full
    assert TopicZNode.decode(encoded) == {0: [1, 2, 0], 1: [2, 0]}
    assert TopicZNode.decode_topic_id(encoded) == topic_id
    # a version 1 node has nothing being reassigned
    assert TopicZNode.decode_full(b'{"version":1,"partitions":{"0":[1]}}') == {
        0: ReplicaAssignment((1,))
    }
    with pytest.raises(ZkDataError, match="adding_replicas"):
        TopicZNode.decode_full(b'{"version":2,"partitions":{"0":[1]},"adding_replicas":{"0":"x"}}')


def test_reassign_partitions_znode_is_kafkas_json() -> None:
    tp = TopicPartition("t", 0)
    encoded = ReassignPartitionsZNode.encode({tp: [1, 2]})
    assert encoded == b'{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2]}]}'
    assert ReassignPartitionsZNode.decode(encoded) == {tp: [1, 2]}
    with pytest.raises(ZkDataError):
        ReassignPartitionsZNode.decode(b'{"version":1,"partitions":[{"topic":"t"}]}')


def test_replica_assignment_as_kafkas() -> None:
    current = ReplicaAssignment((0, 1))
    moving = current.reassign_to([1, 2])
    assert moving == ReplicaAssignment((1, 2, 0), (2,), (0,))
    assert moving.origin_replicas == (1, 0) and moving.target_replicas == (1, 2)
    assert moving.is_being_reassigned and not current.is_being_reassigned
    # a new target while one runs starts again from the origin replicas
    assert moving.reassign_to([3]) == ReplicaAssignment((3, 1, 0), (3,), (1, 0))
    assert moving.remove_replica(0) == ReplicaAssignment((1, 2), (2,), ())
    assert str(moving) == "ReplicaAssignment(replicas=1,2,0, addingReplicas=2, removingReplicas=0)"
