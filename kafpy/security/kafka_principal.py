"""KafkaPrincipal: who a connection is, as Kafka names it (`User:alice`).

The socket server sets one on every connection: `User:ANONYMOUS` on PLAINTEXT, the TLS
client certificate's mapped name on SSL, the SASL user after authentication (a delegation
token's owner for a token). The
authorizer matches ACLs against it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

USER_TYPE = "User"


@dataclass(frozen=True, slots=True)
class KafkaPrincipal:
    """A principal: a type (`User`, or `Group` in ACLs) and a name. `token_authenticated`
    marks a connection that authenticated with a delegation token (it may not create
    tokens); as in Kafka, it takes no part in equality."""

    principal_type: str
    name: str
    token_authenticated: bool = field(default=False, compare=False)

    def __str__(self) -> str:
        return f"{self.principal_type}:{self.name}"

    @classmethod
    def from_string(cls, text: str) -> KafkaPrincipal:
        """Parse `Type:name` as kafka-acls.sh and `super.users` write it."""
        principal_type, sep, name = text.partition(":")
        if not sep or not principal_type or not name:
            raise ValueError(
                f"Invalid principal '{text}': expected the form 'User:name' (type, colon, name)"
            )
        return cls(principal_type, name)


ANONYMOUS = KafkaPrincipal(USER_TYPE, "ANONYMOUS")
