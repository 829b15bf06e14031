"""The ZooKeeper data layout of Kafka 2.x: every node's path and the codec of its data.

Named after Kafka's `kafka.zk.ZkData`: one class per kind of node, with `path(...)` and,
where the node holds data, `encode(...)`/`decode(...)`. The bytes are the ones Kafka
writes, so a person (or a Kafka tool) browsing ZooKeeper sees what Kafka would write:
compact JSON (no spaces), with the key order Kafka's Scala maps produce. That order is
a property of Scala 2.12's hash maps, not of the data: for nodes with a fixed set of keys
it is spelled out per node below; for a topic's partitions it is computed (see
`TopicZNode`) and for a broker's listener map. Config maps are written in the caller's
order (Kafka's depends on the JVM's java.util.Properties implementation).

Decoders accept any key order and ignore unknown keys, as Kafka's do.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from kafpy.common.java_hash import java_string_hash
from kafpy.common.kafka_uuid import uuid_from_string, uuid_to_string
from kafpy.common.topic_partition import TopicPartition
from kafpy.metadata.store import Stat


class ZkDataError(ValueError):
    """A node's data is not what Kafka writes there; the message names the node."""


def _dumps(obj: Any) -> bytes:
    # Kafka's Json.encodeAsBytes: Jackson, compact, UTF-8, non-ASCII left as is
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def _loads(data: bytes | None, what: str) -> Any:
    if data is None or len(data) == 0:
        return None
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ZkDataError(f"{what} is not valid JSON: {data!r} ({e})") from e


def _loads_object(data: bytes | None, what: str) -> dict[str, Any] | None:
    obj = _loads(data, what)
    if obj is None:
        return None
    if not isinstance(obj, dict):
        raise ZkDataError(f"{what} is not a JSON object: {data!r}")
    return obj


encode_json = _dumps
"""Kafka's Json.encodeAsBytes, for the node codecs kept in modules of their own."""
decode_json_object = _loads_object
"""A node's JSON object (None for an empty node); ZkDataError naming `what` otherwise."""

_MASK = 0xFFFFFFFF
K = TypeVar("K")


def _java_string_hash(text: str) -> int:
    """Java's String.hashCode as the unsigned 32 bits Scala's hash maps mix."""
    return java_string_hash(text) & _MASK


def _scala_immutable_hash_order_key(text: str) -> list[int]:
    """Where a String key sits in a Scala 2.12 immutable HashMap (a hash trie walked by
    5-bit chunks of the improved hash, lowest bits first)."""
    return _scala_immutable_hash_order_key_of(_java_string_hash(text))


def _scala_immutable_hash_order_key_of(h: int) -> list[int]:
    """Where a key of hash code `h` sits in a Scala 2.12 immutable HashMap."""
    h = (h + (~(h << 9) & _MASK)) & _MASK
    h ^= h >> 14
    h = (h + (h << 4)) & _MASK
    h ^= h >> 10
    return [(h >> (5 * level)) & 0x1F for level in range(7)]


def _scala_improve_mutable(hcode: int) -> int:
    """Scala 2.12 HashTable.improve with the seed of a 16-bucket table (4): byteswap32,
    then rotated right by 4. The seed stays 4 when the table grows."""
    hc = (hcode * 0x9E3775CD) & _MASK
    hc = int.from_bytes(hc.to_bytes(4, "big"), "little")  # Integer.reverseBytes
    hc = (hc * 0x9E3775CD) & _MASK
    return ((hc >> 4) | (hc << 28)) & _MASK


def _scala_mutable_order(keys: Sequence[K], hash_of: Callable[[K], int]) -> list[K]:
    """Iteration order of a Scala 2.12 mutable.HashMap whose keys were put in the order
    given: 16 buckets to start with, doubled once more than 3/4 are used; a bucket is the
    top bits of the improved hash; a new entry goes first in its bucket; a resize moves
    the entries bucket by bucket from the last one down; iteration walks the buckets from
    the last one down."""
    size = 16
    table: list[list[K]] = [[] for _ in range(size)]

    def index(key: K, size: int) -> int:
        return _scala_improve_mutable(hash_of(key)) >> (33 - size.bit_length())

    for count, key in enumerate(keys, 1):
        table[index(key, size)].insert(0, key)
        if count > size * 3 // 4:
            old, size = table, size * 2
            table = [[] for _ in range(size)]
            for bucket in reversed(old):
                for moved in bucket:
                    table[index(moved, size)].insert(0, moved)
    return [key for bucket in reversed(table) for key in bucket]


