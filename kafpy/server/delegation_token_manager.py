"""DelegationTokenManager: creates, renews, expires and describes delegation tokens (KIP-48),
as Kafka 2.8's class of that name.

A token is stored in `/delegation_token/tokens/<tokenId>` (owner, renewers, timestamps);
each change is announced with a `/delegation_token/token_changes/token_change_<n>`
notification holding the token id, which every broker follows to keep its
DelegationTokenCache current. The HMAC (HMAC-SHA512 of the token id with
`delegation.token.master.key`) is the token's password: it is never stored, every broker
derives it, and with it the token's SCRAM credentials (4096 iterations, both mechanisms).

Without a master key the feature is off: no paths are created and every operation answers
DELEGATION_TOKEN_AUTH_DISABLED. The controller removes expired tokens every
`delegation.token.expiry.check.interval.ms` (Kafka's `delete-expired-tokens` task).
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import logging
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from kafpy.common.logger import PrefixAdapter
from kafpy.common.time import SYSTEM_TIME, Time
from kafpy.metadata.delegation_token_znodes import (
    DelegationTokenChangeNotificationSequenceZNode,
    DelegationTokenChangeNotificationZNode,
    DelegationTokenData,
    DelegationTokenInfoZNode,
    DelegationTokensZNode,
)
from kafpy.metadata.errors import NoNodeError
from kafpy.metadata.store import MetadataStore
from kafpy.metadata.zk_data import ZkDataError
from kafpy.metadata.zk_node_change_notification_listener import ZkNodeChangeNotificationListener
from kafpy.protocol.errors import Errors
from kafpy.protocol.messages.delegation_token import ERROR_TIMESTAMP
from kafpy.security.delegation_token_cache import (
    DelegationToken,
    DelegationTokenCache,
    TokenInformation,
)
from kafpy.security.kafka_principal import KafkaPrincipal
from kafpy.security.scram import ScramCredential, ScramFormatter, ScramMechanism
from kafpy.server.kafka_config import KafkaConfig

EXPIRY_TASK_NAME = "delete-expired-tokens"


@dataclass(frozen=True)
class DelegationTokenConfig:
    """The `delegation.token.*` keys (defaults in KafkaConfig's definition)."""

    master_key: str | None
    max_lifetime_ms: int
    expiry_time_ms: int
    expiry_check_interval_ms: int

    @property
    def token_auth_enabled(self) -> bool:
        return bool(self.master_key)

    @classmethod
    def from_config(cls, config: KafkaConfig) -> DelegationTokenConfig:
        return cls(
            config.get("delegation.token.master.key"),
            config.get("delegation.token.max.lifetime.ms"),
            config.get("delegation.token.expiry.time.ms"),
            config.get("delegation.token.expiry.check.interval.ms"),
        )


def create_hmac(token_id: str, master_key: str) -> bytes:
    """Kafka's DelegationTokenManager.createHmac: HMAC-SHA512 of the id with the key."""
    return hmac.new(master_key.encode("utf-8"), token_id.encode("utf-8"), hashlib.sha512).digest()


def generate_token_id() -> str:
    """A random UUID as unpadded URL-safe base64 (Kafka's CoreUtils.generateUuidAsBase64)."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


def scram_credentials(token: DelegationToken) -> dict[str, ScramCredential]:
    """The token's SCRAM credential per mechanism: its base64 HMAC is the password."""
    password = token.hmac_as_base64_string
    return {
        m.mechanism_name: ScramFormatter(m.hash_name).credential(password, m.min_iterations)
        for m in ScramMechanism
    }


def to_data(info: TokenInformation) -> DelegationTokenData:
    return DelegationTokenData(
        info.token_id, str(info.owner), tuple(info.renewers_as_string()),
        info.issue_timestamp, info.max_timestamp, info.expiry_timestamp,
    )  # fmt: skip


def from_data(data: DelegationTokenData) -> TokenInformation:
    """ValueError when a stored principal is not `Type:name`."""
    return TokenInformation(
        data.token_id, KafkaPrincipal.from_string(data.owner),
        tuple(KafkaPrincipal.from_string(r) for r in data.renewers),
        data.issue_timestamp, data.max_timestamp, data.expiry_timestamp,
    )  # fmt: skip


@dataclass(frozen=True)
class CreateTokenResult:
    """What CreateDelegationToken answers."""

    owner: KafkaPrincipal
    issue_timestamp: int
    expiry_timestamp: int
    max_timestamp: int
    token_id: str
    hmac: bytes
    error: int


class DelegationTokenManager:
    """The broker's delegation tokens: the operations of the token APIs, the cache every
    broker keeps from the metadata store, and (on the controller) the expiry scan.

    `is_controller()` says whether this broker is the controller now; the expiry task runs
    on every broker and scans only while it is.
    """

    def __init__(
        self,
        config: DelegationTokenConfig,
        cache: DelegationTokenCache,
        store: MetadataStore,
        *,
        broker_id: int,
        time: Time = SYSTEM_TIME,
        is_controller: Callable[[], bool] = lambda: False,
    ) -> None:
        self.config = config
        self.cache = cache
        self.store = store
        self.time = time
        self.is_controller = is_controller
        self._lock = asyncio.Lock()
        self._listener: ZkNodeChangeNotificationListener | None = None
        self._expiry_task: asyncio.Task[None] | None = None
        self.log = PrefixAdapter(
            logging.getLogger("kafpy.server.DelegationTokenManager"),
            f"[Token Manager on Broker {broker_id}]: ",
        )

    @property
    def enabled(self) -> bool:
        return self.config.token_auth_enabled

    async def startup(self) -> None:
        if not self.enabled:
            return
        await self.store.ensure_path(DelegationTokensZNode.path)
        # follow changes first (from the newest notification on), then load: nothing is missed
        self._listener = ZkNodeChangeNotificationListener(
            self.store, DelegationTokenChangeNotificationZNode.path,
            DelegationTokenChangeNotificationSequenceZNode.SEQUENCE_NUMBER_PREFIX,
            self._process_notification, time=self.time,
        )  # fmt: skip
        await self._listener.start(process_existing=False)
        for token_id in await self.store.get_children_or_empty(DelegationTokensZNode.path):
            await self._refresh(token_id)
        self._expiry_task = asyncio.get_running_loop().create_task(
            self._expiry_loop(), name=EXPIRY_TASK_NAME
        )

    async def shutdown(self) -> None:
        if self._expiry_task is not None:
            self._expiry_task.cancel()
            await asyncio.gather(self._expiry_task, return_exceptions=True)
            self._expiry_task = None
        if self._listener is not None:
            await self._listener.close()
            self._listener = None

    # -- the operations -------------------------------------------------------------------

    def _hmac(self, token_id: str) -> bytes:
        assert self.config.master_key
        return create_hmac(token_id, self.config.master_key)

    async def create_token(
        self, owner: KafkaPrincipal, renewers: Sequence[KafkaPrincipal], max_lifetime_ms: int
    ) -> CreateTokenResult:
        """A new token of `owner`; max_lifetime_ms <= 0 takes the configured maximum."""
        if not self.enabled:
            return CreateTokenResult(owner, ERROR_TIMESTAMP, ERROR_TIMESTAMP, ERROR_TIMESTAMP,
                                     "", b"", Errors.DELEGATION_TOKEN_AUTH_DISABLED)  # fmt: skip
        async with self._lock:
            token_id = generate_token_id()
            issue = self.time.milliseconds()
            lifetime = self.config.max_lifetime_ms
            if max_lifetime_ms > 0:
                lifetime = min(max_lifetime_ms, lifetime)
            max_ts = issue + lifetime
            expiry = min(max_ts, issue + self.config.expiry_time_ms)
            info = TokenInformation(token_id, owner, tuple(renewers), issue, max_ts, expiry)
            token = DelegationToken(info, self._hmac(token_id))
            await self._update_token(token)
            self.log.info("Created a delegation token: %s for owner: %s", token_id, owner)
            return CreateTokenResult(
                owner, issue, expiry, max_ts, token_id, token.hmac, Errors.NONE
            )

    def _token_to_change(
        self, principal: KafkaPrincipal, hmac_bytes: bytes
    ) -> tuple[DelegationToken, int] | int:
        """The token `hmac_bytes` names and the time now, when `principal` owns or may renew
        it; else the error code to answer."""
        token = self._token_for_hmac(hmac_bytes)
        if token is None:
            return Errors.DELEGATION_TOKEN_NOT_FOUND
        if not token.token_info.owner_or_renewer(principal):
            return Errors.DELEGATION_TOKEN_OWNER_MISMATCH
        return token, self.time.milliseconds()

    async def renew_token(
        self, principal: KafkaPrincipal, hmac_bytes: bytes, renew_period_ms: int
    ) -> tuple[int, int]:
        """(error, new expiry timestamp); a negative period renews by the configured expiry."""
        if not self.enabled:
            return Errors.DELEGATION_TOKEN_AUTH_DISABLED, ERROR_TIMESTAMP
        async with self._lock:
            found = self._token_to_change(principal, hmac_bytes)
            if isinstance(found, int):
                return found, ERROR_TIMESTAMP
            token, now = found
            info = token.token_info
            if info.max_timestamp < now or info.expiry_timestamp < now:
                return Errors.DELEGATION_TOKEN_EXPIRED, ERROR_TIMESTAMP
            period = self.config.expiry_time_ms if renew_period_ms < 0 else renew_period_ms
            expiry = min(info.max_timestamp, now + period)
            await self._update_token(
                replace(token, token_info=replace(info, expiry_timestamp=expiry))
            )
            self.log.info("Delegation token renewed for token: %s for owner: %s",
                          info.token_id, info.owner)  # fmt: skip
            return Errors.NONE, expiry

    async def expire_token(
        self, principal: KafkaPrincipal, hmac_bytes: bytes, expiry_period_ms: int
    ) -> tuple[int, int]:
        """(error, new expiry timestamp); a negative period removes the token now."""
        if not self.enabled:
            return Errors.DELEGATION_TOKEN_AUTH_DISABLED, ERROR_TIMESTAMP
        async with self._lock:
            found = self._token_to_change(principal, hmac_bytes)
            if isinstance(found, int):
                return found, ERROR_TIMESTAMP
            token, now = found
            info = token.token_info
            if expiry_period_ms < 0:
                await self._remove_token(info.token_id)
                self.log.info(
                    "Token expired for token: %s for owner: %s", info.token_id, info.owner
                )
                return Errors.NONE, now
            if info.max_timestamp < now or info.expiry_timestamp < now:
                return Errors.DELEGATION_TOKEN_EXPIRED, ERROR_TIMESTAMP
            expiry = min(info.max_timestamp, now + expiry_period_ms)
            await self._update_token(
                replace(token, token_info=replace(info, expiry_timestamp=expiry))
            )
            self.log.info("Updated expiry time for token: %s for owner: %s",
                          info.token_id, info.owner)  # fmt: skip
            return Errors.NONE, expiry

    def get_tokens(self, eligible: Callable[[TokenInformation], bool]) -> list[DelegationToken]:
        """The tokens `eligible` accepts, with their HMACs."""
        return [
            DelegationToken(info, self._hmac(info.token_id))
            for info in self.cache.tokens()
            if eligible(info)
        ]

    async def expire_tokens(self) -> None:
        """Remove every token past its expiry or its maximum (the controller's scan)."""
        async with self._lock:
            for info in self.cache.tokens():
                now = self.time.milliseconds()
                if info.max_timestamp < now or info.expiry_timestamp < now:
                    self.log.info("Delegation token expired for token: %s for owner: %s",
                                  info.token_id, info.owner)  # fmt: skip
                    await self._remove_token(info.token_id)

    # -- store and cache ------------------------------------------------------------------

    def _token_for_hmac(self, hmac_bytes: bytes) -> DelegationToken | None:
        info = self.cache.token_for_hmac(base64.b64encode(hmac_bytes).decode())
        return None if info is None else DelegationToken(info, bytes(hmac_bytes))

    async def _update_token(self, token: DelegationToken) -> None:
        info = token.token_info
        path = DelegationTokenInfoZNode.path(info.token_id)
        data = DelegationTokenInfoZNode.encode(to_data(info))
        try:
            await self.store.set(path, data)
        except NoNodeError:
            await self.store.create(path, data, make_parents=True)
        self.cache.update_cache(token, scram_credentials(token))
        await self._notify(info.token_id)

    async def _remove_token(self, token_id: str) -> None:
        try:
            await self.store.delete(DelegationTokenInfoZNode.path(token_id))
        except NoNodeError:
            pass
        self.cache.remove_cache(token_id)
        await self._notify(token_id)

    async def _notify(self, token_id: str) -> None:
        await self.store.create(
            DelegationTokenChangeNotificationSequenceZNode.create_path,
            DelegationTokenChangeNotificationSequenceZNode.encode(token_id),
            sequential=True, make_parents=True,
        )  # fmt: skip

    async def _process_notification(self, path: str, data: bytes) -> None:
        await self._refresh(DelegationTokenChangeNotificationSequenceZNode.decode(data))

    async def _refresh(self, token_id: str) -> None:
        """Load one token from the store into the cache (or drop it: removed or corrupt)."""
        path = DelegationTokenInfoZNode.path(token_id)
        try:
            stored = DelegationTokenInfoZNode.decode(await self.store.get_data_or_none(path), path)
            info = from_data(stored) if stored is not None else None
        except ZkDataError as e:
            self.log.error("Ignoring delegation token %s: %s", token_id, e)
            info = None
        except ValueError as e:  # a stored principal that is not Type:name
            self.log.error("Ignoring delegation token %s stored in %s: %s", token_id, path, e)
            info = None
        if info is None:
            self.cache.remove_cache(token_id)
            return
        token = DelegationToken(info, self._hmac(info.token_id))
        self.cache.update_cache(token, scram_credentials(token))

    async def _expiry_loop(self) -> None:
        interval_s = self.config.expiry_check_interval_ms / 1000
        while True:
            if self.is_controller():
                try:
                    await self.expire_tokens()
                except Exception:
                    self.log.exception("Error removing expired delegation tokens")
            await asyncio.sleep(interval_s)
