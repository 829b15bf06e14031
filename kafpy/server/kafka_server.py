"""KafkaServer: one broker's lifecycle, starting and stopping its subsystems in Kafka's order.

Start-up: metadata store session and Kafka's persistent paths, cluster id, meta.properties
check, the background scheduler, LogManager (loading and recovering every log), then the
broker's registration under /brokers/ids. Shutdown runs the same steps backwards, so the
LogManager writes its checkpoints and the clean-shutdown marker.

The socket server, request handling and the controller join this sequence with the
protocol-server work; until then a broker holds and maintains its logs but serves no
client.
"""

from __future__ import annotations

import asyncio
import base64
import uuid
from typing import Any

from kafpy.common.logger import component_logger
from kafpy.common.scheduler import KafkaScheduler
from kafpy.common.time import SYSTEM_TIME, Time
from kafpy.metadata.kafka_zk_client import KafkaZkClient
from kafpy.metadata.store import MetadataStore
from kafpy.metadata.store_factory import create_store
from kafpy.metadata.zk_data import Broker, BrokerInfo, EndPoint
from kafpy.server.broker_metadata_checkpoint import check_broker_metadata
from kafpy.server.kafka_config import KafkaConfig
from kafpy.storage.log_config import LogConfig
from kafpy.storage.log_manager import CleanerConfig, LogManager


def generate_cluster_id() -> str:
    """A new cluster id as Kafka makes one: a random UUID in URL-safe base64, unpadded."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode("ascii").rstrip("=")


class KafkaServer:
    """One broker: owns its metadata-store session, scheduler and LogManager."""

    def __init__(self, config: KafkaConfig, time: Time = SYSTEM_TIME) -> None:
        self.config = config
        self.time = time
        self.log = component_logger("kafpy.server.KafkaServer", "KafkaServer", config.broker_id)
        self.store: MetadataStore | None = None
        self.zk_client: KafkaZkClient | None = None
        self.scheduler: KafkaScheduler | None = None
        self.log_manager: LogManager | None = None
        self.cluster_id: str | None = None
        self._shutdown_requested = asyncio.Event()
        self._started = False

    @property
    def broker_id(self) -> int:
        return self.config.broker_id

    async def startup(self) -> None:
        """Start every subsystem; on failure, stop what was started and re-raise."""
        self.log.info("starting")
        try:
            await self._startup()
        except BaseException:
            self.log.error("Fatal error during KafkaServer startup. Prepare to shutdown")
            await self.shutdown()
            raise
        self._started = True
        self.log.info("started")

    async def _startup(self) -> None:
        cfg = self.config
        for d in cfg.log_dirs:
            d.mkdir(parents=True, exist_ok=True)
        self.store = create_store(
            cfg.zookeeper_connect,
            cfg.metadata_store_dir if cfg.zookeeper_connect is None else None,
            cfg.zookeeper_session_timeout_ms,
        )
        await self.store.start()
        self.zk_client = KafkaZkClient(self.store)
        await self.zk_client.make_sure_persistent_paths_exist()
        self.cluster_id = await self.zk_client.create_or_get_cluster_id(generate_cluster_id())
        self.log.info("Cluster ID = %s", self.cluster_id)
        if cfg.broker_id < 0:
            raise NotImplementedError("broker.id generation from /brokers/seqid is not built yet; set broker.id")
        check_broker_metadata(cfg.log_dirs, cfg.broker_id, self.cluster_id)

        self.scheduler = KafkaScheduler(cfg.background_threads, time=self.time)
        self.scheduler.startup()
        topic_configs = await self._fetch_topic_configs(cfg.log_default_config())
        loop = asyncio.get_running_loop()
        # Loading logs blocks (recovery may read whole segments): keep it off the loop.
        self.log_manager = await loop.run_in_executor(None, self._create_log_manager, topic_configs)
        self.log_manager.startup()

        await self.zk_client.register_broker(self._broker_info())
        self.log.info("Registered broker %d at path /brokers/ids/%d", cfg.broker_id, cfg.broker_id)

    async def _fetch_topic_configs(self, default: LogConfig) -> dict[str, LogConfig]:
        assert self.zk_client is not None
        configs: dict[str, LogConfig] = {}
        for topic in await self.zk_client.get_all_entities_with_config("topics"):
            overrides = await self.zk_client.get_entity_configs("topics", topic)
            if overrides:
                configs[topic] = LogConfig.from_props(default.values(), overrides)
        return configs

    def _create_log_manager(self, topic_configs: dict[str, LogConfig]) -> LogManager:
        cfg = self.config
        assert self.scheduler is not None
        return LogManager(
            cfg.log_dirs,
            topic_configs=topic_configs,
            initial_default_config=cfg.log_default_config(),
            cleaner_config=CleanerConfig(enable_cleaner=cfg.log_cleaner_enable),
            recovery_threads_per_data_dir=cfg.num_recovery_threads_per_data_dir,
            flush_check_ms=cfg.get("log.flush.scheduler.interval.ms"),
            flush_recovery_offset_checkpoint_ms=cfg.get("log.flush.offset.checkpoint.interval.ms"),
            flush_start_offset_checkpoint_ms=cfg.get("log.flush.start.offset.checkpoint.interval.ms"),
            retention_check_ms=cfg.get("log.retention.check.interval.ms"),
            scheduler=self.scheduler,
            time=self.time,
            broker_id=cfg.broker_id,
        )

    def _broker_info(self) -> BrokerInfo:
        endpoints = tuple(
            EndPoint(host or None, port, name, _security_protocol(name))
            for name, host, port in self.config.advertised_listeners
        )
        return BrokerInfo(Broker(self.config.broker_id, endpoints, self.config.broker_rack))

    def request_shutdown(self) -> None:
        """Ask `serve_forever` to return (safe from a signal handler on the loop)."""
        self._shutdown_requested.set()

    async def serve_forever(self) -> None:
        await self._shutdown_requested.wait()

    async def shutdown(self) -> None:
        """Stop in the reverse order of start-up; each step runs even if an earlier one failed."""
        self.log.info("shutting down")
        steps: list[tuple[str, Any]] = []
        if self.store is not None:
            steps.append(("metadata store session", self._close_store))
        if self.log_manager is not None:
            steps.append(("LogManager", self._shutdown_log_manager))
        if self.scheduler is not None and self.scheduler.is_started:
            steps.append(("scheduler", self._shutdown_scheduler))
        # the registration goes first (the session closes), then logs, then the scheduler
        for name, step in steps:
            try:
                await step()
            except Exception:
                self.log.exception("Error while shutting down the %s", name)
        self._started = False
        self.log.info("shut down completed")

    async def _close_store(self) -> None:
        assert self.store is not None
        await self.store.close()
        self.store = None

    async def _shutdown_log_manager(self) -> None:
        assert self.log_manager is not None
        lm = self.log_manager
        self.log_manager = None
        await asyncio.get_running_loop().run_in_executor(None, lm.shutdown)

    async def _shutdown_scheduler(self) -> None:
        assert self.scheduler is not None
        await asyncio.get_running_loop().run_in_executor(None, self.scheduler.shutdown)


def _security_protocol(listener_name: str) -> str:
    # Without listener.security.protocol.map, Kafka maps a listener named after a protocol to it.
    return listener_name if listener_name in ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL") else "PLAINTEXT"