def _topic_partition_hash(topic: str, partition: int) -> int:
    """Java's TopicPartition.hashCode."""
    return (31 * (31 + partition) + _java_string_hash(topic)) & _MASK


class ZkVersion:
    """Special znode versions: any version in a conditional update, and 'no such node'."""

    MATCH_ANY = -1
    UNKNOWN = -2


class ConfigType:
    """The entity types that have configs under /config/<type>/<name>."""

    TOPIC = "topics"
    CLIENT = "clients"
    USER = "users"
    BROKER = "brokers"
    IP = "ips"
    ALL = (TOPIC, CLIENT, USER, BROKER, IP)


class ConfigEntityName:
    """Kafka's ConfigEntityName: the entity name of cluster-wide defaults
    (`/config/brokers/<default>`)."""

    DEFAULT = "<default>"


# ---------------------------------------------------------------------------------------
# /controller and /controller_epoch


class ControllerZNode:
    """Ephemeral node naming the active controller: {"version":1,"brokerid":0,"timestamp":"..."}."""

    path = "/controller"

    @staticmethod
    def encode(broker_id: int, timestamp_ms: int) -> bytes:
        return _dumps({"version": 1, "brokerid": broker_id, "timestamp": str(timestamp_ms)})

    @staticmethod
    def decode(data: bytes | None) -> int | None:
        obj = _loads_object(data, ControllerZNode.path)
        if obj is None:
            return None
        return int(obj["brokerid"])


class ControllerEpochZNode:
    """The controller epoch, a plain decimal integer (not JSON)."""

    path = "/controller_epoch"

    @staticmethod
    def encode(epoch: int) -> bytes:
        return str(epoch).encode("ascii")

    @staticmethod
    def decode(data: bytes) -> int:
        try:
            return int(data.decode("ascii"))
        except (UnicodeDecodeError, ValueError) as e:
            raise ZkDataError(f"/controller_epoch holds {data!r}, not an integer") from e


# ---------------------------------------------------------------------------------------
# /brokers


class BrokersZNode:
    path = "/brokers"


class BrokerIdsZNode:
    """Parent of the ephemeral broker registrations."""

    path = f"{BrokersZNode.path}/ids"


class BrokerSequenceIdZNode:
    """Used to generate broker ids (its data version) when broker.id is not configured."""

    path = f"{BrokersZNode.path}/seqid"


@dataclass(frozen=True)
class EndPoint:
    """An advertised listener: host, port, listener name and its security protocol."""

    host: str | None
    port: int
    listener_name: str
    security_protocol: str

    @property
    def connection_string(self) -> str:
        host = self.host if self.host is not None else ""
        if ":" in host:  # IPv6 literal
            host = f"[{host}]"
        return f"{self.listener_name}://{host}:{self.port}"

    @staticmethod
    def parse(connection_string: str, protocol_map: Mapping[str, str] | None = None) -> EndPoint:
        """Parse `LISTENER://host:port`; the protocol comes from `protocol_map` or the name."""
        name, sep, rest = connection_string.partition("://")
        host, colon, port = rest.rpartition(":")
        if not sep or not colon or not port.lstrip("-").isdigit() or not name:
            raise ZkDataError(
                f"Unable to parse {connection_string} to a broker endpoint "
                "(expected LISTENER_NAME://host:port)"
            )
        if host.startswith("[") and host.endswith("]"):
            host = host[1:-1]
        protocol = (protocol_map or {}).get(name, name)
        return EndPoint(host or None, int(port), name, protocol)


@dataclass(frozen=True)
class Broker:
    """A broker as registered: id, endpoints (in listener order) and optional rack."""

    id: int
    endpoints: tuple[EndPoint, ...]
    rack: str | None = None

    def endpoint(self, listener_name: str) -> EndPoint | None:
        return next((e for e in self.endpoints if e.listener_name == listener_name), None)


@dataclass(frozen=True)
class BrokerInfo:
    """What a broker writes to /brokers/ids/<id>: the broker, the JSON version, JMX port."""

    broker: Broker
    version: int = 4
    jmx_port: int = -1
    timestamp_ms: int | None = None  # None: the time of encoding

    @property
    def path(self) -> str:
        return BrokerIdZNode.path(self.broker.id)

    def to_json_bytes(self) -> bytes:
        return BrokerIdZNode.encode(self)


