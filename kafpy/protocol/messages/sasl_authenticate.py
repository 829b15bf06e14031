"""SaslAuthenticate (key 36): one SASL token each way, framed as a Kafka request (KIP-152);
v1 adds the session lifetime for re-authentication (KIP-368), v2 is flexible."""

from __future__ import annotations

from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.api_schema import ApiSchema, top_level_error
from kafpy.protocol.schema import Field, Message

SASL_AUTHENTICATE_REQUEST = Message(
    ApiKey.SASL_AUTHENTICATE, "SaslAuthenticateRequest", "request", (0, 2), 2,
    [
        Field("auth_bytes", "bytes"),
    ],
)

SASL_AUTHENTICATE_RESPONSE = Message(
    ApiKey.SASL_AUTHENTICATE, "SaslAuthenticateResponse", "response", (0, 2), 2,
    [
        Field("error_code", "int16"),
        Field("error_message", "string", nullable="0+", default=None),
        Field("auth_bytes", "bytes"),
        Field("session_lifetime_ms", "int64", "1+"),
    ],
)


SASL_AUTHENTICATE_API = ApiSchema(
    SASL_AUTHENTICATE_REQUEST,
    SASL_AUTHENTICATE_RESPONSE,
    versions=(0, 2),
    error_response=top_level_error,
)
