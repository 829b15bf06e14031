"""AdminClient: topic and config administration through a broker's admin APIs.

After Kafka's `KafkaAdminClient`, for what `kafpy topics --bootstrap-server` and tools
need: list and describe topics (Metadata), create and delete topics, add partitions,
describe and alter configs, elect leaders, delegation tokens. Topic operations go to the controller (a broker that is not
the controller answers NOT_CONTROLLER, and the request follows the controller). A failed
operation raises the KafkaError of the response's error code, with the broker's message.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from kafpy.client.cluster import Node, TopicInfo
from kafpy.client.kafka_client import KafkaClient
from kafpy.client.response_errors import error_for_code, raise_for_code
from kafpy.common.election_type import ElectionType
from kafpy.common.errors import InvalidConfigurationError, KafkaError, UnsupportedVersionError
from kafpy.common.topic_partition import TopicPartition
from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.config_resource import AlterConfigOp, ConfigResourceType, ConfigSource
from kafpy.protocol.errors import Errors
from kafpy.security.delegation_token_cache import DelegationToken, TokenInformation
from kafpy.security.kafka_principal import KafkaPrincipal
from kafpy.security.scram import ScramFormatter, ScramMechanism, secure_random_bytes

DEFAULT_TIMEOUT_MS = 30000


class PartitionReassignment(NamedTuple):
    """An ongoing reassignment (Kafka's PartitionReassignment): all replicas, the ones
    being added and the ones being removed."""

    replicas: list[int]
    adding_replicas: list[int]
    removing_replicas: list[int]


class ConfigResource(NamedTuple):
    """A thing that has configs: a topic by name, a broker by id (as a string)."""

    type: ConfigResourceType
    name: str

    @classmethod
    def topic(cls, name: str) -> ConfigResource:
        return cls(ConfigResourceType.TOPIC, name)

    @classmethod
    def broker(cls, broker_id: int | str) -> ConfigResource:
        return cls(ConfigResourceType.BROKER, str(broker_id))


@dataclass(frozen=True)
class ConfigSynonym:
    """Another place a described config's value comes from (DescribeConfigs v1+)."""

    name: str
    value: str | None
    source: ConfigSource


@dataclass(frozen=True)
class ConfigEntry:
    """One described config value; `synonyms` only when asked for (include_synonyms)."""

    name: str
    value: str | None
    source: ConfigSource = ConfigSource.UNKNOWN
    is_default: bool = False
    read_only: bool = False
    is_sensitive: bool = False
    synonyms: tuple[ConfigSynonym, ...] = ()

    @property
    def is_topic_override(self) -> bool:
        """True for a value set on the topic itself (what `/config/topics/<t>` holds)."""
        return self.source is ConfigSource.DYNAMIC_TOPIC_CONFIG


@dataclass(frozen=True)
class ReplicaInfo:
    """One replica in a log dir (Kafka's ReplicaInfo): its size in bytes, how far its log
    end is behind the high watermark, and whether it is a future log being moved in."""

    size: int
    offset_lag: int
    is_future: bool


@dataclass(frozen=True)
class LogDirDescription:
    """One log dir of a broker (Kafka's LogDirDescription); `error` is set for an offline
    dir; total and usable bytes are -1 where the broker does not say (before v4)."""

    path: str
    error: KafkaError | None
    replicas: Mapping[TopicPartition, ReplicaInfo]
    total_bytes: int = -1
    usable_bytes: int = -1


@dataclass(frozen=True)
class FeatureMetadata:
    """What Admin.describeFeatures returns: finalized (min, max) version levels, their epoch
    (None when unknown), and the broker's supported (min, max) versions."""

    finalized_features: dict[str, tuple[int, int]]
    finalized_features_epoch: int | None
    supported_features: dict[str, tuple[int, int]]


@dataclass(frozen=True)
class FeatureUpdate:
    """A feature's new max version level; below 1 with `allow_downgrade` deletes it."""

    max_version_level: int
    allow_downgrade: bool = False


@dataclass
class NewTopic:
    """A topic to create: a partition count and replication factor (-1: the broker's
    defaults), or an explicit replica assignment {partition: [broker ids]}."""

    name: str
    num_partitions: int = -1
    replication_factor: int = -1
    replica_assignment: Mapping[int, Sequence[int]] | None = None
    configs: Mapping[str, str] = field(default_factory=dict)


class AdminClient:
    """Admin operations on a cluster, over a KafkaClient.

    `AdminClient(client)` uses an existing KafkaClient; `AdminClient.connect("host:port")`
    makes its own (closed by close()). Methods raise the KafkaError matching the first
    failing error code (TopicExistsError, InvalidPartitionsError, ...), whose message is
    the broker's when it sent one.
    """

    def __init__(self, client: KafkaClient, *, owns_client: bool = False) -> None:
        self.client = client
        self._owns_client = owns_client

    @classmethod
    def connect(cls, bootstrap_servers: str | list[str], **client_options: Any) -> AdminClient:
        return cls(KafkaClient(bootstrap_servers, **client_options), owns_client=True)

    async def __aenter__(self) -> AdminClient:
        await self.client.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        if self._owns_client:
            await self.client.close()

    # --- cluster and topics (Metadata) ---

    async def describe_cluster(self) -> tuple[list[Node], int]:
        """The live brokers (by id) and the controller id (-1 if none)."""
        await self.client.refresh_metadata([])
        cluster = self.client.cluster
        return [cluster.brokers[i] for i in sorted(cluster.brokers)], cluster.controller_id

    async def list_topics(self, *, include_internal: bool = True) -> list[str]:
        """All topic names, sorted."""
        await self.client.refresh_metadata(None)
        return sorted(
            name
            for name, info in self.client.cluster.topics.items()
            if include_internal or not info.is_internal
        )

    async def describe_topics(self, topics: Iterable[str]) -> dict[str, TopicInfo]:
        """Partitions with leader, replicas and ISR of each topic; raises
        UnknownTopicOrPartitionError for a topic that does not exist."""
        names = list(topics)
        response = await self.client.refresh_metadata(names)
        result: dict[str, TopicInfo] = {}
        by_name = {t["name"]: t for t in response["topics"]}
        for name in names:
            entry = by_name.get(name)
            code = Errors.UNKNOWN_TOPIC_OR_PARTITION if entry is None else entry["error_code"]
            if code == Errors.UNKNOWN_TOPIC_OR_PARTITION:
                raise_for_code(code, f"Topic '{name}' does not exist.")
            info = self.client.cluster.topic(name)
            assert info is not None
            result[name] = info
        return result

    # --- topics (CreateTopics, DeleteTopics, CreatePartitions) ---

    async def create_topics(
        self,
        new_topics: Sequence[NewTopic],
        *,
        validate_only: bool = False,
        timeout_ms: int = DEFAULT_TIMEOUT_MS,
    ) -> None:
        """Create the topics (validate only, if asked); raises on the first one refused."""
        body = {
            "topics": [_creatable_topic(t) for t in new_topics],
            "timeout_ms": timeout_ms,
            "validate_only": validate_only,
        }
        response = await self.client.send_to_controller(ApiKey.CREATE_TOPICS, body)
        _raise_first(response["topics"], "Creating topic")

    async def delete_topics(
        self, topics: Sequence[str], *, timeout_ms: int = DEFAULT_TIMEOUT_MS
    ) -> None:
        """Delete the topics; raises on the first one refused."""
        # v0-5 name the topics in topic_names, v6+ in topics; the codec writes the version's
        body = {
            "topic_names": list(topics),
            "topics": [{"name": t} for t in topics],
            "timeout_ms": timeout_ms,
        }
        response = await self.client.send_to_controller(ApiKey.DELETE_TOPICS, body)
        _raise_first(response["responses"], "Deleting topic")

    async def create_partitions(
        self,
        new_counts: Mapping[str, int],
        assignments: Mapping[str, Sequence[Sequence[int]]] | None = None,
        *,
        validate_only: bool = False,
        timeout_ms: int = DEFAULT_TIMEOUT_MS,
    ) -> None:
        """Grow each topic to its new partition count; `assignments` optionally gives the
        replicas of each added partition, in order."""
        assignments = assignments or {}
        topics = []
        for name, count in new_counts.items():
            added = assignments.get(name)
            topics.append(
                {
                    "name": name,
                    "count": count,
                    "assignments": None
                    if added is None
                    else [{"broker_ids": list(replicas)} for replicas in added],
                }
            )
        body = {"topics": topics, "timeout_ms": timeout_ms, "validate_only": validate_only}
        response = await self.client.send_to_controller(ApiKey.CREATE_PARTITIONS, body)
        _raise_first(response["results"], "Adding partitions to topic")

    # --- configs (DescribeConfigs, IncrementalAlterConfigs / AlterConfigs) ---

    async def describe_configs(
        self,
        resources: Sequence[ConfigResource],
        keys: Sequence[str] | None = None,
        *,
        include_synonyms: bool = False,
    ) -> dict[ConfigResource, list[ConfigEntry]]:
        """The configs of each resource (all of them, or only `keys`), with where else
        their values come from if `include_synonyms`."""
        result: dict[ConfigResource, list[ConfigEntry]] = {}
        for group, send in self._by_destination(resources):
            body = {
                "resources": [
                    {
                        "resource_type": int(r.type),
                        "resource_name": r.name,
                        "configuration_keys": None if keys is None else list(keys),
                    }
                    for r in group
                ],
                "include_synonyms": include_synonyms,
            }
            response = await send(ApiKey.DESCRIBE_CONFIGS, body)
            _raise_first(response["results"], "Describing configs of")
            for r in response["results"]:
                resource = ConfigResource(
                    ConfigResourceType(r["resource_type"]), r["resource_name"]
                )
                result[resource] = [_config_entry(c) for c in r["configs"]]
        return result

    async def describe_topic_overrides(self, topic: str) -> dict[str, str | None]:
        """The configs set on the topic itself, in the order the broker lists them."""
        resource = ConfigResource.topic(topic)
        entries = (await self.describe_configs([resource]))[resource]
        return {e.name: e.value for e in entries if e.is_topic_override}

    async def alter_configs(
        self,
        resource: ConfigResource,
        set_configs: Mapping[str, str],
        delete_configs: Sequence[str] = (),
        *,
        validate_only: bool = False,
    ) -> None:
        """Set and remove config overrides of one resource, leaving the others as they are.

        Uses IncrementalAlterConfigs where the broker has it; else reads the current
        overrides and writes them back changed with AlterConfigs (not atomic)."""
        [(group, send)] = self._by_destination([resource])
        conn = await self._destination_connection(resource)
        if ApiKey.INCREMENTAL_ALTER_CONFIGS in conn.api_versions:
            configs = [
                {"name": k, "config_operation": AlterConfigOp.SET, "value": v}
                for k, v in set_configs.items()
            ] + [
                {"name": k, "config_operation": AlterConfigOp.DELETE, "value": None}
                for k in delete_configs
            ]
            api = ApiKey.INCREMENTAL_ALTER_CONFIGS
        else:
            current = {
                e.name: e.value
                for e in (await self.describe_configs([resource]))[resource]
                if e.source
                in (ConfigSource.DYNAMIC_TOPIC_CONFIG, ConfigSource.DYNAMIC_BROKER_CONFIG)
            }
            current.update(set_configs)
            for k in delete_configs:
                current.pop(k, None)
            configs = [{"name": k, "value": v} for k, v in current.items()]
            api = ApiKey.ALTER_CONFIGS
        body = {
            "resources": [
                {
                    "resource_type": int(resource.type),
                    "resource_name": resource.name,
                    "configs": configs,
                }
            ],
            "validate_only": validate_only,
        }
        response = await send(api, body)
        _raise_first(response["responses"], "Altering configs of")

    # --- log dirs (DescribeLogDirs) ---

    async def describe_log_dirs(
        self, broker_ids: Iterable[int]
    ) -> dict[int, list[LogDirDescription]]:
        """Each broker's log dirs with the replicas in them; raises UnsupportedVersionError
        for a broker that does not serve DescribeLogDirs."""
        result: dict[int, list[LogDirDescription]] = {}
        for broker in broker_ids:
            conn = await self.client.connection(broker)
            if ApiKey.DESCRIBE_LOG_DIRS not in conn.api_versions:
                raise UnsupportedVersionError(
                    f"Broker {broker} does not serve DescribeLogDirs, so its log dirs "
                    "cannot be described."
                )
            response = await self.client.send_to_node(
                broker, ApiKey.DESCRIBE_LOG_DIRS, {"topics": None}
            )
            raise_for_code(
                response.get("error_code", Errors.NONE),
                None,
                f"Describing the log dirs of broker {broker}",
            )
            result[broker] = [
                LogDirDescription(
                    path=d["log_dir"],
                    error=None
                    if d["error_code"] == Errors.NONE
                    else error_for_code(d["error_code"], None, f"Log dir {d['log_dir']}"),
                    replicas={
                        TopicPartition(t["name"], p["partition_index"]): ReplicaInfo(
                            p["partition_size"], p["offset_lag"], p["is_future_key"]
                        )
                        for t in d["topics"]
                        for p in t["partitions"]
                    },
                    total_bytes=d.get("total_bytes", -1),
                    usable_bytes=d.get("usable_bytes", -1),
                )
                for d in response["results"]
            ]
        return result

    async def alter_replica_log_dirs(
        self, assignments: Mapping[tuple[TopicPartition, int], str]
    ) -> dict[tuple[TopicPartition, int], KafkaError | None]:
        """Move replicas between the log dirs of their brokers (Kafka's
        Admin.alterReplicaLogDirs): {(partition, broker id): absolute log dir} to the error
        of each replica, None where the broker accepted the move (it then runs in the
        background; describe_log_dirs shows the `-future` log until it is done)."""
        by_broker: dict[int, dict[str, dict[str, list[int]]]] = {}
        for (tp, broker), path in assignments.items():
            topics = by_broker.setdefault(broker, {}).setdefault(path, {})
            topics.setdefault(tp.topic, []).append(tp.partition)

        async def one(broker: int) -> dict[tuple[TopicPartition, int], KafkaError | None]:
            body = {"dirs": [
                {"path": path, "topics": [{"name": t, "partitions": ps} for t, ps in ts.items()]}
                for path, ts in by_broker[broker].items()]}  # fmt: skip
            try:
                response = await self.client.send_to_node(
                    broker, ApiKey.ALTER_REPLICA_LOG_DIRS, body
                )
            except KafkaError as e:
                return {key: e for key in assignments if key[1] == broker}
            return {
                (TopicPartition(t["topic_name"], p["partition_index"]), broker): None
                if p["error_code"] == Errors.NONE
                else error_for_code(
                    p["error_code"],
                    None,
                    f"Moving the replica of {t['topic_name']}-{p['partition_index']} on broker "
                    f"{broker}",
                )
                for t in response["results"]
                for p in t["partitions"]
            }

        results: dict[tuple[TopicPartition, int], KafkaError | None] = {}
        for answer in await asyncio.gather(*(one(b) for b in by_broker)):
            results.update(answer)
        return results

    # --- records (DeleteRecords) ---

    async def delete_records(
        self, offsets: Mapping[TopicPartition, int], timeout_ms: int = DEFAULT_TIMEOUT_MS
    ) -> dict[TopicPartition, int | KafkaError]:
        """Delete the records of each partition below its offset (-1: the high watermark),
        through each partition's leader: the new low watermark per partition, or the
        KafkaError that partition failed with (Kafka's Admin.deleteRecords)."""

        async def one(tp: TopicPartition, offset: int) -> int | KafkaError:
            body = {"topics": [{"name": tp.topic, "partitions": [
                {"partition_index": tp.partition, "offset": offset}]}], "timeout_ms": timeout_ms}  # fmt: skip
            try:
                response = await self.client.send_to_leader(tp, ApiKey.DELETE_RECORDS, body)
            except KafkaError as e:
                return e
            [answer] = response["topics"][0]["partitions"]
            if answer["error_code"] != Errors.NONE:
                return error_for_code(answer["error_code"])
            return int(answer["low_watermark"])

        results = await asyncio.gather(*(one(tp, o) for tp, o in offsets.items()))
        return dict(zip(offsets, results, strict=True))

    # --- client quotas (AlterClientQuotas, DescribeClientQuotas) ---

    async def alter_client_quotas(
        self,
        entity: Mapping[str, str | None],
        ops: Mapping[str, float | None],
        *,
        validate_only: bool = False,
    ) -> None:
        """Set (a number) or remove (None) quotas of one entity ({"user": "alice",
        "client-id": None} for alice's default client id); raises the entity's error."""
        body = {
            "entries": [{
                "entity": [{"entity_type": k, "entity_name": v} for k, v in entity.items()],
                "ops": [{"key": k, "value": 0.0 if v is None else float(v), "remove": v is None}
                        for k, v in ops.items()],
            }],
            "validate_only": validate_only,
        }  # fmt: skip
        response = await self.client.send_to_any(ApiKey.ALTER_CLIENT_QUOTAS, body)
        for entry in response["entries"]:
            raise_for_code(entry["error_code"], entry["error_message"])

    async def describe_client_quotas(
        self, components: Sequence[tuple[str, int, str | None]], *, strict: bool = False
    ) -> list[tuple[dict[str, str | None], dict[str, float]]]:
        """The quotas of the entities matching (entity type, match type, name) filters
        (match type 0 exact, 1 default, 2 any): (entity, {key: value}) pairs."""
        body = {"components": [{"entity_type": t, "match_type": m, "match": n}
                               for t, m, n in components], "strict": strict}  # fmt: skip
        response = await self.client.send_to_any(ApiKey.DESCRIBE_CLIENT_QUOTAS, body)
        raise_for_code(response["error_code"], response["error_message"])
        return [
            ({e["entity_type"]: e["entity_name"] for e in entry["entity"]},
             {v["key"]: v["value"] for v in entry["values"]})
            for entry in response["entries"] or ()
        ]  # fmt: skip

    # --- SCRAM credentials (DescribeUserScramCredentials, AlterUserScramCredentials) ---

    async def describe_user_scram_credentials(
        self, users: Sequence[str] | None = None
    ) -> dict[str, list[tuple[str, int]]]:
        """User -> [(mechanism name, iterations)] for the named users (all users with
        credentials when None); raises ResourceNotFoundError for a named user without any."""
        body = {"users": None if users is None else [{"name": u} for u in users]}
        response = await self.client.send_to_any(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, body)
        if response["error_code"]:
            raise_for_code(response["error_code"], response["error_message"], "Describing users")
        _raise_first(
            ({**r, "name": r["user"]} for r in response["results"]), "Describing credentials of"
        )
        out: dict[str, list[tuple[str, int]]] = {}
        for r in response["results"]:
            out[r["user"]] = [
                (m.mechanism_name, info["iterations"])
                for info in r["credential_infos"]
                if (m := ScramMechanism.for_type(info["mechanism"])) is not None
            ]
        return out

    async def alter_user_scram_credentials(
        self,
        upsertions: Sequence[tuple[str, str, int, str]] = (),
        deletions: Sequence[tuple[str, str]] = (),
    ) -> None:
        """Upsert (user, mechanism name, iterations, password) and delete (user, mechanism
        name) credentials. The password is salted and hashed here; only the salted password
        travels. Raises the first user's error (UnacceptableCredentialError, ...)."""
        ups = []
        for user, mechanism_name, iterations, password in upsertions:
            mechanism = _scram_mechanism(mechanism_name)
            salt = secure_random_bytes()
            salted = ScramFormatter(mechanism.hash_name).salted_password(password, salt, iterations)
            ups.append({
                "name": user, "mechanism": mechanism.type_id, "iterations": iterations,
                "salt": salt, "salted_password": salted,
            })  # fmt: skip
        dels = [{"name": user, "mechanism": _scram_mechanism(m).type_id} for user, m in deletions]
        response = await self.client.send_to_any(
            ApiKey.ALTER_USER_SCRAM_CREDENTIALS, {"deletions": dels, "upsertions": ups}
        )
        _raise_first(
            ({**r, "name": r["user"]} for r in response["results"]), "Altering credentials of"
        )

    # --- delegation tokens (KIP-48) ---

    async def create_delegation_token(
        self, renewers: Sequence[KafkaPrincipal] = (), max_lifetime_ms: int = -1
    ) -> DelegationToken:
        """A new token owned by this client's principal; -1 takes the broker's
        delegation.token.max.lifetime.ms. Raises the KafkaError of the answer's error code
        (refused on a PLAINTEXT connection, with a token, or when tokens are disabled)."""
        body = {
            "renewers": [
                {"principal_type": r.principal_type, "principal_name": r.name} for r in renewers
            ],
            "max_lifetime_ms": max_lifetime_ms,
        }
        r = await self.client.send_to_any(ApiKey.CREATE_DELEGATION_TOKEN, body)
        raise_for_code(r["error_code"], None, "Creating a delegation token")
        info = TokenInformation(
            r["token_id"], KafkaPrincipal(r["principal_type"], r["principal_name"]),
            tuple(renewers), r["issue_timestamp_ms"], r["max_timestamp_ms"],
            r["expiry_timestamp_ms"],
        )  # fmt: skip
        return DelegationToken(info, bytes(r["hmac"]))

    async def renew_delegation_token(self, hmac: bytes, renew_time_period_ms: int = -1) -> int:
        """The token's new expiry timestamp; -1 renews by delegation.token.expiry.time.ms."""
        r = await self.client.send_to_any(
            ApiKey.RENEW_DELEGATION_TOKEN, {"hmac": hmac, "renew_period_ms": renew_time_period_ms}
        )
        raise_for_code(r["error_code"], None, "Renewing the delegation token")
        return int(r["expiry_timestamp_ms"])

    async def expire_delegation_token(self, hmac: bytes, expiry_time_period_ms: int = -1) -> int:
        """The token's new expiry timestamp; -1 expires it now."""
        r = await self.client.send_to_any(
            ApiKey.EXPIRE_DELEGATION_TOKEN,
            {"hmac": hmac, "expiry_time_period_ms": expiry_time_period_ms},
        )
        raise_for_code(r["error_code"], None, "Expiring the delegation token")
        return int(r["expiry_timestamp_ms"])

    async def describe_delegation_token(
        self, owners: Sequence[KafkaPrincipal] | None = None
    ) -> list[DelegationToken]:
        """The tokens of `owners` (every token this principal may see when None)."""
        body = {
            "owners": None
            if owners is None
            else [{"principal_type": o.principal_type, "principal_name": o.name} for o in owners]
        }
        r = await self.client.send_to_any(ApiKey.DESCRIBE_DELEGATION_TOKEN, body)
        raise_for_code(r["error_code"], None, "Describing delegation tokens")
        return [
            DelegationToken(
                TokenInformation(
                    t["token_id"], KafkaPrincipal(t["principal_type"], t["principal_name"]),
                    tuple(KafkaPrincipal(w["principal_type"], w["principal_name"])
                          for w in t["renewers"]),
                    t["issue_timestamp"], t["max_timestamp"], t["expiry_timestamp"],
                ),
                bytes(t["hmac"]),
            )
            for t in r["tokens"]
        ]  # fmt: skip

    # --- leader election (ElectLeaders) ---

    async def elect_leaders(
        self,
        election_type: ElectionType,
        partitions: Iterable[TopicPartition] | None,
        *,
        timeout_ms: int = DEFAULT_TIMEOUT_MS,
    ) -> dict[TopicPartition, KafkaError | None]:
        """Elect the leaders of `partitions` (None: every partition that needs an election)
        on the controller, as Kafka's Admin.electLeaders: each partition's error
        (ElectionNotNeeded where its leader was already right), or None where elected.
        `timeout_ms` bounds how long the controller waits for the new leaders."""
        topics: dict[str, list[int]] = {}
        for tp in partitions if partitions is not None else ():
            topics.setdefault(tp.topic, []).append(tp.partition)
        body = {
            "election_type": int(election_type),
            "topic_partitions": None
            if partitions is None
            else [{"topic": t, "partitions": ps} for t, ps in topics.items()],
            "timeout_ms": timeout_ms,
        }
        response = await self.client.send_to_controller(ApiKey.ELECT_LEADERS, body)
        raise_for_code(response.get("error_code", Errors.NONE), None, "Electing leaders")
        return _partition_errors(
            response["replica_election_results"], "topic", "partition_result", "partition_id"
        )

    # --- features (KIP-584: ApiVersions v3, UpdateFeatures) ---------------------------------

    async def describe_features(self) -> FeatureMetadata:
        """The supported features of one broker and the cluster's finalized features, as
        Kafka's Admin.describeFeatures (ApiVersions v3 to any broker)."""
        body = {"client_software_name": "kafpy", "client_software_version": "1"}
        response = await self.client.send_to_any(ApiKey.API_VERSIONS, body, 3)
        raise_for_code(response["error_code"], None, "Describing features")
        epoch = response.get("finalized_features_epoch", -1)
        return FeatureMetadata(
            {f["name"]: (f["min_version_level"], f["max_version_level"])
             for f in response.get("finalized_features") or []},
            None if epoch < 0 else epoch,
            {f["name"]: (f["min_version"], f["max_version"])
             for f in response.get("supported_features") or []},
        )  # fmt: skip

    async def update_features(
        self, updates: Mapping[str, FeatureUpdate], *, timeout_ms: int = DEFAULT_TIMEOUT_MS
    ) -> dict[str, KafkaError | None]:
        """Finalize each feature at its new max version level (or delete it) on the
        controller, as Kafka's Admin.updateFeatures: each feature's error, or None."""
        if not updates:
            raise ValueError("Feature updates can not be null or empty.")
        body = {
            "timeout_ms": timeout_ms,
            "feature_updates": [
                {"feature": name, "max_version_level": u.max_version_level,
                 "allow_downgrade": u.allow_downgrade}
                for name, u in updates.items()
            ],
        }  # fmt: skip
        response = await self.client.send_to_controller(ApiKey.UPDATE_FEATURES, body, 0)
        raise_for_code(response["error_code"], response.get("error_message"), "Updating features")
        return {
            r["feature"]: None
            if r["error_code"] == Errors.NONE
            else error_for_code(r["error_code"], r.get("error_message"))
            for r in response["results"]
        }

    # --- partition reassignments (AlterPartitionReassignments, ListPartitionReassignments) ---

    async def alter_partition_reassignments(
        self,
        reassignments: Mapping[TopicPartition, Sequence[int] | None],
        *,
        timeout_ms: int = DEFAULT_TIMEOUT_MS,
    ) -> dict[TopicPartition, KafkaError | None]:
        """Start the reassignment of each partition to its target replicas, or cancel it
        (None), on the controller, as Kafka's Admin.alterPartitionReassignments: None per
        partition where it started, else its error (InvalidReplicaAssignment,
        NoReassignmentInProgress, UnknownTopicOrPartition)."""
        topics: dict[str, list[dict[str, Any]]] = {}
        for tp, replicas in reassignments.items():
            topics.setdefault(tp.topic, []).append(
                {
                    "partition_index": tp.partition,
                    "replicas": None if replicas is None else list(replicas),
                }
            )
        body = {
            "timeout_ms": timeout_ms,
            "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()],
        }
        response = await self.client.send_to_controller(ApiKey.ALTER_PARTITION_REASSIGNMENTS, body)
        raise_for_code(
            response.get("error_code", Errors.NONE),
            response.get("error_message"),
            "Altering partition reassignments",
        )
        return _partition_errors(response["responses"], "name", "partitions", "partition_index")

    async def list_partition_reassignments(
        self,
        partitions: Iterable[TopicPartition] | None = None,
        *,
        timeout_ms: int = DEFAULT_TIMEOUT_MS,
    ) -> dict[TopicPartition, PartitionReassignment]:
        """The ongoing reassignments among `partitions` (None: all), with their replicas,
        adding and removing replicas (Kafka's Admin.listPartitionReassignments)."""
        topics: dict[str, list[int]] | None = None
        if partitions is not None:
            topics = {}
            for tp in partitions:
                topics.setdefault(tp.topic, []).append(tp.partition)
        body = {
            "timeout_ms": timeout_ms,
            "topics": None
            if topics is None
            else [{"name": t, "partition_indexes": ps} for t, ps in topics.items()],
        }
        response = await self.client.send_to_controller(ApiKey.LIST_PARTITION_REASSIGNMENTS, body)
        raise_for_code(
            response.get("error_code", Errors.NONE),
            response.get("error_message"),
            "Listing partition reassignments",
        )
        return {
            TopicPartition(t["name"], p["partition_index"]): PartitionReassignment(
                list(p["replicas"]), list(p["adding_replicas"]), list(p["removing_replicas"])
            )
            for t in response["topics"]
            for p in t["partitions"]
        }

    def _by_destination(
        self, resources: Sequence[ConfigResource]
    ) -> list[tuple[list[ConfigResource], Any]]:
        """Group resources by where Kafka sends them: a broker's configs to that broker,
        everything else to the controller."""
        groups: dict[int | None, list[ConfigResource]] = {}
        for r in resources:
            node = int(r.name) if r.type is ConfigResourceType.BROKER and r.name.isdigit() else None
            groups.setdefault(node, []).append(r)
        result: list[tuple[list[ConfigResource], Any]] = []
        for node, group in groups.items():
            if node is None:
                result.append((group, self.client.send_to_controller))
            else:

                async def to_node(
                    api: int, body: Mapping[str, Any], _node: int = node
                ) -> dict[str, Any]:
                    return await self.client.send_to_node(_node, api, body)

                result.append((group, to_node))
        return result

    async def _destination_connection(self, resource: ConfigResource) -> Any:
        await self.client.start()
        if resource.type is ConfigResourceType.BROKER and resource.name.isdigit():
            return await self.client.connection(int(resource.name))
        controller = self.client.cluster.controller_id
        if self.client.cluster.broker(controller) is None:
            await self.client.refresh_metadata([])
            controller = self.client.cluster.controller_id
        return await self.client.connection(controller)


def _creatable_topic(t: NewTopic) -> dict[str, Any]:
    if t.replica_assignment is not None:
        num_partitions, replication_factor = -1, -1
        assignments = [
            {"partition_index": p, "broker_ids": list(replicas)}
            for p, replicas in sorted(t.replica_assignment.items())
        ]
    else:
        num_partitions, replication_factor = t.num_partitions, t.replication_factor
        assignments = []
    return {
        "name": t.name,
        "num_partitions": num_partitions,
        "replication_factor": replication_factor,
        "assignments": assignments,
        "configs": [{"name": k, "value": v} for k, v in t.configs.items()],
    }


def _config_entry(c: Mapping[str, Any]) -> ConfigEntry:
    if "config_source" in c:
        try:
            source = ConfigSource(c["config_source"])
        except ValueError:
            source = ConfigSource.UNKNOWN
        is_default = source is ConfigSource.DEFAULT_CONFIG
    else:  # v0: only is_default; a non-default value is taken to be the topic's own
        is_default = bool(c.get("is_default", False))
        source = ConfigSource.DEFAULT_CONFIG if is_default else ConfigSource.DYNAMIC_TOPIC_CONFIG
    return ConfigEntry(
        name=c["name"],
        value=c["value"],
        source=source,
        is_default=is_default,
        read_only=bool(c.get("read_only", False)),
        is_sensitive=bool(c.get("is_sensitive", False)),
        synonyms=tuple(
            ConfigSynonym(s["name"], s["value"], _config_source(s["source"]))
            for s in c.get("synonyms") or ()
        ),
    )


def _config_source(value: int) -> ConfigSource:
    try:
        return ConfigSource(value)
    except ValueError:
        return ConfigSource.UNKNOWN


def _scram_mechanism(name: str) -> ScramMechanism:
    mechanism = ScramMechanism.for_name(name)
    if mechanism is None:
        raise InvalidConfigurationError(
            f"Unknown SCRAM mechanism {name}: use {' or '.join(ScramMechanism.names())}"
        )
    return mechanism


def _partition_errors(
    topics: Iterable[Mapping[str, Any]], topic_key: str, partitions_key: str, partition_key: str
) -> dict[TopicPartition, KafkaError | None]:
    """Each partition of a response's per-topic results (the fields named by the keys):
    None where it succeeded, else its error with the response's message."""
    return {
        TopicPartition(t[topic_key], p[partition_key]): None
        if p["error_code"] == Errors.NONE
        else error_for_code(p["error_code"], p.get("error_message"))
        for t in topics
        for p in t[partitions_key]
    }


def _raise_first(results: Iterable[Mapping[str, Any]], action: str) -> None:
    """Raise the error of the first result that has one."""
    for r in results:
        code = r.get("error_code", 0)
        if code:
            name = r.get("name", r.get("resource_name"))
            raise_for_code(code, r.get("error_message"), f"{action} {name}")