class BrokerIdZNode:
    """A broker registration (ephemeral), JSON version 4 in Kafka 2.x.

    Kafka builds it in a Scala mutable.HashMap whose iteration order is, for these keys:
    listener_security_protocol_map, endpoints, rack, jmx_port, host, timestamp, port,
    version (rack only when set; listener_security_protocol_map from version 4).
    `host`/`port` are the first PLAINTEXT endpoint's, or null/-1 without one.
    """

    @staticmethod
    def path(broker_id: int) -> str:
        return f"{BrokerIdsZNode.path}/{broker_id}"

    @staticmethod
    def encode(info: BrokerInfo) -> bytes:
        broker = info.broker
        plaintext = next((e for e in broker.endpoints if e.security_protocol == "PLAINTEXT"), None)
        host = plaintext.host if plaintext is not None else None
        port = plaintext.port if plaintext is not None else -1
        timestamp = info.timestamp_ms if info.timestamp_ms is not None else int(time.time() * 1000)
        obj: dict[str, Any] = {}
        if info.version >= 4:
            names = [e.listener_name for e in broker.endpoints]
            if len(names) > 4:  # a Scala immutable HashMap beyond 4 entries
                names.sort(key=_scala_immutable_hash_order_key)
            protocols = {e.listener_name: e.security_protocol for e in broker.endpoints}
            obj["listener_security_protocol_map"] = {n: protocols[n] for n in names}
        obj["endpoints"] = [e.connection_string for e in broker.endpoints]
        if broker.rack is not None and info.version >= 3:
            obj["rack"] = broker.rack
        obj["jmx_port"] = info.jmx_port
        obj["host"] = host
        obj["timestamp"] = str(timestamp)
        obj["port"] = port
        obj["version"] = info.version
        return _dumps(obj)

    @staticmethod
    def decode(broker_id: int, data: bytes) -> BrokerInfo:
        what = f"ZooKeeper registration for broker {broker_id}"
        obj = _loads_object(data, what)
        if obj is None:
            raise ZkDataError(f"{what} is empty")
        try:
            version = int(obj["version"])
            jmx_port = int(obj.get("jmx_port", -1))
            if version < 1:
                raise ZkDataError(f"Unsupported version of broker registration: {data!r}")
            if version == 1:
                endpoints: tuple[EndPoint, ...] = (
                    EndPoint(obj["host"], int(obj["port"]), "PLAINTEXT", "PLAINTEXT"),
                )
            else:
                protocol_map = obj.get("listener_security_protocol_map")
                endpoints = tuple(EndPoint.parse(s, protocol_map) for s in obj["endpoints"])
            rack = obj.get("rack")
            timestamp = obj.get("timestamp")
        except (KeyError, TypeError, ValueError) as e:
            if isinstance(e, ZkDataError):
                raise
            raise ZkDataError(f"Failed to parse {what}: {data!r} ({e})") from e
        return BrokerInfo(
            Broker(broker_id, endpoints, rack),
            version,
            jmx_port,
            int(timestamp) if timestamp is not None else None,
        )


class TopicsZNode:
    """Parent of the topic assignment nodes."""

    path = f"{BrokersZNode.path}/topics"


