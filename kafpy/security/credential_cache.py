"""CredentialCache: the SCRAM credentials a broker authenticates against, per mechanism and
user, kept current from the metadata store (Kafka's CredentialCache and CredentialProvider).

Credentials live in `/config/users/<sanitized user>` as the value of the mechanism's key
(`{"version":1,"config":{"SCRAM-SHA-256":"salt=...,stored_key=...,..."}}`); whoever changes
them creates a `/config/changes` notification `users/<sanitized user>`, and the broker's
DynamicConfigManager hands the user's new config to `CredentialProvider`, so a new user can
log in, and a deleted one cannot, without a restart.
"""

from __future__ import annotations

from collections.abc import Mapping

from kafpy.common.logger import component_logger
from kafpy.common.sanitizer import desanitize
from kafpy.security.scram import ScramCredential, ScramMechanism


class CredentialCache:
    """The SCRAM credential of each (mechanism, user) this broker knows."""

    def __init__(self) -> None:
        self._credentials: dict[str, dict[str, ScramCredential]] = {
            name: {} for name in ScramMechanism.names()
        }

    def get(self, mechanism: str, username: str) -> ScramCredential | None:
        return self._credentials.get(mechanism, {}).get(username)

    def put(self, mechanism: str, username: str, credential: ScramCredential | None) -> None:
        users = self._credentials[mechanism]
        if credential is None:
            users.pop(username, None)
        else:
            users[username] = credential

    def users(self, mechanism: str) -> list[str]:
        return sorted(self._credentials.get(mechanism, {}))


class CredentialProvider:
    """Applies a user's stored config to the cache: the config handler of `users`
    entities (`process_config_changes(sanitized user, config)`)."""

    def __init__(self, cache: CredentialCache) -> None:
        self.cache = cache
        self.log = component_logger("kafpy.server.UserConfigHandler", "UserConfigHandler")

    def process_config_changes(self, entity_name: str, overrides: Mapping[str, str]) -> None:
        username = desanitize(entity_name)
        for mechanism in ScramMechanism.names():
            text = overrides.get(mechanism)
            credential = None
            if text is not None:
                try:
                    credential = ScramCredential.from_credential_string(text)
                except ValueError as e:
                    self.log.error(
                        "Ignoring the %s credential of user %s stored in /config/users/%s: %s",
                        mechanism, username, entity_name, e,
                    )  # fmt: skip
            self.cache.put(mechanism, username, credential)
