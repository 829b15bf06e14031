"""The delegation token APIs through encoded requests and decoded responses: who may ask,
what each answers, and DescribeDelegationToken's filter."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any

from kafpy.common.time import MockTime
from kafpy.metadata.embedded_store import EmbeddedStore
from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.errors import Errors
from kafpy.protocol.headers import decode_response
from kafpy.security.authorizer.acl_authorizer import AclAuthorizer
from kafpy.security.delegation_token_cache import DelegationTokenCache
from kafpy.security.kafka_principal import ANONYMOUS, KafkaPrincipal
from kafpy.server.delegation_token_manager import DelegationTokenConfig, DelegationTokenManager
from kafpy.server.kafka_apis import KafkaApis
from kafpy.server.kafka_config import KafkaConfig
from tests.unit.server.fixtures import Broker
from tests.unit.server.test_kafka_apis import make_request

ALICE = KafkaPrincipal("User", "alice")
EVE = KafkaPrincipal("User", "eve")
ADMIN = KafkaPrincipal("User", "admin")
HOUR = 3600 * 1000
Call = Callable[..., Awaitable[dict[str, Any]]]


def run(broker: Broker, body: Callable[[Call], Awaitable[None]], key: str | None = "k") -> None:
    async def main() -> None:
        store = EmbeddedStore(None)
        await store.start()
        config = DelegationTokenConfig(key, 7 * 24 * HOUR, 24 * HOUR, HOUR)
        manager = DelegationTokenManager(config, DelegationTokenCache(), store, broker_id=0,
                                         time=MockTime())  # fmt: skip
        await manager.startup()
        cfg = KafkaConfig({"broker.id": "0", "log.dirs": str(broker.tmp_path / "x")})
        apis = KafkaApis(cfg, broker.replica_manager, broker.metadata_cache, None, "c",
                         authorizer=AclAuthorizer(None, [ADMIN]), token_manager=manager)  # fmt: skip

        async def call(
            api_key: int, version: int, body: dict[str, Any], principal: KafkaPrincipal = ALICE,
            protocol: str = "SASL_PLAINTEXT",
        ) -> dict[str, Any]:  # fmt: skip
            request = replace(make_request(api_key, version, body), principal=principal,
                              security_protocol=protocol)  # fmt: skip
            parts = await apis.handle(request)
            assert parts is not None
            _, decoded = decode_response(api_key, version, b"".join(bytes(p) for p in parts)[4:])
            return decoded

        try:
            await body(call)
        finally:
            await manager.shutdown()
            await store.close()

    asyncio.run(main())


def create_body(*renewers: KafkaPrincipal, max_lifetime_ms: int = -1) -> dict[str, Any]:
    return {
        "renewers": [{"principal_type": r.principal_type, "principal_name": r.name}
                     for r in renewers],
        "max_lifetime_ms": max_lifetime_ms,
    }  # fmt: skip


def owners(*principals: KafkaPrincipal) -> dict[str, Any]:
    return {"owners": [{"principal_type": p.principal_type, "principal_name": p.name}
                       for p in principals]}  # fmt: skip


def test_create_renew_expire_describe_at_every_version(broker: Broker) -> None:
    async def body(call: Call) -> None:
        for version in (0, 1, 2):
            created = await call(ApiKey.CREATE_DELEGATION_TOKEN, version, create_body(EVE))
            assert created["error_code"] == Errors.NONE
            assert (created["principal_type"], created["principal_name"]) == ("User", "alice")
            assert len(created["hmac"]) == 64 and len(created["token_id"]) == 22
            hmac = created["hmac"]
            renewed = await call(ApiKey.RENEW_DELEGATION_TOKEN, version,
                                 {"hmac": hmac, "renew_period_ms": HOUR}, principal=EVE)  # fmt: skip
            assert renewed["error_code"] == Errors.NONE
            assert renewed["expiry_timestamp_ms"] == created["issue_timestamp_ms"] + HOUR
            described = await call(ApiKey.DESCRIBE_DELEGATION_TOKEN, version, owners(ALICE))
            mine = [t for t in described["tokens"] if t["token_id"] == created["token_id"]]
            assert mine and mine[0]["hmac"] == hmac and mine[0]["renewers"] == [
                {"principal_type": "User", "principal_name": "eve"}]  # fmt: skip
            expired = await call(ApiKey.EXPIRE_DELEGATION_TOKEN, version,
                                 {"hmac": hmac, "expiry_time_period_ms": -1})  # fmt: skip
            assert expired["error_code"] == Errors.NONE
            gone = await call(ApiKey.RENEW_DELEGATION_TOKEN, version,
                              {"hmac": hmac, "renew_period_ms": HOUR})  # fmt: skip
            assert gone == {"error_code": Errors.DELEGATION_TOKEN_NOT_FOUND,
                            "expiry_timestamp_ms": -1, "throttle_time_ms": 0}  # fmt: skip

    run(broker, body)


def test_token_requests_need_an_authenticated_channel_without_a_token(broker: Broker) -> None:
    async def body(call: Call) -> None:
        by_token = replace(ALICE, token_authenticated=True)
        for principal, protocol in ((ANONYMOUS, "PLAINTEXT"), (ALICE, "PLAINTEXT"),
                                    (ANONYMOUS, "SSL"), (by_token, "SASL_SSL")):  # fmt: skip
            created = await call(ApiKey.CREATE_DELEGATION_TOKEN, 2, create_body(),
                                 principal=principal, protocol=protocol)  # fmt: skip
            assert created["error_code"] == Errors.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED
            assert created["token_id"] == "" and created["issue_timestamp_ms"] == -1
            for key, request in ((ApiKey.RENEW_DELEGATION_TOKEN, {"hmac": b"x"}),
                                 (ApiKey.EXPIRE_DELEGATION_TOKEN, {"hmac": b"x"}),
                                 (ApiKey.DESCRIBE_DELEGATION_TOKEN, {"owners": None})):  # fmt: skip
                answer = await call(key, 1, request, principal=principal, protocol=protocol)
                assert answer["error_code"] == Errors.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED
        # two-way SSL is authenticated
        ok = await call(ApiKey.CREATE_DELEGATION_TOKEN, 2, create_body(), protocol="SSL")
        assert ok["error_code"] == Errors.NONE

    run(broker, body)


def test_renewers_must_be_users(broker: Broker) -> None:
    async def body(call: Call) -> None:
        group = KafkaPrincipal("Group", "ops")
        answer = await call(ApiKey.CREATE_DELEGATION_TOKEN, 1, create_body(group))
        assert answer["error_code"] == Errors.INVALID_PRINCIPAL_TYPE

    run(broker, body)


def test_renew_and_expire_by_others_are_refused(broker: Broker) -> None:
    async def body(call: Call) -> None:
        hmac = (await call(ApiKey.CREATE_DELEGATION_TOKEN, 2, create_body()))["hmac"]
        for key, field in ((ApiKey.RENEW_DELEGATION_TOKEN, "renew_period_ms"),
                           (ApiKey.EXPIRE_DELEGATION_TOKEN, "expiry_time_period_ms")):  # fmt: skip
            answer = await call(key, 2, {"hmac": hmac, field: 1}, principal=EVE)
            assert answer["error_code"] == Errors.DELEGATION_TOKEN_OWNER_MISMATCH
            forged = await call(key, 2, {"hmac": bytes(64), field: 1})
            assert forged["error_code"] == Errors.DELEGATION_TOKEN_NOT_FOUND

    run(broker, body)


def test_describe_shows_own_tokens_and_those_described_by_acls(broker: Broker) -> None:
    async def body(call: Call) -> None:
        alices = (await call(ApiKey.CREATE_DELEGATION_TOKEN, 2, create_body()))["token_id"]
        eves = (await call(ApiKey.CREATE_DELEGATION_TOKEN, 2, create_body(),
                           principal=EVE))["token_id"]  # fmt: skip

        async def seen(principal: KafkaPrincipal, request: dict[str, Any]) -> set[str]:
            answer = await call(ApiKey.DESCRIBE_DELEGATION_TOKEN, 2, request, principal=principal)
            assert answer["error_code"] == Errors.NONE
            return {t["token_id"] for t in answer["tokens"]}

        assert await seen(ALICE, {"owners": None}) == {alices}
        assert await seen(EVE, {"owners": None}) == {eves}
        assert await seen(ADMIN, {"owners": None}) == {alices, eves}  # a super user
        assert await seen(ADMIN, owners(EVE)) == {eves}
        assert await seen(ALICE, owners(EVE)) == set()
        assert await seen(ADMIN, owners()) == set()  # an empty list asks for nothing

    run(broker, body)


def test_without_a_master_key_the_apis_answer_auth_disabled(broker: Broker) -> None:
    async def body(call: Call) -> None:
        created = await call(ApiKey.CREATE_DELEGATION_TOKEN, 2, create_body())
        assert created["error_code"] == Errors.DELEGATION_TOKEN_AUTH_DISABLED
        for key, request in ((ApiKey.RENEW_DELEGATION_TOKEN, {"hmac": b"x"}),
                             (ApiKey.EXPIRE_DELEGATION_TOKEN, {"hmac": b"x"}),
                             (ApiKey.DESCRIBE_DELEGATION_TOKEN, {"owners": None})):  # fmt: skip
            answer = await call(key, 2, request)
            assert answer["error_code"] == Errors.DELEGATION_TOKEN_AUTH_DISABLED

    run(broker, body, key=None)