class TopicZNode:
    """A topic's replica assignment and topic id, as Kafka 2.8 writes it (version 3):
    {"removing_replicas":{},"partitions":{"2":[1,2,0],"1":[0,1,2],"0":[2,0,1]},
    "topic_id":"…","adding_replicas":{},"version":3}.

    Kafka builds the node from Scala 2.12 mutable HashMaps and Jackson writes them in their
    iteration order: the top level always in the order above (no "topic_id" for a topic
    without one), and the partitions in the order of a mutable HashMap of the partition
    strings, filled in the order of the assignment Kafka encodes: a Scala immutable Map of
    TopicPartitions, ordered by TopicPartition.hashCode. So the node depends on the topic's
    name and assignment only, not on the order `encode` is given them. `adding_replicas` /
    `removing_replicas` name only the partitions being reassigned. `decode*` read versions
    1 to 3 and keep the node's partition order.
    """

    VERSION = 3

    @staticmethod
    def path(topic: str) -> str:
        return f"{TopicsZNode.path}/{topic}"

    @staticmethod
    def encode(
        topic: str,
        assignment: Mapping[int, ReplicaAssignment | Sequence[int]],
        topic_id: uuid.UUID | None,
    ) -> bytes:
        full = {
            p: a if isinstance(a, ReplicaAssignment) else ReplicaAssignment(tuple(a))
            for p, a in assignment.items()
        }
        # the order Kafka fills the partitions map in: that of an immutable Map of
        # TopicPartitions (up to 4 entries it keeps the order it was built in, but partitions
        # "0" to "3" fall into different buckets, so that order never shows)
        built = sorted(
            full, key=lambda p: _scala_immutable_hash_order_key_of(_topic_partition_hash(topic, p))
        )
        keys = _scala_mutable_order([str(p) for p in built], _java_string_hash)
        ordered = [(k, full[int(k)]) for k in keys]
        obj: dict[str, Any] = {
            "removing_replicas": {
                k: list(a.removing_replicas) for k, a in ordered if a.removing_replicas
            },
            "partitions": {k: list(a.replicas) for k, a in ordered},
        }
        if topic_id is not None:
            obj["topic_id"] = uuid_to_string(topic_id)
        obj["adding_replicas"] = {
            k: list(a.adding_replicas) for k, a in ordered if a.adding_replicas
        }
        obj["version"] = TopicZNode.VERSION
        return _dumps(obj)

    @staticmethod
    def decode(data: bytes | None) -> dict[int, list[int]]:
        """Partition → replicas, in the node's order."""
        obj = _loads_object(data, "topic assignment")
        if obj is None:
            return {}
        partitions = obj.get("partitions")
        if not isinstance(partitions, dict):
            return {}
        try:
            return {int(p): [int(r) for r in replicas] for p, replicas in partitions.items()}
        except (TypeError, ValueError) as e:
            raise ZkDataError(f"topic assignment has a malformed partition: {data!r}") from e

    @staticmethod
    def decode_topic_id(data: bytes | None) -> uuid.UUID | None:
        """The topic id (KIP-516), None in a node written before Kafka 2.8."""
        obj = _loads_object(data, "topic assignment")
        text = None if obj is None else obj.get("topic_id")
        if text is None:
            return None
        try:
            return uuid_from_string(str(text))
        except ValueError as e:
            raise ZkDataError(f"topic assignment has a malformed topic_id: {data!r} ({e})") from e

    @staticmethod
    def decode_full(data: bytes | None) -> dict[int, ReplicaAssignment]:
        """Partition → ReplicaAssignment (adding/removing empty in a version 1 node)."""
        obj = _loads_object(data, "topic assignment")
        if obj is None:
            return {}
        replicas = TopicZNode.decode(data)

        def extra(key: str) -> dict[int, tuple[int, ...]]:
            value = obj.get(key) or {}
            if not isinstance(value, dict):
                raise ZkDataError(f"topic assignment has a malformed {key}: {data!r}")
            try:
                return {int(p): tuple(int(r) for r in rs) for p, rs in value.items()}
            except (TypeError, ValueError) as e:
                raise ZkDataError(f"topic assignment has a malformed {key}: {data!r}") from e

        adding, removing = extra("adding_replicas"), extra("removing_replicas")
        return {
            p: ReplicaAssignment(tuple(rs), adding.get(p, ()), removing.get(p, ()))
            for p, rs in replicas.items()
        }


@dataclass(frozen=True)
class ReplicaAssignment:
    """A partition's full replica assignment (Kafka's ReplicaAssignment): the replicas (RS)
    and, while it is being reassigned, the replicas being added (AR) and removed (RR).
    The origin replicas are ORS = RS - AR, the target replicas TRS = RS - RR."""

    replicas: tuple[int, ...]
    adding_replicas: tuple[int, ...] = ()
    removing_replicas: tuple[int, ...] = ()

    @staticmethod
    def of(replicas: Iterable[int]) -> ReplicaAssignment:
        return ReplicaAssignment(tuple(replicas))

    @property
    def origin_replicas(self) -> tuple[int, ...]:
        return tuple(r for r in self.replicas if r not in self.adding_replicas)

    @property
    def target_replicas(self) -> tuple[int, ...]:
        return tuple(r for r in self.replicas if r not in self.removing_replicas)

    @property
    def is_being_reassigned(self) -> bool:
        return bool(self.adding_replicas or self.removing_replicas)

    def reassign_to(self, target: Sequence[int]) -> ReplicaAssignment:
        """RS = TRS + ORS (target first, duplicates dropped), AR = RS - ORS, RR = RS - TRS."""
        origin = self.origin_replicas
        full = tuple(dict.fromkeys([*target, *origin]))
        return ReplicaAssignment(
            full,
            tuple(r for r in full if r not in origin),
            tuple(r for r in full if r not in target),
        )

    def remove_replica(self, replica: int) -> ReplicaAssignment:
        return ReplicaAssignment(
            tuple(r for r in self.replicas if r != replica),
            tuple(r for r in self.adding_replicas if r != replica),
            tuple(r for r in self.removing_replicas if r != replica),
        )

    def __str__(self) -> str:
        return (
            f"ReplicaAssignment(replicas={','.join(map(str, self.replicas))}, "
            f"addingReplicas={','.join(map(str, self.adding_replicas))}, "
            f"removingReplicas={','.join(map(str, self.removing_replicas))})"
        )


