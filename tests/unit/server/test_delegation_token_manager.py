"""DelegationTokenManager on the embedded store: create, renew, expire, describe, the HMAC,
the stored JSON, propagation to a second broker, the expiry scan and corrupt nodes."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
from collections.abc import Awaitable, Callable

import pytest

from kafpy.common.time import MockTime
from kafpy.metadata.delegation_token_znodes import DelegationTokenInfoZNode
from kafpy.metadata.embedded_store import EmbeddedStore
from kafpy.protocol.errors import Errors
from kafpy.security.delegation_token_cache import DelegationTokenCache
from kafpy.security.kafka_principal import KafkaPrincipal
from kafpy.security.scram import ScramFormatter, ScramMechanism
from kafpy.server.delegation_token_manager import (
    DelegationTokenConfig,
    DelegationTokenManager,
    create_hmac,
    generate_token_id,
)
from kafpy.server.kafka_config import KafkaConfig

ALICE = KafkaPrincipal("User", "alice")
BOB = KafkaPrincipal("User", "bob")
EVE = KafkaPrincipal("User", "eve")
HOUR = 3600 * 1000
CHANGES = "/delegation_token/token_changes/token_change_"
CONFIG = DelegationTokenConfig("secret", 7 * 24 * HOUR, 24 * HOUR, HOUR)


def run(body: Callable[[DelegationTokenManager, DelegationTokenManager, MockTime], Awaitable[None]],
        config: DelegationTokenConfig = CONFIG) -> None:  # fmt: skip
    """Run `body` with the managers of two brokers (two sessions of one store)."""

    async def main() -> None:
        first = EmbeddedStore(None)
        second = first.new_session()
        await first.start()
        await second.start()
        time = MockTime()
        managers = [
            DelegationTokenManager(config, DelegationTokenCache(), s, broker_id=i, time=time)
            for i, s in enumerate((first, second))
        ]
        try:
            for m in managers:
                await m.startup()
            await body(managers[0], managers[1], time)
        finally:
            for m in managers:
                await m.shutdown()
            await second.close()
            await first.close()

    asyncio.run(main())


async def eventually(check: Callable[[], bool]) -> None:
    for _ in range(200):
        if check():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("condition not met")


def test_config_defaults_come_from_kafka_config() -> None:
    config = DelegationTokenConfig.from_config(KafkaConfig({"log.dirs": "/tmp/x"}))
    assert config == DelegationTokenConfig(None, 7 * 24 * HOUR, 24 * HOUR, HOUR)
    assert not config.token_auth_enabled
    assert not DelegationTokenConfig("", 1, 1, 1).token_auth_enabled


def test_hmac_is_hmac_sha512_of_the_token_id_with_the_master_key() -> None:
    expected = hmac.new(b"secret", b"token-1", hashlib.sha512).digest()
    assert create_hmac("token-1", "secret") == expected
    assert len(expected) == 64
    token_id = generate_token_id()
    assert len(token_id) == 22 and "=" not in token_id
    assert len(base64.urlsafe_b64decode(token_id + "==")) == 16


def test_create_stores_kafkas_json_and_fills_the_cache() -> None:
    async def body(a: DelegationTokenManager, _: DelegationTokenManager, time: MockTime) -> None:
        now = time.milliseconds()
        result = await a.create_token(ALICE, [BOB], 2 * HOUR)
        assert result.error == Errors.NONE and result.owner == ALICE
        assert (result.issue_timestamp, result.expiry_timestamp, result.max_timestamp) == (
            now, now + 2 * HOUR, now + 2 * HOUR)  # fmt: skip
        assert result.hmac == create_hmac(result.token_id, "secret")
        data, _ = await a.store.get(DelegationTokenInfoZNode.path(result.token_id))
        end, tid = now + 2 * HOUR, result.token_id
        assert (
            data
            == (
                f'{{"issueTimestamp":{now},"renewers":["User%3Abob"],"maxTimestamp":{end},'
                f'"version":1,"tokenId":"{tid}","owner":"User%3Aalice","expiryTimestamp":{end}}}'
            ).encode()
        )
        info = a.cache.token(result.token_id)
        assert info is not None and info.owner == ALICE and info.renewers == (BOB,)
        # the SCRAM credential's password is the base64 HMAC, at 4096 iterations
        password = base64.b64encode(result.hmac).decode()
        for mechanism in ScramMechanism:
            credential = a.cache.credential(mechanism.mechanism_name, result.token_id)
            assert credential is not None and credential.iterations == 4096
            again = ScramFormatter(mechanism.hash_name).credential(password, 4096, credential.salt)
            assert again == credential

    run(body)


def test_lifetimes_are_capped_by_the_configured_maximum() -> None:
    async def body(a: DelegationTokenManager, _: DelegationTokenManager, time: MockTime) -> None:
        now = time.milliseconds()
        default = await a.create_token(ALICE, [], -1)
        assert default.max_timestamp == now + 7 * 24 * HOUR
        assert default.expiry_timestamp == now + 24 * HOUR
        capped = await a.create_token(ALICE, [], 30 * 24 * HOUR)
        assert capped.max_timestamp == now + 7 * 24 * HOUR

    run(body)


def test_a_token_reaches_the_other_broker_and_its_removal_too() -> None:
    async def body(a: DelegationTokenManager, b: DelegationTokenManager, _: MockTime) -> None:
        result = await a.create_token(ALICE, [], -1)
        await eventually(lambda: b.cache.token(result.token_id) is not None)
        assert b.cache.credential("SCRAM-SHA-256", result.token_id) is not None
        error, _ = await a.expire_token(ALICE, result.hmac, -1)
        assert error == Errors.NONE
        await eventually(lambda: b.cache.token(result.token_id) is None)
        assert b.cache.credential("SCRAM-SHA-256", result.token_id) is None

    run(body)


def test_renew_by_owner_or_renewer_only_and_not_past_the_maximum() -> None:
    async def body(a: DelegationTokenManager, _: DelegationTokenManager, time: MockTime) -> None:
        token = await a.create_token(ALICE, [BOB], 48 * HOUR)
        assert await a.renew_token(EVE, token.hmac, HOUR) == (
            Errors.DELEGATION_TOKEN_OWNER_MISMATCH, -1)  # fmt: skip
        assert await a.renew_token(ALICE, b"forged" * 10, HOUR) == (
            Errors.DELEGATION_TOKEN_NOT_FOUND, -1)  # fmt: skip
        time.sleep(HOUR)
        now = time.milliseconds()
        assert await a.renew_token(BOB, token.hmac, 2 * HOUR) == (Errors.NONE, now + 2 * HOUR)
        assert await a.renew_token(ALICE, token.hmac, -1) == (Errors.NONE, now + 24 * HOUR)
        assert await a.renew_token(ALICE, token.hmac, 100 * HOUR) == (
            Errors.NONE, token.max_timestamp)  # fmt: skip
        stored = DelegationTokenInfoZNode.decode(
            (await a.store.get(DelegationTokenInfoZNode.path(token.token_id)))[0]
        )
        assert stored is not None and stored.expiry_timestamp == token.max_timestamp
        time.sleep(49 * HOUR)
        assert await a.renew_token(ALICE, token.hmac, HOUR) == (
            Errors.DELEGATION_TOKEN_EXPIRED, -1)  # fmt: skip

    run(body)


def test_expire_sets_a_sooner_expiry_or_removes_now() -> None:
    async def body(a: DelegationTokenManager, _: DelegationTokenManager, time: MockTime) -> None:
        token = await a.create_token(ALICE, [BOB], -1)
        now = time.milliseconds()
        assert await a.expire_token(EVE, token.hmac, 0) == (
            Errors.DELEGATION_TOKEN_OWNER_MISMATCH, -1)  # fmt: skip
        assert await a.expire_token(BOB, token.hmac, 10) == (Errors.NONE, now + 10)
        time.sleep(11)
        assert await a.expire_token(ALICE, token.hmac, 10) == (
            Errors.DELEGATION_TOKEN_EXPIRED, -1)  # fmt: skip
        assert await a.expire_token(ALICE, token.hmac, -1) == (Errors.NONE, now + 11)
        assert a.cache.token(token.token_id) is None
        assert await a.store.exists(DelegationTokenInfoZNode.path(token.token_id)) is None
        assert await a.expire_token(ALICE, token.hmac, -1) == (
            Errors.DELEGATION_TOKEN_NOT_FOUND, -1)  # fmt: skip

    run(body)


def test_get_tokens_filters_and_derives_the_hmac() -> None:
    async def body(a: DelegationTokenManager, _: DelegationTokenManager, __: MockTime) -> None:
        mine = await a.create_token(ALICE, [], -1)
        await a.create_token(BOB, [], -1)
        found = a.get_tokens(lambda t: t.owner == ALICE)
        assert [(t.token_info.token_id, t.hmac) for t in found] == [(mine.token_id, mine.hmac)]

    run(body)


def test_expiry_scan_removes_expired_tokens_everywhere() -> None:
    async def body(a: DelegationTokenManager, b: DelegationTokenManager, time: MockTime) -> None:
        short = await a.create_token(ALICE, [], HOUR)
        long = await a.create_token(ALICE, [], -1)
        await eventually(lambda: len(b.cache.tokens()) == 2)
        await a.expire_tokens()
        assert len(a.cache.tokens()) == 2
        time.sleep(HOUR + 1)
        await a.expire_tokens()
        assert [t.token_id for t in a.cache.tokens()] == [long.token_id]
        assert await a.store.exists(DelegationTokenInfoZNode.path(short.token_id)) is None
        await eventually(lambda: [t.token_id for t in b.cache.tokens()] == [long.token_id])

    run(body)


def test_the_expiry_task_runs_only_on_the_controller() -> None:
    async def main() -> None:
        store = EmbeddedStore(None)
        await store.start()
        time = MockTime()
        controller = False
        config = DelegationTokenConfig("secret", 10, 10, 1)
        manager = DelegationTokenManager(config, DelegationTokenCache(), store, broker_id=0,
                                         time=time, is_controller=lambda: controller)  # fmt: skip
        await manager.startup()
        try:
            await manager.create_token(ALICE, [], -1)
            time.sleep(11)
            await asyncio.sleep(0.05)
            assert len(manager.cache.tokens()) == 1  # not the controller: kept
            controller = True
            await eventually(lambda: not manager.cache.tokens())
        finally:
            await manager.shutdown()
            await store.close()

    asyncio.run(main())


def test_corrupt_token_nodes_are_logged_and_skipped(caplog: pytest.LogCaptureFixture) -> None:
    async def body(a: DelegationTokenManager, b: DelegationTokenManager, _: MockTime) -> None:
        token = await a.create_token(ALICE, [], -1)
        await eventually(lambda: b.cache.token(token.token_id) is not None)
        path = DelegationTokenInfoZNode.path(token.token_id)
        good, _stat = await a.store.get(path)
        corrupt_nodes = (
            b"{not json",
            json.dumps({"version": 1}).encode(),
            json.dumps({"version": 9, "tokenId": "x"}).encode(),
            good.replace(b"User%3Aalice", b"alice"),  # a principal without its type
        )
        for corrupt in corrupt_nodes:
            for data, present in ((corrupt, False), (good, True)):
                await a.store.set(path, data)
                await a.store.create(CHANGES, token.token_id.encode(), sequential=True)
                await eventually(lambda p=present: (b.cache.token(token.token_id) is not None) == p)
        # logged by both brokers
        assert caplog.text.count("Ignoring delegation token") == 2 * len(corrupt_nodes)
        # the broker still serves: the next token arrives
        other = await a.create_token(BOB, [], -1)
        await eventually(lambda: b.cache.token(other.token_id) is not None)

    run(body)


def test_a_broker_loads_the_stored_tokens_at_start_and_skips_corrupt_ones() -> None:
    async def main() -> None:
        store = EmbeddedStore(None)
        await store.start()
        writer = DelegationTokenManager(CONFIG, DelegationTokenCache(), store, broker_id=0)
        await writer.startup()
        token = await writer.create_token(ALICE, [], -1)
        await store.create("/delegation_token/tokens/broken", b"[]")
        await writer.shutdown()
        reader = DelegationTokenManager(CONFIG, DelegationTokenCache(), store, broker_id=1)
        await reader.startup()
        try:
            assert [t.token_id for t in reader.cache.tokens()] == [token.token_id]
            assert reader.get_tokens(lambda _: True)[0].hmac == token.hmac
        finally:
            await reader.shutdown()
            await store.close()

    asyncio.run(main())


def test_without_a_master_key_every_operation_is_disabled() -> None:
    async def body(a: DelegationTokenManager, _: DelegationTokenManager, __: MockTime) -> None:
        assert (await a.create_token(ALICE, [], -1)).error == Errors.DELEGATION_TOKEN_AUTH_DISABLED
        assert await a.renew_token(ALICE, b"x", 1) == (Errors.DELEGATION_TOKEN_AUTH_DISABLED, -1)
        assert await a.expire_token(ALICE, b"x", 1) == (Errors.DELEGATION_TOKEN_AUTH_DISABLED, -1)
        assert await a.store.exists("/delegation_token") is None

    run(body, DelegationTokenConfig(None, 1, 1, 1))
