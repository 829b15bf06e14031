"""The schema registry's unit-test fixtures: a `_schemas` topic kept in memory (as
Confluent's InMemoryStore), and registries over it."""

from __future__ import annotations

from kafpy.schema_registry.kafka_schema_registry import KafkaSchemaRegistry
from kafpy.schema_registry.schema_registry_config import SchemaRegistryConfig
from kafpy.schema_registry.schema_registry_records import (
    SchemaRegistryKey,
    SchemaRegistryValue,
    deserialize_key,
    deserialize_value,
    serialize_key,
    serialize_value,
)

CONFIG = SchemaRegistryConfig.from_props({"kafkastore.bootstrap.servers": "localhost:9092"})


class InMemoryStore:
    """The topic as a list of (key, value) bytes (shared by the registries over it), and
    how far this registry has applied it; a write is applied at once."""

    kafka_cluster_id = "in-memory-cluster"

    def __init__(self, topic: list[tuple[bytes, bytes | None]] | None = None) -> None:
        self.records: list[tuple[bytes, bytes | None]] = [] if topic is None else topic
        self.position = 0
        self.registry: KafkaSchemaRegistry | None = None

    async def put(self, key: SchemaRegistryKey, value: SchemaRegistryValue | None) -> None:
        self.records.append((serialize_key(key), serialize_value(value)))
        await self.wait_until_caught_up()

    async def wait_until_caught_up(self) -> None:
        assert self.registry is not None
        new, self.position = self.records[self.position :], len(self.records)
        replay(self.registry, new)


def replay(registry: KafkaSchemaRegistry, records: list[tuple[bytes, bytes | None]]) -> None:
    for key_bytes, value_bytes in records:
        key = deserialize_key(key_bytes)
        registry.apply(key, deserialize_value(key, value_bytes))


def new_registry(store: InMemoryStore | None = None) -> KafkaSchemaRegistry:
    store = store or InMemoryStore()
    registry = KafkaSchemaRegistry(CONFIG, store=store)  # type: ignore[arg-type]
    store.registry = registry
    return registry
