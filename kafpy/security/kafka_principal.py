"""KafkaPrincipal: who a connection is, as Kafka names it (`User:alice`).

The socket server sets one on every connection: `User:ANONYMOUS` on PLAINTEXT, the TLS
client certificate's mapped name on SSL, the SASL user after authentication. The
authorizer matches ACLs against it.
"""

from __future__ import annotations

from dataclasses import dataclass

USER_TYPE = "User"


@dataclass(frozen=True, slots=True)
class KafkaPrincipal:
    """A principal: a type (`User`, or `Group` in ACLs) and a name."""

    principal_type: str
    name: str

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
