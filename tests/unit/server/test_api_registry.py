"""The API registry: one entry per advertised API, each with its schema, error response
and authorization guard (or the explicit NO_AUTHORIZATION marker)."""

from __future__ import annotations

from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.api_versions import SUPPORTED_VERSIONS
from kafpy.protocol.messages import API_SCHEMAS
from kafpy.server.api_registry import API_REGISTRY, NO_AUTHORIZATION, ApiEntry
from kafpy.server.kafka_apis import KafkaApis
from kafpy.server.kafka_config import KafkaConfig
from tests.unit.server.fixtures import Broker


def test_every_advertised_api_has_exactly_one_entry() -> None:
    assert set(API_REGISTRY) == set(SUPPORTED_VERSIONS) == set(API_SCHEMAS)
    for key, entry in API_REGISTRY.items():
        assert isinstance(entry, ApiEntry) and entry.api_key == key
        assert entry.schema is API_SCHEMAS[key]
        assert callable(entry.schema.error_response)
        assert entry.guard is NO_AUTHORIZATION or callable(entry.guard), key.api_name


def test_only_the_handshake_apis_and_the_self_checking_apis_go_unguarded() -> None:
    unguarded = {k for k, e in API_REGISTRY.items() if e.guard is NO_AUTHORIZATION}
    assert unguarded == {
        ApiKey.API_VERSIONS, ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE,
        ApiKey.DESCRIBE_ACLS, ApiKey.CREATE_ACLS, ApiKey.DELETE_ACLS,
        # the delegation token APIs check the channel, the owner and Describe themselves
        ApiKey.CREATE_DELEGATION_TOKEN, ApiKey.RENEW_DELEGATION_TOKEN,
        ApiKey.EXPIRE_DELEGATION_TOKEN, ApiKey.DESCRIBE_DELEGATION_TOKEN,
    }  # fmt: skip


def test_kafka_apis_serves_only_registered_apis(broker: Broker) -> None:
    cfg = KafkaConfig({"broker.id": str(broker.broker_id), "log.dirs": str(broker.tmp_path / "x")})
    apis = KafkaApis(cfg, broker.replica_manager, broker.metadata_cache, None, "c")
    assert set(apis.handlers) <= set(API_REGISTRY)
    assert set(apis.supported_versions()) == set(apis.handlers)

    async def handler(request: object) -> None:
        return None

    apis.register(ApiKey.VOTE, handler)  # no entry: not served
    assert ApiKey.VOTE not in apis.handlers


def test_every_entry_names_a_handler_of_its_group() -> None:
    for key, entry in API_REGISTRY.items():
        assert callable(entry.handler), key.api_name
        owner = entry.handler.__qualname__.split(".")[0]
        assert owner == entry.group.__name__, (key.api_name, entry.handler.__qualname__)


def test_an_api_whose_component_is_missing_is_not_served(broker: Broker) -> None:
    cfg = KafkaConfig({"broker.id": str(broker.broker_id), "log.dirs": str(broker.tmp_path / "x")})
    apis = KafkaApis(cfg, broker.replica_manager, broker.metadata_cache, None, "c")
    needing = {k for k, e in API_REGISTRY.items() if e.needs is not None}
    assert needing and not needing & set(apis.handlers)
    assert set(API_REGISTRY) - needing == set(apis.handlers)
