"""User SCRAM credentials on the metadata store: the one implementation behind
`kafpy configs --entity-type users` (both backends) and the DescribeUserScramCredentials /
AlterUserScramCredentials APIs (Kafka's ZkAdminManager and ConfigCommand for users).

A user's credentials are the SCRAM mechanism keys of `/config/users/<sanitized user>`,
each holding ScramCredentialUtils' text; every change is followed by a `/config/changes`
notification `users/<sanitized user>` so every broker's credential cache follows it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kafpy.common.errors import Errors, InvalidConfigurationError
from kafpy.common.sanitizer import desanitize, sanitize
from kafpy.metadata.kafka_zk_client import KafkaZkClient
from kafpy.metadata.zk_data import ConfigType
from kafpy.security.scram import (
    MAX_ITERATIONS,
    ScramCredential,
    ScramFormatter,
    ScramMechanism,
)


async def user_configs(zk: KafkaZkClient, user: str) -> dict[str, str]:
    """The stored config of a user (its credentials), by its real name."""
    return await zk.get_entity_configs(ConfigType.USER, sanitize(user))


async def write_user_configs(zk: KafkaZkClient, user: str, configs: Mapping[str, str]) -> None:
    """Replace a user's config and notify the brokers."""
    name = sanitize(user)
    await zk.set_or_create_entity_configs(ConfigType.USER, name, configs)
    await zk.create_config_change_notification(f"{ConfigType.USER}/{name}")


def credential_from_config_command(mechanism: str, value: str) -> str:
    """The stored text for kafka-configs' `SCRAM-SHA-256=[iterations=8192,password=...]`
    (brackets already removed): a new salt, iterations default 4096 (the minimum)."""
    scram = ScramMechanism.for_name(mechanism)
    assert scram is not None
    options: dict[str, str] = {}
    for part in value.split(","):
        key, sep, v = part.partition("=")
        if not sep:
            raise InvalidConfigurationError(
                f"Invalid credential property {mechanism}={value}: expected "
                f"{mechanism}=[iterations=8192,password=<password>]"
            )
        options[key.strip()] = v.strip()
    password = options.get("password")
    if not password:
        raise InvalidConfigurationError(
            f"Invalid credential property {mechanism}={value}: password is required, as "
            f"{mechanism}=[iterations=8192,password=<password>]"
        )
    try:
        iterations = int(options.get("iterations", scram.min_iterations))
    except ValueError:
        raise InvalidConfigurationError(
            f"Invalid credential property {mechanism}: iterations={options['iterations']} is "
            "not a number"
        ) from None
    if iterations < scram.min_iterations:
        raise InvalidConfigurationError(
            f"Iterations {iterations} is less than the minimum {scram.min_iterations} "
            f"required for {mechanism}"
        )
    credential = ScramFormatter(scram.hash_name).credential(password, iterations)
    return credential.to_credential_string()


def _credential_from_salted_password(
    mechanism: ScramMechanism, salt: bytes, salted_password: bytes, iterations: int
) -> ScramCredential:
    f = ScramFormatter(mechanism.hash_name)
    return ScramCredential(
        salt,
        f.stored_key(f.client_key(salted_password)),
        f.server_key(salted_password),
        iterations,
    )


def _result(user: str, error: Errors, message: str | None = None) -> dict[str, Any]:
    return {"user": user, "error_code": int(error), "error_message": message}


async def alter_user_scram_credentials(
    zk: KafkaZkClient, body: Mapping[str, Any]
) -> dict[str, Any]:
    """AlterUserScramCredentials: every user's changes are checked, then each valid user's
    credentials are written at once; one result per user, as Kafka answers."""
    changes: dict[str, list[tuple[str, Mapping[str, Any]]]] = {}
    for kind in ("deletions", "upsertions"):
        for entry in body.get(kind) or []:
            changes.setdefault(str(entry["name"]), []).append((kind, entry))
    results: list[dict[str, Any]] = []
    for user, entries in changes.items():
        error = _validate(user, entries)
        if error is not None:
            results.append(_result(user, *error))
            continue
        configs = await user_configs(zk, user)
        failure: tuple[Errors, str] | None = None
        for kind, entry in entries:
            mechanism = ScramMechanism.for_type(int(entry["mechanism"]))
            assert mechanism is not None
            if kind == "deletions":
                if mechanism.mechanism_name not in configs:
                    failure = (
                        Errors.RESOURCE_NOT_FOUND,
                        "Attempt to delete a user credential that does not exist",
                    )
                    break
                del configs[mechanism.mechanism_name]
            else:
                credential = _credential_from_salted_password(
                    mechanism, bytes(entry["salt"]), bytes(entry["salted_password"]),
                    int(entry["iterations"]),
                )  # fmt: skip
                configs[mechanism.mechanism_name] = credential.to_credential_string()
        if failure is not None:
            results.append(_result(user, *failure))
            continue
        await write_user_configs(zk, user, configs)
        results.append(_result(user, Errors.NONE))
    return {"throttle_time_ms": 0, "results": results}


def _validate(user: str, entries: list[tuple[str, Mapping[str, Any]]]) -> tuple[Errors, str] | None:
    if not user:
        return Errors.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"
    seen: set[int] = set()
    for kind, entry in entries:
        mechanism = ScramMechanism.for_type(int(entry["mechanism"]))
        if mechanism is None:
            return Errors.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"
        if mechanism.type_id in seen:
            return (
                Errors.DUPLICATE_RESOURCE,
                "A user credential cannot be altered twice in the same request",
            )
        seen.add(mechanism.type_id)
        if kind == "upsertions":
            iterations = int(entry["iterations"])
            if iterations < mechanism.min_iterations:
                return Errors.UNACCEPTABLE_CREDENTIAL, "Too few iterations"
            if iterations > MAX_ITERATIONS:
                return Errors.UNACCEPTABLE_CREDENTIAL, "Too many iterations"
            if not entry["salt"] or not entry["salted_password"]:
                return Errors.UNACCEPTABLE_CREDENTIAL, "Salt and salted password must not be empty"
    return None


async def describe_user_scram_credentials(
    zk: KafkaZkClient, body: Mapping[str, Any]
) -> dict[str, Any]:
    """DescribeUserScramCredentials: the mechanisms and iterations of the named users (all
    users with credentials when none are named)."""
    requested = body.get("users")
    if requested is None or len(requested) == 0:
        names = [desanitize(n) for n in await zk.get_all_entities_with_config(ConfigType.USER)]
        explicit = False
    else:
        names = [str(u["name"]) for u in requested]
        explicit = True
    results: list[dict[str, Any]] = []
    seen: set[str] = set()
    for user in names:
        if user in seen:
            results.append(
                {**_result(user, Errors.DUPLICATE_RESOURCE, "Cannot describe SCRAM credentials "
                           "for the same user twice in a single request"),
                 "credential_infos": []}
            )  # fmt: skip
            continue
        seen.add(user)
        infos = []
        for mechanism_name, text in sorted((await user_configs(zk, user)).items()):
            mechanism = ScramMechanism.for_name(mechanism_name)
            if mechanism is None:
                continue
            try:
                iterations = ScramCredential.from_credential_string(text).iterations
            except ValueError:
                continue
            infos.append({"mechanism": mechanism.type_id, "iterations": iterations})
        if not infos:
            if explicit:
                results.append(
                    {**_result(user, Errors.RESOURCE_NOT_FOUND,
                               "Attempt to describe a user credential that does not exist"),
                     "credential_infos": []}
                )  # fmt: skip
            continue
        results.append({**_result(user, Errors.NONE), "credential_infos": infos})
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "results": results}
