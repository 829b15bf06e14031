"""SaslHandshake (key 17): choose a SASL mechanism (we answer with the ones we offer)."""

from __future__ import annotations

from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.api_schema import ApiSchema, top_level_error
from kafpy.protocol.schema import Array, Field, Message

SASL_HANDSHAKE_REQUEST = Message(
    ApiKey.SASL_HANDSHAKE, "SaslHandshakeRequest", "request", (0, 1), None,
    [
        Field("mechanism", "string"),
    ],
)

SASL_HANDSHAKE_RESPONSE = Message(
    ApiKey.SASL_HANDSHAKE, "SaslHandshakeResponse", "response", (0, 1), None,
    [
        Field("error_code", "int16"),
        Field("mechanisms", Array("string")),
    ],
)


SASL_HANDSHAKE_API = ApiSchema(
    SASL_HANDSHAKE_REQUEST,
    SASL_HANDSHAKE_RESPONSE,
    versions=(0, 1),
    error_response=top_level_error,
)
