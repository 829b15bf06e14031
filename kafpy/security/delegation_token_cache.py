"""DelegationTokenCache: the delegation tokens a broker knows and the SCRAM credentials a
client authenticates with one (Kafka's TokenInformation, DelegationToken and
DelegationTokenCache, KIP-48).

A token's id is the SCRAM user name and the base64 of its HMAC the password; the cache holds,
per token, its information, its HMAC and a SCRAM credential per mechanism derived from that
password. The broker's DelegationTokenManager fills it from the metadata store; the SCRAM
server reads it when a client sends the `tokenauth=true` extension.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from dataclasses import dataclass, field

from kafpy.security.credential_cache import CredentialCache
from kafpy.security.kafka_principal import KafkaPrincipal
from kafpy.security.scram import ScramCredential, ScramMechanism


@dataclass(frozen=True)
class TokenInformation:
    """A token's id, owner, renewers and timestamps (ms): issued, expires (renewable up
    to the max), max (the end of its life)."""

    token_id: str
    owner: KafkaPrincipal
    renewers: tuple[KafkaPrincipal, ...]
    issue_timestamp: int
    max_timestamp: int
    expiry_timestamp: int

    def owner_or_renewer(self, principal: KafkaPrincipal) -> bool:
        return principal == self.owner or principal in self.renewers

    def renewers_as_string(self) -> list[str]:
        return [str(r) for r in self.renewers]


@dataclass(frozen=True)
class DelegationToken:
    """A token's information and its HMAC."""

    token_info: TokenInformation
    hmac: bytes = field(repr=False)

    @property
    def hmac_as_base64_string(self) -> str:
        return base64.b64encode(self.hmac).decode()


class DelegationTokenCache:
    """The tokens of this broker, by id and by HMAC, with their SCRAM credentials."""

    def __init__(self) -> None:
        self._tokens: dict[str, TokenInformation] = {}
        self._hmacs: dict[str, str] = {}  # token id -> base64 HMAC
        self._token_ids: dict[str, str] = {}  # base64 HMAC -> token id
        self._credentials = CredentialCache()

    def update_cache(
        self, token: DelegationToken, credentials: Mapping[str, ScramCredential]
    ) -> None:
        """Add or replace a token and its credential per SCRAM mechanism name."""
        token_id = token.token_info.token_id
        self.remove_cache(token_id)
        hmac = token.hmac_as_base64_string
        self._tokens[token_id] = token.token_info
        self._hmacs[token_id] = hmac
        self._token_ids[hmac] = token_id
        for mechanism, credential in credentials.items():
            self._credentials.put(mechanism, token_id, credential)

    def remove_cache(self, token_id: str) -> None:
        self._tokens.pop(token_id, None)
        hmac = self._hmacs.pop(token_id, None)
        if hmac is not None:
            self._token_ids.pop(hmac, None)
        for mechanism in ScramMechanism.names():
            self._credentials.put(mechanism, token_id, None)

    def token(self, token_id: str) -> TokenInformation | None:
        return self._tokens.get(token_id)

    def token_for_hmac(self, base64_hmac: str) -> TokenInformation | None:
        token_id = self._token_ids.get(base64_hmac)
        return None if token_id is None else self._tokens.get(token_id)

    def tokens(self) -> list[TokenInformation]:
        return list(self._tokens.values())

    def credential(self, mechanism: str, token_id: str) -> ScramCredential | None:
        return self._credentials.get(mechanism, token_id)

    def owner(self, token_id: str) -> KafkaPrincipal | None:
        info = self._tokens.get(token_id)
        return None if info is None else info.owner