class TopicPartitionsZNode:
    @staticmethod
    def path(topic: str) -> str:
        return f"{TopicZNode.path(topic)}/partitions"


class TopicPartitionZNode:
    @staticmethod
    def path(tp: TopicPartition) -> str:
        return f"{TopicPartitionsZNode.path(tp.topic)}/{tp.partition}"


@dataclass(frozen=True)
class LeaderAndIsr:
    """A partition's leader, leader epoch and ISR, plus the znode version they were read at."""

    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    zk_version: int = 0

    NO_LEADER = -1
    LEADER_DURING_DELETE = -2
    # leader epochs with a meaning (StopReplica v3 sends them)
    NO_EPOCH = -1
    EPOCH_DURING_DELETE = -2

    def new_leader_and_isr(self, leader: int, isr: Sequence[int]) -> LeaderAndIsr:
        return LeaderAndIsr(leader, self.leader_epoch + 1, tuple(isr), self.zk_version)


@dataclass(frozen=True)
class LeaderIsrAndControllerEpoch:
    """LeaderAndIsr with the epoch of the controller that wrote it."""

    leader_and_isr: LeaderAndIsr
    controller_epoch: int


class TopicPartitionStateZNode:
    """A partition's state, written by the controller.

    Five keys, so Kafka's Scala immutable HashMap orders them as
    controller_epoch, leader, version, leader_epoch, isr.
    """

    @staticmethod
    def path(tp: TopicPartition) -> str:
        return f"{TopicPartitionZNode.path(tp)}/state"

    @staticmethod
    def encode(state: LeaderIsrAndControllerEpoch) -> bytes:
        lai = state.leader_and_isr
        return _dumps(
            {
                "controller_epoch": state.controller_epoch,
                "leader": lai.leader,
                "version": 1,
                "leader_epoch": lai.leader_epoch,
                "isr": list(lai.isr),
            }
        )

    @staticmethod
    def decode(data: bytes | None, stat: Stat | None = None) -> LeaderIsrAndControllerEpoch | None:
        obj = _loads_object(data, "partition state")
        if obj is None:
            return None
        try:
            lai = LeaderAndIsr(
                int(obj["leader"]),
                int(obj["leader_epoch"]),
                tuple(int(r) for r in obj["isr"]),
                stat.version if stat is not None else 0,
            )
            return LeaderIsrAndControllerEpoch(lai, int(obj["controller_epoch"]))
        except (KeyError, TypeError, ValueError) as e:
            raise ZkDataError(f"partition state is malformed: {data!r} ({e})") from e


# ---------------------------------------------------------------------------------------
# /config


class ConfigZNode:
    path = "/config"


class ConfigEntityTypeZNode:
    @staticmethod
    def path(entity_type: str) -> str:
        return f"{ConfigZNode.path}/{entity_type}"


class ConfigEntityZNode:
    """An entity's config overrides: {"version":1,"config":{"k":"v",...}} (values are strings)."""

    @staticmethod
    def path(entity_type: str, entity_name: str) -> str:
        return f"{ConfigEntityTypeZNode.path(entity_type)}/{entity_name}"

    @staticmethod
    def encode(config: Mapping[str, str]) -> bytes:
        return _dumps({"version": 1, "config": {str(k): str(v) for k, v in config.items()}})

    @staticmethod
    def decode(data: bytes | None) -> dict[str, str]:
        obj = _loads(data, "entity config")
        if not isinstance(obj, dict):
            return {}
        config = obj.get("config")
        if not isinstance(config, dict):
            return {}
        return {str(k): v if isinstance(v, str) else json.dumps(v) for k, v in config.items()}


class ConfigEntityChangeNotificationZNode:
    """Parent of the config change notifications brokers watch."""

    path = f"{ConfigZNode.path}/changes"


