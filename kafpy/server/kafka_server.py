"""KafkaServer: one broker's lifecycle, starting and stopping its subsystems in Kafka's order.

Start-up: metadata store session and Kafka's persistent paths, cluster id, meta.properties
check, the background scheduler, LogManager (loading and recovering every log),
MetadataCache, the socket server bound (not accepting yet), ReplicaManager, the broker's
registration under /brokers/ids, the controller (elects itself or follows), AdminManager,
the producer id manager, the group coordinator, KafkaApis, the dynamic config listener, and last the socket
server accepting connections; Metadata requests wait (MetadataReadinessGate) until this
broker has its first UpdateMetadata, so no client is told of an empty cluster.

Shutdown runs backwards: stop serving clients, the config listener, the group
coordinator, the controller,
ReplicaManager (parked requests answered, high watermarks checkpointed), the metadata
store session (the registration goes), LogManager (checkpoints and the clean-shutdown
marker), the scheduler.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Collection
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kafpy.admin.admin_zk_client import AdminZkClient
from kafpy.client.client_security import ClientSecurity
from kafpy.common.features import BrokerFeatures
from kafpy.common.file_descriptors import raise_open_files_limit
from kafpy.common.kafka_uuid import uuid_to_string
from kafpy.common.logger import component_logger
from kafpy.common.scheduler import KafkaScheduler
from kafpy.common.time import SYSTEM_TIME, Time
from kafpy.common.topic_partition import TopicPartition
from kafpy.controller.controller_channel_manager import broker_connection_factory
from kafpy.controller.kafka_controller import KafkaController
from kafpy.coordinator.group_config import GroupConfig, OffsetConfig
from kafpy.coordinator.group_coordinator import GroupCoordinator
from kafpy.coordinator.transaction.transaction_config import TransactionConfig
from kafpy.coordinator.transaction.transaction_coordinator import TransactionCoordinator
from kafpy.coordinator.transaction.transaction_marker_channel_manager import (
    Destination,
    LeaderEndpoint,
    TransactionMarkerChannelManager,
    marker_connection_factory,
)
from kafpy.coordinator.transaction.transaction_state_manager import TransactionStateManager
from kafpy.metadata.kafka_zk_client import KafkaZkClient
from kafpy.metadata.store import MetadataStore
from kafpy.metadata.store_factory import create_store
from kafpy.metadata.zk_data import Broker, BrokerInfo, ConfigType, EndPoint
from kafpy.network.bound_ports import write_bound_ports
from kafpy.network.channel_builders import (
    inter_broker_client_security,
    listener_sasl_configs,
    listener_ssl_factories,
)
from kafpy.network.connection_quotas import ConnectionQuotas
from kafpy.network.request_channel import Request, ResponseParts
from kafpy.network.socket_server import SocketServer
from kafpy.protocol.api_keys import ApiKey
from kafpy.security.authorizer.acl_authorizer import AclAuthorizer, parse_super_users
from kafpy.security.credential_cache import CredentialCache, CredentialProvider
from kafpy.security.delegation_token_cache import DelegationTokenCache
from kafpy.server.admin_manager import AdminManager
from kafpy.server.alter_isr_manager import (
    AlterIsrManager,
    BrokerToControllerChannel,
    is_alter_isr_supported,
)
from kafpy.server.broker_metadata_checkpoint import check_broker_metadata
from kafpy.server.client_quota_manager import QuotaManagers
from kafpy.server.controlled_shutdown import controlled_shutdown
from kafpy.server.delegation_token_manager import DelegationTokenConfig, DelegationTokenManager
from kafpy.server.dynamic_broker_config import (
    DynamicBrokerConfig,
    DynamicCleanerConfig,
    DynamicConnectionQuotaConfig,
    DynamicControllerConfig,
    DynamicListenerSecurityConfig,
    DynamicLogConfig,
    DynamicReplicaFetcherConfig,
    DynamicReplicationQuotaConfig,
)
from kafpy.server.dynamic_config_manager import (
    DynamicConfigManager,
    IpConfigHandler,
    UserConfigHandler,
)
from kafpy.server.finalized_feature_cache import (
    FinalizedFeatureCache,
    FinalizedFeatureChangeListener,
)
from kafpy.server.kafka_apis import KafkaApis
from kafpy.server.kafka_config import KafkaConfig
from kafpy.server.log_dir_failure_channel import LogDirFailureChannel
from kafpy.server.loop_lag_probe import LoopLagProbe
from kafpy.server.metadata_cache import MetadataCache
from kafpy.server.producer_id_manager import ProducerIdManager
from kafpy.server.replica_fetcher_thread import ReplicaFetcherConfig
from kafpy.server.replica_manager import ReplicaManager
from kafpy.storage.file_handle_cache import FILE_HANDLE_CACHE, capacity_for
from kafpy.storage.log_config import LogConfig
from kafpy.storage.log_manager import LogManager

_CONFIG_LOG = logging.getLogger("kafpy.server.KafkaConfig")

if TYPE_CHECKING:
    from kafpy.server.broker_metrics import RequestMetrics
    from kafpy.server.metrics_endpoint import MetricsEndpoint


def generate_cluster_id() -> str:
    """A new cluster id as Kafka makes one: a random UUID in URL-safe base64, unpadded."""
    return uuid_to_string(uuid.uuid4())


class KafkaServer:
    """One broker: owns its metadata-store session, scheduler, LogManager, socket server,
    ReplicaManager, controller and request handling."""

    def __init__(
        self, config: KafkaConfig, time: Time = SYSTEM_TIME, bound_ports_file: Path | None = None
    ) -> None:
        self.config = config
        # where to tell the process that started this broker its listeners' ports
        self.bound_ports_file = bound_ports_file
        self.time = time
        self.log = component_logger("kafpy.server.KafkaServer", "KafkaServer", config.broker_id)
        self.store: MetadataStore | None = None
        self.zk_client: KafkaZkClient | None = None
        self.scheduler: KafkaScheduler | None = None
        self.log_manager: LogManager | None = None
        self.metadata_cache: MetadataCache | None = None
        self.socket_server: SocketServer | None = None
        # Kafka's RequestMetrics, counted by the socket server while metrics are served
        self.request_metrics: RequestMetrics | None = None
        self.replica_manager: ReplicaManager | None = None
        self.controller: KafkaController | None = None
        self.admin_manager: AdminManager | None = None
        self.producer_id_manager: ProducerIdManager | None = None
        self.group_coordinator: GroupCoordinator | None = None
        self.transaction_coordinator: TransactionCoordinator | None = None
        self.apis: KafkaApis | None = None
        self.authorizer: AclAuthorizer | None = None
        # KIP-584: what /feature finalizes, for ApiVersions
        self.feature_cache = FinalizedFeatureCache(BrokerFeatures.create_default())
        self.feature_change_listener: FinalizedFeatureChangeListener | None = None
        self.dynamic_config_manager: DynamicConfigManager | None = None
        self.loop_lag_probe: LoopLagProbe | None = None
        self.metrics_endpoint: MetricsEndpoint | None = None  # kafpy.metrics.listener
        self.credential_cache = CredentialCache()
        self.token_cache = DelegationTokenCache()
        self.token_manager: DelegationTokenManager | None = None
        self.dynamic_config = DynamicBrokerConfig(config)
        self.log_dir_failure_channel = LogDirFailureChannel()
        self.inter_broker_security = ClientSecurity()
        self.cluster_id: str | None = None
        self._shutdown_requested = asyncio.Event()
        self._started = False

    @property
    def broker_id(self) -> int:
        return self.config.broker_id

    @property
    def broker_epoch(self) -> int:
        """This broker's current epoch (KIP-380), held by its controller, which registers
        the broker again after a session expiry; -1 before the broker registered."""
        return self.controller.broker_epoch if self.controller is not None else -1

    async def startup(self) -> None:
        """Start every subsystem; on failure, stop what was started and re-raise."""
        self.log.info("starting")
        self.config.log_values(_CONFIG_LOG)
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
        # a key store that does not load stops the broker here
        ssl_factories = listener_ssl_factories(cfg)
        # so does a bad JAAS config; SCRAM credentials load with the dynamic configs
        sasl_configs = listener_sasl_configs(cfg, self.credential_cache, self.token_cache)
        self.inter_broker_security = inter_broker_client_security(cfg)
        self.loop_lag_probe = LoopLagProbe.start(cfg.broker_id, until=self._shutdown_requested)
        self._raise_open_files_limit()
        for d in cfg.log_dirs:
            d.mkdir(parents=True, exist_ok=True)
        self.store = create_store(
            cfg.zookeeper_connect,
            cfg.metadata_store_dir if cfg.zookeeper_connect is None else None,
            cfg.zookeeper_session_timeout_ms,
            connection_timeout_ms=cfg.zookeeper_connection_timeout_ms,
        )
        await self.store.start()
        self.zk_client = KafkaZkClient(self.store)
        await self.zk_client.make_sure_persistent_paths_exist()
        await self.dynamic_config.initialize(self.zk_client)
        if self.dynamic_config.current is not cfg:  # listeners start with stored key stores
            ssl_factories = listener_ssl_factories(self.dynamic_config.current)
            sasl_configs = listener_sasl_configs(
                self.dynamic_config.current, self.credential_cache, self.token_cache
            )
        self.cluster_id = await self.zk_client.create_or_get_cluster_id(generate_cluster_id())
        self.log.info("Cluster ID = %s", self.cluster_id)
        if cfg.broker_id < 0:
            raise NotImplementedError(
                "broker.id generation from /brokers/seqid is not built yet; set broker.id"
            )
        check_broker_metadata(cfg.log_dirs, cfg.broker_id, self.cluster_id)
        self.feature_change_listener = FinalizedFeatureChangeListener(
            self.feature_cache, self.store
        )
        await self.feature_change_listener.initialize_or_throw()

        self.scheduler = KafkaScheduler(cfg.background_threads, time=self.time)
        self.scheduler.startup()
        topic_configs = await self._fetch_topic_configs(
            self.dynamic_config.current.log_default_config()
        )
        loop = asyncio.get_running_loop()
        # Loading logs blocks (recovery may read whole segments): keep it off the loop.
        self.log_manager = await loop.run_in_executor(None, self._create_log_manager, topic_configs)
        self.log_manager.startup()

        self.metadata_cache = MetadataCache(cfg.broker_id)
        self.socket_server = SocketServer(
            cfg.listeners, max_request_size=cfg.socket_request_max_bytes,
            broker_id=cfg.broker_id, time=self.time,
            security_protocols=cfg.listener_security_protocol_map,
            ssl_factories=ssl_factories,
            ssl_handshake_timeout_ms=cfg.connections_max_idle_ms,
            sasl_configs=sasl_configs,
            sasl_authentication_timeout_ms=cfg.connections_max_idle_ms,
            connection_quotas=ConnectionQuotas(
                self.dynamic_config.current.connection_quota_config(), self.time
            ),
            failed_authentication_delay_ms=cfg.connection_quota_config().failed_authentication_delay_ms,
        )  # fmt: skip
        await self.socket_server.bind()
        if self.bound_ports_file is not None:
            write_bound_ports(self.bound_ports_file, self.socket_server.bound_ports())
        self.replication_quotas = DynamicReplicationQuotaConfig(
            self.dynamic_config, cfg.get("replication.quota.window.num"),
            cfg.get("replication.quota.window.size.seconds"), self.time,
        )  # fmt: skip
        self.replica_manager = ReplicaManager(
            cfg.broker_id, self.log_manager, self.metadata_cache, self.scheduler, self.time,
            replica_lag_time_max_ms=cfg.replica_lag_time_max_ms,
            high_watermark_checkpoint_interval_ms=cfg.replica_high_watermark_checkpoint_interval_ms,
            fetch_purgatory_purge_interval=cfg.fetch_purgatory_purge_interval_requests,
            producer_purgatory_purge_interval=cfg.producer_purgatory_purge_interval_requests,
            zk_client=self.zk_client,
            fetcher_config=_replica_fetcher_config(self.dynamic_config.current, self.inter_broker_security),
            isr_change_propagation_blackout_ms=cfg.replica_isr_change_propagation_blackout_ms,
            isr_change_propagation_max_interval_ms=cfg.replica_isr_change_propagation_max_interval_ms,
            log_dir_failure_channel=self.log_dir_failure_channel,
            log_dir_failure_timeout_ms=cfg.log_dir_failure_timeout_ms,
            replication_quotas=self.replication_quotas.managers,
            alter_isr_manager=self._alter_isr_manager(),
            replica_selector=cfg.replica_selector,
        )  # fmt: skip
        self.replica_manager.startup()
        if cfg.metrics_listener is not None:
            await self._start_metrics(*cfg.metrics_listener)

        broker_info = self._broker_info()
        broker_epoch = await self.zk_client.register_broker(broker_info)
        self.log.info(
            "Registered broker %d at path %s with addresses: %s, czxid (broker epoch): %d",
            cfg.broker_id, broker_info.path,
            ",".join(e.connection_string for e in broker_info.broker.endpoints), broker_epoch,
        )  # fmt: skip

        self.controller = KafkaController(
            self.dynamic_config.current, self.zk_client, time=self.time, broker_info=broker_info,
            broker_epoch=broker_epoch, channel_factory=broker_connection_factory(
                cfg.broker_id, cfg.get("controller.socket.timeout.ms"), self.inter_broker_security
            ),
        )  # fmt: skip
        await self.controller.startup()
        controller = self.controller
        self.token_manager = DelegationTokenManager(
            DelegationTokenConfig.from_config(cfg), self.token_cache, self.store,
            broker_id=cfg.broker_id, time=self.time, is_controller=lambda: controller.is_active,
        )  # fmt: skip
        await self.token_manager.startup()

        metadata_cache = self.metadata_cache
        log_manager = self.log_manager
        admin_zk_client = AdminZkClient(self.zk_client, uses_topic_id=True)
        self.admin_manager = AdminManager(
            cfg, self.zk_client, admin_zk_client,
            partitions_online=lambda topic, partitions: _partitions_online(metadata_cache, topic, partitions),
            topic_exists_in_metadata=metadata_cache.contains_topic, dynamic_config=self.dynamic_config,
            partitions_refused=lambda topic, partitions: _partitions_refused(log_manager, topic, partitions),
        )  # fmt: skip
        self.producer_id_manager = ProducerIdManager(cfg.broker_id, self.zk_client)
        self.group_coordinator = GroupCoordinator(
            cfg.broker_id, GroupConfig.from_config(cfg), OffsetConfig.from_config(cfg),
            self.replica_manager, self.time, self.scheduler,
        )  # fmt: skip
        self.group_coordinator.startup()
        self.quotas = QuotaManagers(
            cfg.get("quota.window.num"), cfg.get("quota.window.size.seconds")
        )
        self.transaction_coordinator = self._create_transaction_coordinator()
        self.transaction_coordinator.startup()
        if cfg.authorizer_class_name:
            self.authorizer = AclAuthorizer(
                self.store, parse_super_users(cfg.super_users), cfg.allow_everyone_if_no_acl_found
            )
            await self.authorizer.start()
        self.apis = KafkaApis(
            cfg, self.replica_manager, self.metadata_cache, admin_zk_client,
            self.cluster_id, controller=self.controller, admin_manager=self.admin_manager,
            producer_id_manager=self.producer_id_manager, group_coordinator=self.group_coordinator,
            quotas=self.quotas,
            transaction_coordinator=self.transaction_coordinator,
            authorizer=self.authorizer,
            finalized_feature_cache=self.feature_cache,
            token_manager=self.token_manager,
        )  # fmt: skip
        self.dynamic_config.add_reconfigurable(DynamicLogConfig(self.log_manager))
        self.dynamic_config.add_reconfigurable(DynamicCleanerConfig(self.log_manager))
        self.dynamic_config.add_reconfigurable(
            DynamicReplicaFetcherConfig(self.replica_manager.replica_fetcher_manager)
        )
        self.dynamic_config.add_reconfigurable(DynamicControllerConfig(self.controller))
        self.dynamic_config.add_reconfigurable(self.replication_quotas)
        self.dynamic_config.add_reconfigurable(DynamicConnectionQuotaConfig(self.socket_server))
        listener_security = DynamicListenerSecurityConfig(
            self.socket_server, self.credential_cache, self.token_cache
        )
        self.dynamic_config.add_validator(listener_security.validate)
        self.dynamic_config.add_reconfigurable(listener_security)
        self.dynamic_config_manager = DynamicConfigManager.for_log_manager(
            self.zk_client,
            self.log_manager,
            self.time,
            self.dynamic_config,
            controller=self.controller,
            quotas=self.quotas,
        )
        handlers = self.dynamic_config_manager.handlers
        handlers[ConfigType.IP] = IpConfigHandler(self.socket_server.connection_quotas)
        handlers[ConfigType.USER] = UserConfigHandler(
            handlers.get(ConfigType.USER), CredentialProvider(self.credential_cache)
        )
        await self.dynamic_config_manager.startup()
        await self.socket_server.start_processing(
            MetadataReadinessGate(self.apis, self.metadata_cache, self.socket_server)
        )

    def _alter_isr_manager(self) -> AlterIsrManager | None:
        """AlterIsr to the controller at inter.broker.protocol.version 2.7-IV2 and later
        (always: kafpy accepts only 2.8); None leaves ISR writes to ZkIsrManager."""
        cfg = self.config
        if not is_alter_isr_supported(str(cfg.get("inter.broker.protocol.version"))):
            return None
        assert self.metadata_cache is not None
        channel = BrokerToControllerChannel(
            cfg.broker_id, self.metadata_cache, cfg.inter_broker_listener_name, "alterIsrChannel",
            cfg.get("controller.socket.timeout.ms"), self.inter_broker_security,
        )  # fmt: skip
        log = component_logger("kafpy.server.AlterIsrManager")
        return AlterIsrManager(cfg.broker_id, lambda: self.broker_epoch, channel, log)

    def _create_transaction_coordinator(self) -> TransactionCoordinator:
        """The transaction coordinator; its markers go to partition leaders on the
        inter-broker listener, found in this broker's metadata cache."""
        assert self.replica_manager is not None and self.metadata_cache is not None
        assert self.producer_id_manager is not None
        cfg, cache = self.config, self.metadata_cache
        listener = cfg.inter_broker_listener_name
        txn_config = TransactionConfig.from_config(cfg)

        def leader_for(tp: TopicPartition) -> LeaderEndpoint | Destination:
            info = cache.get_partition_info(tp)
            if info is None:
                return Destination.GONE
            broker = cache.get_alive_broker(info.leader) if info.leader >= 0 else None
            endpoint = broker.endpoint(listener) if broker is not None else None
            if endpoint is None:
                return Destination.NO_LEADER
            return LeaderEndpoint(info.leader, endpoint.host, endpoint.port)

        state_manager = TransactionStateManager(
            cfg.broker_id, txn_config, self.replica_manager, self.time
        )
        markers = TransactionMarkerChannelManager(
            cfg.broker_id, state_manager, leader_for,
            marker_connection_factory(
                cfg.broker_id, txn_config.request_timeout_ms, self.inter_broker_security
            ),
        )  # fmt: skip
        return TransactionCoordinator(
            cfg.broker_id, txn_config, state_manager, markers, self.producer_id_manager,
            self.time, self.scheduler,
        )  # fmt: skip

    async def _fetch_topic_configs(self, default: LogConfig) -> dict[str, LogConfig]:
        assert self.zk_client is not None
        configs: dict[str, LogConfig] = {}
        for topic in await self.zk_client.get_all_entities_with_config("topics"):
            overrides = await self.zk_client.get_entity_configs("topics", topic)
            if overrides:
                configs[topic] = LogConfig.from_props(default.values(), overrides)
        return configs

    def _raise_open_files_limit(self) -> None:
        """Raise the soft RLIMIT_NOFILE to the hard limit (the JVM does so for Kafka) and
        keep half of it for segment files (FileHandleCache), the rest for connections."""
        before, after, hard = raise_open_files_limit()
        FILE_HANDLE_CACHE.capacity = capacity_for(after)
        self.log.info(
            "Open files limit (RLIMIT_NOFILE): soft %d (was %d), hard %d; at most %d segment "
            "files are kept open",
            after,
            before,
            hard,
            FILE_HANDLE_CACHE.capacity,
        )

    def _create_log_manager(self, topic_configs: dict[str, LogConfig]) -> LogManager:
        cfg = self.dynamic_config.current  # server.properties and the stored dynamic configs
        assert self.scheduler is not None
        return LogManager(
            cfg.log_dirs,
            topic_configs=topic_configs,
            initial_default_config=cfg.log_default_config(),
            cleaner_config=cfg.log_cleaner_config(),
            recovery_threads_per_data_dir=cfg.num_recovery_threads_per_data_dir,
            flush_check_ms=cfg.log_flush_scheduler_interval_ms,
            flush_recovery_offset_checkpoint_ms=cfg.log_flush_offset_checkpoint_interval_ms,
            flush_start_offset_checkpoint_ms=cfg.log_flush_start_offset_checkpoint_interval_ms,
            retention_check_ms=cfg.log_retention_check_interval_ms,
            initial_task_delay_ms=cfg.log_initial_task_delay_ms,
            scheduler=self.scheduler,
            time=self.time,
            broker_id=cfg.broker_id,
            log_dir_failure_handler=self.log_dir_failure_channel.maybe_add_offline_log_dir,
        )

    async def _start_metrics(self, host: str, port: int) -> None:
        """Count Kafka's broker meters and serve them (kafpy.metrics.listener)."""
        # imported only here: prometheus-client and aiohttp cost a broker without metrics
        # a good part of its start-up time
        from kafpy.server.broker_metrics import BrokerTopicStats, RequestMetrics, new_registry
        from kafpy.server.metrics_endpoint import MetricsEndpoint

        assert self.replica_manager is not None and self.socket_server is not None
        self.replica_manager.broker_topic_stats = BrokerTopicStats()
        self.request_metrics = RequestMetrics()
        self.socket_server.request_metrics = self.request_metrics
        endpoint = MetricsEndpoint(
            new_registry(self, self.loop_lag_probe), host, port, self.config.broker_id
        )
        await endpoint.start()
        self.metrics_endpoint = endpoint

    def _broker_info(self) -> BrokerInfo:
        assert self.socket_server is not None
        bound = {name for name, _, _ in self.config.listeners}
        endpoints = tuple(
            EndPoint(
                host or None,
                # port 0 (tests): advertise the port the listener got
                self.socket_server.bound_port(name) if port == 0 and name in bound else port,
                name,
                self.config.security_protocol(name),
            )
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
        if self._started and self.zk_client is not None and self.config.controlled_shutdown_enable:
            steps.append(("controlled shutdown", self._controlled_shutdown))
        if self.metrics_endpoint is not None:
            steps.append(("metrics endpoint", self._shutdown_metrics_endpoint))
        if self.socket_server is not None:
            steps.append(("socket server", self._shutdown_socket_server))
        if self.dynamic_config_manager is not None:
            steps.append(("dynamic config manager", self._shutdown_dynamic_config_manager))
        if self.transaction_coordinator is not None:
            steps.append(("transaction coordinator", self._shutdown_transaction_coordinator))
        if self.group_coordinator is not None:
            steps.append(("group coordinator", self._shutdown_group_coordinator))
        if self.controller is not None:
            steps.append(("controller", self._shutdown_controller))
        if self.feature_change_listener is not None:
            self.feature_change_listener.close()
        if self.replica_manager is not None:
            steps.append(("ReplicaManager", self._shutdown_replica_manager))
        if self.authorizer is not None:
            steps.append(("authorizer", self.authorizer.close))
        if self.token_manager is not None:
            steps.append(("delegation token manager", self.token_manager.shutdown))
        if self.store is not None:
            steps.append(("metadata store session", self._close_store))
        if self.log_manager is not None:
            steps.append(("LogManager", self._shutdown_log_manager))
        if self.scheduler is not None and self.scheduler.is_started:
            steps.append(("scheduler", self._shutdown_scheduler))
        # clients first, then the controller and replicas, the registration (the session
        # closes), then logs, then the scheduler
        for name, step in steps:
            try:
                await step()
            except Exception:
                self.log.exception("Error while shutting down the %s", name)
        self._started = False
        self.log.info("shut down completed")

    async def _controlled_shutdown(self) -> None:
        """Ask the controller to move this broker's leaderships away while it still serves."""
        assert self.zk_client is not None
        await controlled_shutdown(
            self.zk_client, self.broker_id, lambda: self.broker_epoch,
            self.config.inter_broker_listener_name,
            self.config.controlled_shutdown_max_retries,
            self.config.controlled_shutdown_retry_backoff_ms, self.log,
            security=self.inter_broker_security,
        )  # fmt: skip

    async def _shutdown_metrics_endpoint(self) -> None:
        assert self.metrics_endpoint is not None
        endpoint, self.metrics_endpoint = self.metrics_endpoint, None
        await endpoint.stop()

    async def _shutdown_socket_server(self) -> None:
        assert self.socket_server is not None
        server, self.socket_server = self.socket_server, None
        await server.shutdown()

    async def _shutdown_dynamic_config_manager(self) -> None:
        assert self.dynamic_config_manager is not None
        manager, self.dynamic_config_manager = self.dynamic_config_manager, None
        await manager.shutdown()

    async def _shutdown_group_coordinator(self) -> None:
        assert self.group_coordinator is not None
        coordinator, self.group_coordinator = self.group_coordinator, None
        coordinator.shutdown()

    async def _shutdown_transaction_coordinator(self) -> None:
        assert self.transaction_coordinator is not None
        coordinator, self.transaction_coordinator = self.transaction_coordinator, None
        await coordinator.shutdown()

    async def _shutdown_controller(self) -> None:
        assert self.controller is not None
        controller, self.controller = self.controller, None
        await controller.shutdown()

    async def _shutdown_replica_manager(self) -> None:
        assert self.replica_manager is not None
        rm, self.replica_manager = self.replica_manager, None
        if self.apis is not None:
            await self.apis.log_dirs.shutdown()  # moves between log dirs stop first
        await rm.shutdown_fetchers()
        rm.shutdown()  # on the loop: it answers the parked requests

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


def _replica_fetcher_config(
    cfg: KafkaConfig, security: ClientSecurity | None = None
) -> ReplicaFetcherConfig:
    return ReplicaFetcherConfig(
        security=security,
        num_replica_fetchers=cfg.num_replica_fetchers,
        fetch_max_bytes=cfg.replica_fetch_max_bytes,
        fetch_response_max_bytes=cfg.replica_fetch_response_max_bytes,
        fetch_wait_max_ms=cfg.replica_fetch_wait_max_ms,
        fetch_min_bytes=cfg.replica_fetch_min_bytes,
        fetch_backoff_ms=cfg.replica_fetch_backoff_ms,
        socket_timeout_ms=cfg.replica_socket_timeout_ms,
    )


class MetadataReadinessGate:
    """Holds Metadata requests until this broker's own metadata is known.

    The listeners accept connections before the controller (this broker or another) has
    sent this broker its first UpdateMetadata, as Kafka's do; a Metadata answer from that
    window lists no brokers and no controller, and a client such as librdkafka then waits
    for a controller it is never told about. So Metadata waits (at most
    `METADATA_HOLD_MAX_S`) until the cache lists this broker alive and a controller;
    then the gate steps aside and the socket server calls KafkaApis directly.
    """

    METADATA_HOLD_MAX_S = 10.0

    def __init__(self, apis: KafkaApis, cache: MetadataCache, socket_server: SocketServer) -> None:
        self._apis = apis
        self._cache = cache
        self._socket_server = socket_server
        self._known = asyncio.Event()

    def _check(self) -> bool:
        cache = self._cache
        if cache.controller_id is None or cache.get_alive_broker(cache.broker_id) is None:
            return False
        self._known.set()
        self._socket_server.handler = self._apis
        return True

    async def handle(self, request: Request) -> ResponseParts | None:
        if request.api_key == ApiKey.METADATA and not self._known.is_set():
            try:
                await asyncio.wait_for(self._known.wait(), self.METADATA_HOLD_MAX_S)
            except TimeoutError:
                pass  # answer with what is known: the client retries
        response = await self._apis.handle(request)
        if request.api_key == ApiKey.UPDATE_METADATA and not self._known.is_set():
            self._check()
        return response


def _partitions_refused(
    log_manager: LogManager, topic: str, partitions: Collection[int]
) -> str | None:
    """Why this broker refused to create the log of one of the listed partitions, if it did."""
    for p in partitions:
        reason = log_manager.refused_log_reason(TopicPartition(topic, p))
        if reason is not None:
            return reason
    return None


def _partitions_online(cache: MetadataCache, topic: str, partitions: Collection[int]) -> bool:
    """Whether every listed partition has a live leader in the metadata cache."""
    for p in partitions:
        info = cache.get_partition_info(TopicPartition(topic, p))
        if info is None or info.leader < 0 or cache.get_alive_broker(info.leader) is None:
            return False
    return True
