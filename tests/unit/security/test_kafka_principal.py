"""KafkaPrincipal parsing and printing."""

import pytest

from kafpy.security.kafka_principal import ANONYMOUS, KafkaPrincipal


def test_round_trip() -> None:
    p = KafkaPrincipal.from_string("User:CN=alice,OU=eng")
    assert p == KafkaPrincipal("User", "CN=alice,OU=eng")
    assert str(p) == "User:CN=alice,OU=eng"
    assert str(ANONYMOUS) == "User:ANONYMOUS"


@pytest.mark.parametrize("text", ["alice", "User:", ":alice", ""])
def test_malformed_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="Invalid principal"):
        KafkaPrincipal.from_string(text)
