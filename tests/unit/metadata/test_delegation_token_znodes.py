"""The delegation token nodes: Kafka's JSON, read back, and corrupt data named."""

from __future__ import annotations

import pytest

from kafpy.metadata.delegation_token_znodes import (
    DelegationTokenChangeNotificationSequenceZNode,
    DelegationTokenData,
    DelegationTokenInfoZNode,
)
from kafpy.metadata.zk_data import ZkDataError

TOKEN = DelegationTokenData("tok", "User:alice@EXAMPLE", ("User:bob", "User:c d"), 1, 3, 2)
JSON = (
    b'{"issueTimestamp":1,"renewers":["User%3Abob","User%3Ac%20d"],"maxTimestamp":3,'
    b'"version":1,"tokenId":"tok","owner":"User%3Aalice%40EXAMPLE","expiryTimestamp":2}'
)


def test_paths() -> None:
    assert DelegationTokenInfoZNode.path("tok") == "/delegation_token/tokens/tok"
    create = DelegationTokenChangeNotificationSequenceZNode.create_path
    assert create == "/delegation_token/token_changes/token_change_"


def test_round_trip_is_kafkas_json() -> None:
    assert DelegationTokenInfoZNode.encode(TOKEN) == JSON
    assert DelegationTokenInfoZNode.decode(JSON) == TOKEN
    assert DelegationTokenInfoZNode.decode(b"") is None


@pytest.mark.parametrize(
    "data,message",
    [
        (b"{", "not valid JSON"),
        (b"[]", "not a JSON object"),
        (b'{"version":2}', "not version 1"),
        (JSON.replace(b'"tokenId":"tok",', b""), "has no 'tokenId'"),
        (JSON.replace(b'"issueTimestamp":1', b'"issueTimestamp":"1"'), "issueTimestamp is not"),
        (JSON.replace(b'["User%3Abob","User%3Ac%20d"]', b'"x"'), "renewers is not a list"),
    ],
)
def test_corrupt_nodes_are_named(data: bytes, message: str) -> None:
    with pytest.raises(ZkDataError, match=message) as e:
        DelegationTokenInfoZNode.decode(data, "/delegation_token/tokens/tok")
    assert "/delegation_token/tokens/tok" in str(e.value)