class ConfigEntityChangeNotificationSequenceZNode:
    """A config change notification: {"version":2,"entity_path":"topics/t"} (sequential)."""

    SEQUENCE_NUMBER_PREFIX = "config_change_"
    create_path = f"{ConfigEntityChangeNotificationZNode.path}/{SEQUENCE_NUMBER_PREFIX}"

    @staticmethod
    def encode(sanitized_entity_path: str) -> bytes:
        return _dumps({"version": 2, "entity_path": sanitized_entity_path})

    @staticmethod
    def decode(data: bytes) -> str:
        """The entity path ("topics/t"); version 1 notifications carry entity_type/entity_name."""
        obj = _loads_object(data, "config change notification")
        if obj is None:
            raise ZkDataError("config change notification is empty")
        if int(obj.get("version", 0)) == 1:
            return f"{obj['entity_type']}/{obj['entity_name']}"
        return str(obj["entity_path"])


# ---------------------------------------------------------------------------------------
# notifications written by brokers for the controller


def _encode_partitions(partitions: Iterable[TopicPartition]) -> list[dict[str, Any]]:
    return [{"topic": tp.topic, "partition": tp.partition} for tp in partitions]


def _decode_partitions(data: bytes | None, what: str) -> set[TopicPartition]:
    obj = _loads_object(data, what)
    if obj is None:
        return set()
    try:
        return {TopicPartition(str(p["topic"]), int(p["partition"])) for p in obj["partitions"]}
    except (KeyError, TypeError, ValueError) as e:
        raise ZkDataError(f"{what} is malformed: {data!r} ({e})") from e


class IsrChangeNotificationZNode:
    path = "/isr_change_notification"


class IsrChangeNotificationSequenceZNode:
    """ISR changes of some partitions: {"version":1,"partitions":[{"topic":"t","partition":0}]}."""

    SEQUENCE_NUMBER_PREFIX = "isr_change_"

    @staticmethod
    def path(sequence_number: str = "") -> str:
        prefix = IsrChangeNotificationSequenceZNode.SEQUENCE_NUMBER_PREFIX
        return f"{IsrChangeNotificationZNode.path}/{prefix}{sequence_number}"

    @staticmethod
    def encode(partitions: Iterable[TopicPartition]) -> bytes:
        return _dumps({"version": 1, "partitions": _encode_partitions(partitions)})

    @staticmethod
    def decode(data: bytes | None) -> set[TopicPartition]:
        return _decode_partitions(data, "ISR change notification")

    @staticmethod
    def sequence_number(path: str) -> str:
        return _sequence_number(path, IsrChangeNotificationSequenceZNode.SEQUENCE_NUMBER_PREFIX)


class LogDirEventNotificationZNode:
    path = "/log_dir_event_notification"


class LogDirEventNotificationSequenceZNode:
    """A broker's log dir failure: {"version":1,"broker":0,"event":1}."""

    SEQUENCE_NUMBER_PREFIX = "log_dir_event_"
    LOG_DIR_FAILURE_EVENT = 1

    @staticmethod
    def path(sequence_number: str = "") -> str:
        prefix = LogDirEventNotificationSequenceZNode.SEQUENCE_NUMBER_PREFIX
        return f"{LogDirEventNotificationZNode.path}/{prefix}{sequence_number}"

    @staticmethod
    def encode(broker_id: int) -> bytes:
        event = LogDirEventNotificationSequenceZNode.LOG_DIR_FAILURE_EVENT
        return _dumps({"version": 1, "broker": broker_id, "event": event})

    @staticmethod
    def decode(data: bytes | None) -> int | None:
        obj = _loads_object(data, "log dir event notification")
        return None if obj is None else int(obj["broker"])

    @staticmethod
    def sequence_number(path: str) -> str:
        return _sequence_number(path, LogDirEventNotificationSequenceZNode.SEQUENCE_NUMBER_PREFIX)


# ---------------------------------------------------------------------------------------
# /admin


class AdminZNode:
    path = "/admin"


class DeleteTopicsZNode:
    """Parent of the topic deletion markers the controller acts on."""

    path = f"{AdminZNode.path}/delete_topics"


class DeleteTopicsTopicZNode:
    """A topic's deletion marker (no data)."""

    @staticmethod
    def path(topic: str) -> str:
        return f"{DeleteTopicsZNode.path}/{topic}"


