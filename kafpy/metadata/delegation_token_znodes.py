"""The delegation token nodes of Kafka's ZooKeeper layout (KIP-48), kept beside
`zk_data` (Kafka's `DelegationToken*ZNode` classes of `kafka.zk.ZkData`):

```
/delegation_token/tokens/<tokenId>           {"issueTimestamp":..,"renewers":["User%3Abob"],
                                              "maxTimestamp":..,"version":1,"tokenId":"..",
                                              "owner":"User%3Aalice","expiryTimestamp":..}
/delegation_token/token_changes/token_change_<n>   the token id, after every change
```

Principals are stored as `Type:name` sanitized (URL-encoded, as Kafka's Sanitizer). The
HMAC is never stored: every broker derives it from the token id and the master key.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kafpy.common.sanitizer import desanitize, sanitize
from kafpy.metadata.zk_data import ZkDataError, decode_json_object, encode_json


@dataclass(frozen=True)
class DelegationTokenData:
    """A token as stored: principals as `Type:name` text, timestamps in milliseconds."""

    token_id: str
    owner: str
    renewers: tuple[str, ...]
    issue_timestamp: int
    max_timestamp: int
    expiry_timestamp: int


class DelegationTokenAuthZNode:
    """The root of the delegation token nodes."""

    path = "/delegation_token"


class DelegationTokensZNode:
    """The parent of the token nodes."""

    path = f"{DelegationTokenAuthZNode.path}/tokens"


class DelegationTokenInfoZNode:
    """One token: Kafka's DelegationTokenManager.toJsonCompatibleMap, version 1, keys in
    the order Kafka's Scala map writes them."""

    VERSION = 1

    @staticmethod
    def path(token_id: str) -> str:
        return f"{DelegationTokensZNode.path}/{token_id}"

    @staticmethod
    def encode(token: DelegationTokenData) -> bytes:
        return encode_json({
            "issueTimestamp": token.issue_timestamp,
            "renewers": [sanitize(r) for r in token.renewers],
            "maxTimestamp": token.max_timestamp,
            "version": DelegationTokenInfoZNode.VERSION,
            "tokenId": token.token_id,
            "owner": sanitize(token.owner),
            "expiryTimestamp": token.expiry_timestamp,
        })  # fmt: skip

    @staticmethod
    def decode(
        data: bytes | None, path: str = "delegation token node"
    ) -> DelegationTokenData | None:
        """The token, None for an empty node; ZkDataError naming the node and what is wrong."""
        obj = decode_json_object(data, path)
        if obj is None:
            return None
        if obj.get("version") != DelegationTokenInfoZNode.VERSION:
            raise ZkDataError(f"{path} is not version 1 delegation token JSON: {data!r}")
        try:
            renewers = obj["renewers"]
            if not isinstance(renewers, list):
                raise TypeError("renewers is not a list")
            return DelegationTokenData(
                _string(obj["tokenId"], "tokenId"),
                desanitize(_string(obj["owner"], "owner")),
                tuple(desanitize(_string(r, "a renewer")) for r in renewers),
                _long(obj["issueTimestamp"], "issueTimestamp"),
                _long(obj["maxTimestamp"], "maxTimestamp"),
                _long(obj["expiryTimestamp"], "expiryTimestamp"),
            )
        except KeyError as e:
            raise ZkDataError(f"{path} has no {e}: {data!r}") from e
        except TypeError as e:
            raise ZkDataError(f"{path}: {e}: {data!r}") from e


def _string(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{what} is not a string")
    return value


def _long(value: Any, what: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{what} is not a number")
    return value


class DelegationTokenChangeNotificationZNode:
    """The parent of the token change notifications every broker follows."""

    path = f"{DelegationTokenAuthZNode.path}/token_changes"


class DelegationTokenChangeNotificationSequenceZNode:
    """A token change notification: the changed (or removed) token's id (sequential)."""

    SEQUENCE_NUMBER_PREFIX = "token_change_"
    create_path = f"{DelegationTokenChangeNotificationZNode.path}/{SEQUENCE_NUMBER_PREFIX}"

    @staticmethod
    def encode(token_id: str) -> bytes:
        return token_id.encode("utf-8")

    @staticmethod
    def decode(data: bytes) -> str:
        return data.decode("utf-8", errors="replace")
