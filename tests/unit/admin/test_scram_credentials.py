"""User SCRAM credentials on the store: AlterUserScramCredentials' checks and answers,
DescribeUserScramCredentials, kafka-configs' SCRAM syntax and the stored JSON."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kafpy.admin.config_command import ConfigCommandOptions, run_config_command
from kafpy.admin.scram_credentials import (
    alter_user_scram_credentials,
    credential_from_config_command,
    describe_user_scram_credentials,
)
from kafpy.common.errors import Errors, InvalidConfigurationError
from kafpy.metadata.kafka_zk_client import KafkaZkClient
from kafpy.security.scram import ScramCredential, ScramFormatter
from tests.unit.admin.fixtures import run_with_zk

SHA256, SHA512 = 1, 2


def _upsert(name: str, mechanism: int = SHA256, iterations: int = 4096) -> dict[str, Any]:
    salted = ScramFormatter("sha256").salted_password("pw", b"salt", iterations)
    return {"name": name, "mechanism": mechanism, "iterations": iterations, "salt": b"salt",
            "salted_password": salted}  # fmt: skip


def _errors(response: dict[str, Any]) -> dict[str, tuple[int, str | None]]:
    return {r["user"]: (r["error_code"], r["error_message"]) for r in response["results"]}


def test_upsert_describe_delete_and_the_stored_json() -> None:
    async def body(zk: KafkaZkClient) -> None:
        answer = await alter_user_scram_credentials(
            zk, {"deletions": [], "upsertions": [_upsert("alice"), _upsert("a b", SHA512, 8192)]}
        )
        assert _errors(answer) == {"alice": (0, None), "a b": (0, None)}
        data = await zk.store.get_data_or_none("/config/users/alice")
        stored = json.loads(data or b"")
        assert stored["version"] == 1 and list(stored["config"]) == ["SCRAM-SHA-256"]
        credential = ScramCredential.from_credential_string(stored["config"]["SCRAM-SHA-256"])
        assert credential == ScramFormatter("sha256").credential("pw", 4096, b"salt")
        assert await zk.store.exists("/config/users/a%20b") is not None
        changes = await zk.store.get_children("/config/changes")
        assert len(changes) == 2
        described = await describe_user_scram_credentials(zk, {"users": None})
        assert {r["user"]: r["credential_infos"] for r in described["results"]} == {
            "alice": [{"mechanism": SHA256, "iterations": 4096}],
            "a b": [{"mechanism": SHA512, "iterations": 8192}],
        }
        answer = await alter_user_scram_credentials(
            zk, {"deletions": [{"name": "alice", "mechanism": SHA256}], "upsertions": []}
        )
        assert _errors(answer) == {"alice": (0, None)}
        missing = await describe_user_scram_credentials(zk, {"users": [{"name": "alice"}]})
        assert missing["results"][0]["error_code"] == Errors.RESOURCE_NOT_FOUND

    run_with_zk(body)


@pytest.mark.parametrize(
    ("request_body", "error", "message"),
    [
        ({"upsertions": [_upsert("u", iterations=100)]}, Errors.UNACCEPTABLE_CREDENTIAL,
         "Too few iterations"),
        ({"upsertions": [_upsert("u", iterations=20000)]}, Errors.UNACCEPTABLE_CREDENTIAL,
         "Too many iterations"),
        ({"upsertions": [_upsert("u", mechanism=9)]}, Errors.UNSUPPORTED_SASL_MECHANISM,
         "Unknown SCRAM mechanism"),
        ({"upsertions": [_upsert("")]}, Errors.UNACCEPTABLE_CREDENTIAL,
         "Username must not be empty"),
        ({"upsertions": [_upsert("u"), _upsert("u")]}, Errors.DUPLICATE_RESOURCE,
         "A user credential cannot be altered twice in the same request"),
        ({"deletions": [{"name": "u", "mechanism": SHA256}]}, Errors.RESOURCE_NOT_FOUND,
         "Attempt to delete a user credential that does not exist"),
    ],
)  # fmt: skip
def test_refusals(request_body: dict[str, Any], error: Errors, message: str) -> None:
    async def body(zk: KafkaZkClient) -> None:
        answer = await alter_user_scram_credentials(
            zk, {"deletions": [], "upsertions": [], **request_body}
        )
        ((code, text),) = _errors(answer).values()
        assert (code, text) == (error, message)
        assert await zk.get_all_entities_with_config("users") == []

    run_with_zk(body)


def test_config_command_syntax() -> None:
    text = credential_from_config_command("SCRAM-SHA-512", "iterations=8192,password=secret")
    assert text.startswith("salt=") and text.endswith(",iterations=8192")
    assert credential_from_config_command("SCRAM-SHA-256", "password=p").endswith("=4096")
    with pytest.raises(InvalidConfigurationError, match="less than the minimum 4096"):
        credential_from_config_command("SCRAM-SHA-256", "iterations=10,password=p")
    with pytest.raises(InvalidConfigurationError, match="password is required"):
        credential_from_config_command("SCRAM-SHA-256", "iterations=8192")


def test_configs_command_for_users_on_the_store() -> None:
    async def body(zk: KafkaZkClient) -> None:
        out: list[str] = []
        alter = ConfigCommandOptions(
            zookeeper="z", actions=["alter"], entity_type="users", entity_name="alice",
            add_config="SCRAM-SHA-256=[iterations=8192,password=a],SCRAM-SHA-512=[password=a]",
        )  # fmt: skip
        alter.check_args()
        await run_config_command(zk, alter, out.append)
        assert out == ["Completed Updating config for entity: user-principal 'alice'."]
        configs = await zk.get_entity_configs("users", "alice")
        assert sorted(configs) == ["SCRAM-SHA-256", "SCRAM-SHA-512"]
        quota = ConfigCommandOptions(
            zookeeper="z", actions=["alter"], entity_type="users", entity_name="alice",
            add_config="producer_byte_rate=1024",
        )  # fmt: skip
        await run_config_command(
            zk, quota, out.append
        )  # a user's quotas sit beside its credentials
        configs = await zk.get_entity_configs("users", "alice")
        assert sorted(configs) == ["SCRAM-SHA-256", "SCRAM-SHA-512", "producer_byte_rate"]
        unknown = ConfigCommandOptions(
            zookeeper="z", actions=["alter"], entity_type="users", entity_name="alice",
            add_config="foo=1",
        )  # fmt: skip
        with pytest.raises(InvalidConfigurationError, match="Invalid user config.s.: foo"):
            await run_config_command(zk, unknown, out.append)
        delete = ConfigCommandOptions(
            zookeeper="z", actions=["alter"], entity_type="users", entity_name="alice",
            delete_config=["SCRAM-SHA-512"],
        )  # fmt: skip
        await run_config_command(zk, delete, out.append)
        assert sorted(await zk.get_entity_configs("users", "alice")) == [
            "SCRAM-SHA-256",
            "producer_byte_rate",
        ]

    run_with_zk(body)