class ReassignPartitionsZNode:
    """A reassignment request:
    {"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2]}]}."""

    path = f"{AdminZNode.path}/reassign_partitions"

    @staticmethod
    def encode(reassignment: Mapping[TopicPartition, Sequence[int]]) -> bytes:
        partitions = [
            {"topic": tp.topic, "partition": tp.partition, "replicas": list(replicas)}
            for tp, replicas in reassignment.items()
        ]
        return _dumps({"version": 1, "partitions": partitions})

    @staticmethod
    def decode(data: bytes | None) -> dict[TopicPartition, list[int]]:
        obj = _loads_object(data, "partition reassignment")
        if obj is None:
            return {}
        try:
            return {
                TopicPartition(str(p["topic"]), int(p["partition"])): [
                    int(r) for r in p["replicas"]
                ]
                for p in obj["partitions"]
            }
        except (KeyError, TypeError, ValueError) as e:
            raise ZkDataError(f"partition reassignment is malformed: {data!r} ({e})") from e


class PreferredReplicaElectionZNode:
    """Partitions to move back to their preferred leader:
    {"version":1,"partitions":[{"topic":"t","partition":0}]}."""

    path = f"{AdminZNode.path}/preferred_replica_election"

    @staticmethod
    def encode(partitions: Iterable[TopicPartition]) -> bytes:
        return _dumps({"version": 1, "partitions": _encode_partitions(partitions)})

    @staticmethod
    def decode(data: bytes | None) -> set[TopicPartition]:
        return _decode_partitions(data, "preferred replica election")


# ---------------------------------------------------------------------------------------
# cluster id and producer ids


class ClusterZNode:
    path = "/cluster"


class ClusterIdZNode:
    """The cluster id: {"version":"1","id":"<id>"} (Kafka writes the version as a string)."""

    path = f"{ClusterZNode.path}/id"

    @staticmethod
    def to_json(cluster_id: str) -> bytes:
        return _dumps({"version": "1", "id": cluster_id})

    @staticmethod
    def from_json(data: bytes) -> str:
        obj = _loads_object(data, "cluster id")
        if obj is None or "id" not in obj:
            raise ZkDataError(f"Failed to parse the cluster id json {data!r}")
        return str(obj["id"])


@dataclass(frozen=True)
class ProducerIdBlock:
    """A block of producer ids [block_start, block_end] handed to one broker."""

    broker_id: int
    block_start: int
    block_end: int


class ProducerIdBlockZNode:
    """The last block of producer ids handed out:
    {"version":1,"broker":0,"block_start":"0","block_end":"999"}."""

    path = "/latest_producer_id_block"

    @staticmethod
    def encode(block: ProducerIdBlock) -> bytes:
        return _dumps(
            {
                "version": 1,
                "broker": block.broker_id,
                "block_start": str(block.block_start),
                "block_end": str(block.block_end),
            }
        )

    @staticmethod
    def decode(data: bytes | None) -> ProducerIdBlock | None:
        obj = _loads_object(data, ProducerIdBlockZNode.path)
        if obj is None:
            return None
        try:
            return ProducerIdBlock(
                int(obj["broker"]), int(obj["block_start"]), int(obj["block_end"])
            )
        except (KeyError, TypeError, ValueError) as e:
            raise ZkDataError(f"{ProducerIdBlockZNode.path} is malformed: {data!r}") from e


# Persistent paths a broker makes sure exist at start-up (Kafka's ZkData.PersistentZkPaths).
PERSISTENT_ZK_PATHS: tuple[str, ...] = (
    "/consumers",  # the old consumer's path; Kafka 2.x still creates it
    BrokerIdsZNode.path,
    TopicsZNode.path,
    ConfigEntityChangeNotificationZNode.path,
    DeleteTopicsZNode.path,
    BrokerSequenceIdZNode.path,
    IsrChangeNotificationZNode.path,
    ProducerIdBlockZNode.path,
    LogDirEventNotificationZNode.path,
) + tuple(ConfigEntityTypeZNode.path(t) for t in ConfigType.ALL)


# ---------------------------------------------------------------------------------------
# ACLs (Kafka's ZkAclStore / ZkAclChangeStore): resource type and pattern type travel as
# the names Kafka writes ("Topic", "PREFIXED"); the authorizer owns their meaning.


@dataclass(frozen=True)
class AclEntryData:
    """One ACL of a resource node, as stored: `{"principal":"User:alice",
    "permissionType":"Allow","operation":"Read","host":"*"}`."""

    principal: str
    permission_type: str
    operation: str
    host: str


