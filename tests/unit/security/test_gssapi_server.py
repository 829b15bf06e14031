"""RFC 4752's security-layer message. The exchange itself runs against a real KDC in
tests/integration/test_sasl_gssapi.py."""

from __future__ import annotations

import pytest

from kafpy.security.gssapi_server import (
    MAX_RECEIVE_BUFFER,
    NO_SECURITY_LAYER,
    layers_message,
    parse_layers_message,
)


def test_the_layers_message() -> None:
    offer = layers_message(NO_SECURITY_LAYER, MAX_RECEIVE_BUFFER)
    assert offer == b"\x01\x01\x00\x00"
    assert parse_layers_message(offer) == (1, 65536, None)
    assert parse_layers_message(b"\x01\x00\x10\x00kafka@host") == (1, 4096, "kafka@host")
    with pytest.raises(ValueError, match="3 bytes"):
        parse_layers_message(b"\x01\x00\x00")
