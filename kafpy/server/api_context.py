"""ApiContext: the broker components the API handler groups answer from (what Kafka's
KafkaApis is constructed with), shared by every group of one broker.

A component the broker runs without is None; the APIs that need it are not served (their
registry entry names the need, kafpy/server/api_registry.py). The controller may be set
after the handlers are built (it is read at each request).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any

from kafpy.admin.admin_zk_client import AdminZkClient
from kafpy.common.logger import PrefixAdapter
from kafpy.controller.kafka_controller import KafkaController
from kafpy.coordinator.group_coordinator import GroupCoordinator
from kafpy.coordinator.transaction.transaction_coordinator import TransactionCoordinator
from kafpy.network.request_channel import Request
from kafpy.security.authorizer.acl_authorizer import AclAuthorizer
from kafpy.server.admin_manager import AdminManager
from kafpy.server.client_quota_manager import QuotaManagers
from kafpy.server.delegation_token_manager import DelegationTokenManager
from kafpy.server.fetch_session import FetchManager, FetchSessionCache
from kafpy.server.finalized_feature_cache import FinalizedFeatureCache
from kafpy.server.kafka_config import KafkaConfig
from kafpy.server.metadata_cache import MetadataCache
from kafpy.server.producer_id_manager import ProducerIdManager
from kafpy.server.replica_alter_log_dirs_manager import ReplicaAlterLogDirsManager
from kafpy.server.replica_manager import ReplicaManager

if TYPE_CHECKING:
    from kafpy.server.auth_helper import AuthHelper


class Needs(Enum):
    """A component an API cannot be served without."""

    ADMIN_MANAGER = "admin manager"
    ADMIN_ZK_CLIENT = "metadata store admin client"
    CLIENT_QUOTAS = "client quotas and the metadata store admin client"
    CONTROLLER = "controller"
    GROUP_COORDINATOR = "group coordinator"
    PRODUCER_ID_MANAGER = "producer id manager"
    TRANSACTION_COORDINATOR = "transaction and group coordinators"
    TOKEN_MANAGER = "delegation token manager"


@dataclass
class ApiContext:
    """One broker's components, as the API handlers use them."""

    config: KafkaConfig
    replica_manager: ReplicaManager
    metadata_cache: MetadataCache
    admin_zk_client: AdminZkClient | None
    cluster_id: str | None
    log: PrefixAdapter
    auth: AuthHelper
    log_dirs: ReplicaAlterLogDirsManager
    authorizer: AclAuthorizer | None = None
    controller: KafkaController | None = None
    admin_manager: AdminManager | None = None
    producer_id_manager: ProducerIdManager | None = None
    group_coordinator: GroupCoordinator | None = None
    quotas: QuotaManagers | None = None
    transaction_coordinator: TransactionCoordinator | None = None
    finalized_feature_cache: FinalizedFeatureCache | None = None
    token_manager: DelegationTokenManager | None = None
    # the incremental fetch sessions (KIP-227), sized by the config
    fetch_manager: FetchManager = field(init=False)

    def __post_init__(self) -> None:
        cache = FetchSessionCache(self.config.max_incremental_fetch_session_cache_slots)
        self.fetch_manager = FetchManager(self.replica_manager.time, cache)
        # a session reads only the partitions that changed since its last fetch
        self.replica_manager.add_partition_change_listener(cache.partition_changed)

    @property
    def broker_id(self) -> int:
        return self.config.broker_id

    def available(self) -> set[Needs]:
        """The needs this broker's components meet."""
        have = {
            Needs.ADMIN_MANAGER: self.admin_manager is not None,
            Needs.ADMIN_ZK_CLIENT: self.admin_zk_client is not None,
            Needs.CLIENT_QUOTAS: self.quotas is not None and self.admin_zk_client is not None,
            Needs.CONTROLLER: self.controller is not None,
            Needs.GROUP_COORDINATOR: self.group_coordinator is not None,
            Needs.PRODUCER_ID_MANAGER: self.producer_id_manager is not None,
            Needs.TRANSACTION_COORDINATOR: self.transaction_coordinator is not None
            and self.group_coordinator is not None,
            Needs.TOKEN_MANAGER: self.token_manager is not None,
        }
        return {need for need, met in have.items() if met}


def body_of(request: Request) -> dict[str, Any]:
    """The decoded body of a request the broker serves (never None: it was decoded)."""
    assert request.body is not None
    return request.body