class AclZNode:
    """The ACL stores: `/kafka-acl/<Type>/<name>` holds the LITERAL patterns,
    `/kafka-acl-extended/prefixed/<Type>/<name>` the PREFIXED ones."""

    LITERAL_PATH = "/kafka-acl"
    EXTENDED_PATH = "/kafka-acl-extended"

    @staticmethod
    def store_path(pattern_type: str) -> str:
        """The store of a pattern type name (`LITERAL`, `PREFIXED`)."""
        if pattern_type.upper() == "LITERAL":
            return AclZNode.LITERAL_PATH
        if pattern_type.upper() == "PREFIXED":
            return f"{AclZNode.EXTENDED_PATH}/prefixed"
        raise ZkDataError(f"ACLs are stored for LITERAL and PREFIXED patterns, not {pattern_type}")

    @staticmethod
    def path(pattern_type: str, resource_type: str, name: str) -> str:
        return f"{AclZNode.store_path(pattern_type)}/{resource_type}/{name}"


class ResourceZNode:
    """A resource's ACLs: `{"version":1,"acls":[{...},...]}`."""

    @staticmethod
    def encode(acls: Iterable[AclEntryData]) -> bytes:
        return _dumps({"version": 1, "acls": [
            {"principal": a.principal, "permissionType": a.permission_type,
             "operation": a.operation, "host": a.host} for a in acls
        ]})  # fmt: skip

    @staticmethod
    def decode(data: bytes | None, path: str = "ACL node") -> list[AclEntryData]:
        obj = _loads_object(data, path)
        if obj is None:
            return []
        if obj.get("version") != 1 or not isinstance(obj.get("acls"), list):
            raise ZkDataError(f"{path} is not version 1 ACL JSON: {data!r}")
        try:
            return [
                AclEntryData(
                    str(a["principal"]),
                    str(a["permissionType"]),
                    str(a["operation"]),
                    str(a["host"]),
                )  # fmt: skip
                for a in obj["acls"]
            ]
        except (KeyError, TypeError) as e:
            raise ZkDataError(f"{path} has an ACL without {e}: {data!r}") from e


class AclChangeNotificationZNode:
    """The ACL change notifications brokers watch: `/kafka-acl-changes/acl_changes_<n>`
    holding `TOPIC:name` for a LITERAL pattern, `/kafka-acl-extended-changes/acl_changes_<n>`
    holding `{"version":1,"resourceType":"TOPIC","name":"a","patternType":"PREFIXED"}`."""

    LITERAL_PATH = "/kafka-acl-changes"
    EXTENDED_PATH = "/kafka-acl-extended-changes"
    SEQUENCE_NUMBER_PREFIX = "acl_changes_"

    @staticmethod
    def create_path(pattern_type: str) -> str:
        root = (
            AclChangeNotificationZNode.LITERAL_PATH
            if pattern_type.upper() == "LITERAL"
            else AclChangeNotificationZNode.EXTENDED_PATH
        )
        return f"{root}/{AclChangeNotificationZNode.SEQUENCE_NUMBER_PREFIX}"

    @staticmethod
    def encode(resource_type: str, name: str, pattern_type: str) -> bytes:
        """`resource_type` and `pattern_type` as Kafka's enum names (`TRANSACTIONAL_ID`)."""
        if pattern_type.upper() == "LITERAL":
            return f"{resource_type}:{name}".encode()
        return _dumps({"version": 1, "resourceType": resource_type, "name": name,
                       "patternType": pattern_type})  # fmt: skip

    @staticmethod
    def decode(root: str, data: bytes) -> tuple[str, str, str]:
        """(resource type, name, pattern type) of a notification under `root`."""
        if root == AclChangeNotificationZNode.LITERAL_PATH:
            text = data.decode("utf-8", errors="replace")
            resource_type, sep, name = text.partition(":")
            if not sep:
                raise ZkDataError(f"ACL change notification {text!r} is not ResourceType:name")
            return resource_type.upper(), name, "LITERAL"
        obj = _loads_object(data, "ACL change notification")
        if obj is None or int(obj.get("version", 0)) != 1:
            raise ZkDataError(f"ACL change notification is not version 1 JSON: {data!r}")
        try:
            return (str(obj["resourceType"]).upper(), str(obj["name"]),
                    str(obj["patternType"]).upper())  # fmt: skip
        except KeyError as e:
            raise ZkDataError(f"ACL change notification without {e}: {data!r}") from e


def _sequence_number(path: str, prefix: str) -> str:
    """The sequence number ZooKeeper appended to a sequential node named `prefix`."""
    return path[path.rfind(prefix) + len(prefix) :]
