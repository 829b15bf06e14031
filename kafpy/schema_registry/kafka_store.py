"""KafkaStore: the registry's state as the compacted, single-partition topic `_schemas`
(Confluent's KafkaStore and KafkaStoreReaderThread).

At start the store makes sure the topic exists (one partition, `cleanup.policy=compact`,
replication factor `kafkastore.topic.replication.factor` or the number of live brokers if
fewer) and reads it from the beginning to its end before the registry serves anything.
A reader task then follows the topic and hands each record to the registry in order. A
write is produced with acks=all and answered only once the reader has applied it, so what
an instance answers after a write already includes it. A record that is not one of
Confluent's (a foreign or corrupt key or value) is logged as a WARN and skipped.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from kafpy.client.admin_client import AdminClient, ConfigResource, NewTopic
from kafpy.client.fetcher import (
    LATEST_TIMESTAMP,
    ConsumerRecord,
    Fetcher,
    OffsetResetStrategy,
)
from kafpy.client.kafka_client import KafkaClient
from kafpy.client.producer import BatchProducer
from kafpy.common.errors import KafkaError, TopicExistsError, UnknownTopicOrPartitionError
from kafpy.common.logger import component_logger
from kafpy.common.topic_partition import TopicPartition
from kafpy.protocol.errors import Errors
from kafpy.schema_registry import errors
from kafpy.schema_registry.schema_registry_config import SchemaRegistryConfig
from kafpy.schema_registry.schema_registry_records import (
    SchemaRegistryKey,
    SchemaRegistryRecordError,
    SchemaRegistryValue,
    deserialize_key,
    deserialize_value,
    serialize_key,
    serialize_value,
)

FETCH_MAX_WAIT_MS = 500
RETRY_BACKOFF_S = 0.2

StoreUpdateHandler = Callable[[SchemaRegistryKey, SchemaRegistryValue | None], None]
"""Applies one record of the topic to the registry's state; raises
SchemaRegistryRecordError for a record that does not fit it (which is then skipped)."""


class StoreInitError(Exception):
    """The store could not be set up or read to its end (the registry does not start)."""


class KafkaStore:
    """The `_schemas` topic of one cluster, read into the registry through `handler`."""

    def __init__(self, config: SchemaRegistryConfig, handler: StoreUpdateHandler) -> None:
        self.config = config
        self.handler = handler
        self.tp = TopicPartition(config.topic, 0)
        # the reader long-polls Fetch; writes and admin requests go over their own client so
        # that they never queue behind it on one connection
        self.reader_client = KafkaClient(
            config.bootstrap_servers,
            client_id="kafpy-schema-registry-reader",
            security=config.security,
        )
        self.writer_client = KafkaClient(
            config.bootstrap_servers,
            client_id="kafpy-schema-registry-writer",
            security=config.security,
        )
        self.producer = BatchProducer(self.writer_client, acks=-1)
        self.position = 0
        """The offset after the last record applied."""
        self._advanced = asyncio.Condition()
        self._reader: asyncio.Task[None] | None = None
        self._log = component_logger(__name__, "KafkaStore", config.topic)

    # --- life cycle ---

    async def init(self) -> None:
        """Create or check the topic, start the reader and read the topic to its end;
        StoreInitError if that fails within kafkastore.init.timeout.ms."""
        timeout_s = self.config.init_timeout_ms / 1000
        try:
            async with asyncio.timeout(timeout_s):
                await self.writer_client.start()
                await self._create_or_verify_topic()
                self._reader = asyncio.create_task(self._read_forever(), name="kafka-store-reader")
                end = await self._end_offset()
                await self.wait_until_offset(end)
        except TimeoutError:
            raise StoreInitError(
                f"Timed out after {self.config.init_timeout_ms} ms reading the schemas topic "
                f"{self.config.topic} to its end (kafkastore.init.timeout.ms); check that "
                f"the cluster at {self.config.bootstrap_servers} is up"
            ) from None
        except KafkaError as e:
            raise StoreInitError(
                f"Cannot set up the schemas topic {self.config.topic}: {e}"
            ) from None
        self._log.info(f"Read the schemas topic to offset {self.position}")

    async def close(self) -> None:
        if self._reader is not None:
            self._reader.cancel()
            try:
                await self._reader
            except (asyncio.CancelledError, Exception):
                pass
            self._reader = None
        await self.reader_client.close()
        await self.writer_client.close()

    async def _create_or_verify_topic(self) -> None:
        admin = AdminClient(self.writer_client)
        topic = self.config.topic
        try:
            info = (await admin.describe_topics([topic]))[topic]
        except UnknownTopicOrPartitionError:
            info = None
        if info is None or info.error_code == Errors.UNKNOWN_TOPIC_OR_PARTITION:
            nodes, _ = await admin.describe_cluster()
            rf = min(self.config.replication_factor, len(nodes))
            if rf < self.config.replication_factor:
                self._log.warning(
                    f"Creating the schema topic {topic} using a replication factor of {rf}, "
                    f"which is less than the desired one of {self.config.replication_factor}. "
                    "If this is a production environment, it's crucial to add more brokers "
                    "and increase the replication factor of the topic."
                )
            try:
                await admin.create_topics(
                    [NewTopic(topic, 1, rf, configs={"cleanup.policy": "compact"})]
                )
                self._log.info(f"Created the schemas topic {topic} (replication factor {rf})")
                return
            except TopicExistsError:
                info = (await admin.describe_topics([topic]))[topic]
        if len(info.partitions) != 1:
            raise StoreInitError(
                f"The schema topic {topic} should have only 1 partition but has "
                f"{len(info.partitions)}."
            )
        replicas = len(next(iter(info.partitions.values())).replicas)
        if replicas < self.config.replication_factor:
            self._log.warning(
                f"The replication factor of the schema topic {topic} is less than the desired "
                f"one of {self.config.replication_factor}. If this is a production "
                "environment, it's crucial to add more brokers and increase the replication "
                "factor of the topic."
            )
        resource = ConfigResource.topic(topic)
        entries = (await admin.describe_configs([resource]))[resource]
        policy = next((e.value for e in entries if e.name == "cleanup.policy"), None)
        if policy != "compact":
            raise StoreInitError(
                f"The retention policy of the schema topic {topic} is incorrect. You must "
                "configure the topic to 'compact' cleanup policy to avoid Kafka deleting your "
                "schemas after a week. Refer to Kafka documentation for more details on "
                "cleanup policies"
            )

    async def _end_offset(self) -> int:
        fetcher = Fetcher(self.writer_client)
        while True:
            try:
                return (await fetcher.list_offsets([self.tp], LATEST_TIMESTAMP))[self.tp]
            except KafkaError as e:
                if not e.retriable:
                    raise
                await asyncio.sleep(RETRY_BACKOFF_S)
                await self.writer_client.refresh_metadata([self.config.topic])

    @property
    def kafka_cluster_id(self) -> str | None:
        """The cluster's id, as its metadata gave it."""
        return self.writer_client.cluster.cluster_id

    # --- reading ---

    async def _read_forever(self) -> None:
        fetcher = Fetcher(
            self.reader_client, max_wait_ms=FETCH_MAX_WAIT_MS, reset=OffsetResetStrategy.EARLIEST
        )
        fetcher.assign({self.tp: 0})
        while True:
            try:
                records = await fetcher.fetch()
            except asyncio.CancelledError:
                raise
            except Exception as e:  # the reader outlives a broker's failure, and logs it
                self._log.warning(
                    f"Fetching {self.tp} at offset {fetcher.positions[self.tp]} failed: {e}"
                )
                await asyncio.sleep(RETRY_BACKOFF_S)
                continue
            for record in records:
                self._apply(record)
            position = fetcher.positions[self.tp]
            if position != self.position:
                async with self._advanced:
                    self.position = position
                    self._advanced.notify_all()

    def _apply(self, record: ConsumerRecord) -> None:
        try:
            key = deserialize_key(record.key)
            value = deserialize_value(key, record.value)
            self.handler(key, value)
        except SchemaRegistryRecordError as e:
            self._log.warning(
                f"Skipping the record at offset {record.offset} of {self.config.topic}: {e}"
            )

    async def wait_until_offset(self, offset: int) -> None:
        """Wait until every record before `offset` has been applied."""
        async with self._advanced:
            await self._advanced.wait_for(lambda: self.position >= offset)

    async def wait_until_caught_up(self) -> None:
        """Wait until every record written to the topic so far has been applied here
        (RestError 50002 after kafkastore.timeout.ms)."""
        try:
            async with asyncio.timeout(self.config.timeout_ms / 1000):
                await self.wait_until_offset(await self._end_offset())
        except TimeoutError:
            raise errors.operation_timeout(
                f"Timed out reading the schemas topic {self.config.topic} to its end "
                f"(kafkastore.timeout.ms={self.config.timeout_ms})"
            ) from None

    # --- writing ---

    async def put(self, key: SchemaRegistryKey, value: SchemaRegistryValue | None) -> None:
        """Write one record (None: a tombstone) and wait until it has been applied here;
        RestError 50001 if it is not written, 50002 if it is not read back within
        kafkastore.timeout.ms."""
        try:
            results = await self.producer.send(
                self.config.topic, [(serialize_key(key), serialize_value(value))], partition=0
            )
        except KafkaError as e:
            raise errors.store_error(f"Error while writing {key} to the Kafka store: {e}") from None
        offset = results[0].base_offset
        try:
            async with asyncio.timeout(self.config.timeout_ms / 1000):
                await self.wait_until_offset(offset + 1)
        except TimeoutError:
            raise errors.operation_timeout(
                f"Write to the Kafka store timed out while waiting for offset {offset} of "
                f"{self.config.topic} to be read back (kafkastore.timeout.ms="
                f"{self.config.timeout_ms})"
            ) from None
