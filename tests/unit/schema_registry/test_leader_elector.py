"""The registries' group protocol: Confluent's identity and assignment JSON, and who leads."""

from __future__ import annotations

import json

from kafpy.schema_registry.leader_elector import (
    DUPLICATE_URLS,
    SchemaRegistryIdentity,
    assign,
)


def test_identity_json_is_confluents() -> None:
    identity = SchemaRegistryIdentity("10.0.0.5", 8081)
    assert json.dumps(identity.as_json(), separators=(",", ":")) == (
        '{"host":"10.0.0.5","port":8081,"master_eligibility":true,"scheme":"http","version":1}'
    )
    confluent = {
        "version": 1,
        "host": "h",
        "port": 8082,
        "master_eligibility": False,
        "scheme": "http",
    }
    assert SchemaRegistryIdentity.from_json(confluent) == SchemaRegistryIdentity("h", 8082, False)
    assert SchemaRegistryIdentity("h", 8082).url == "http://h:8082"


def test_the_eligible_member_with_the_smallest_url_leads() -> None:
    members = {
        "m1": SchemaRegistryIdentity("b", 8081),
        "m2": SchemaRegistryIdentity("a", 8081, leader_eligibility=False),
        "m3": SchemaRegistryIdentity("a", 8082),
    }
    assert assign(members) == {
        "version": 1,
        "error": 0,
        "master": "m3",
        "master_identity": members["m3"].as_json(),
    }


def test_no_leader_without_an_eligible_member_or_with_duplicate_urls() -> None:
    assert "master" not in assign({"m": SchemaRegistryIdentity("a", 1, leader_eligibility=False)})
    twins = {"m1": SchemaRegistryIdentity("a", 1), "m2": SchemaRegistryIdentity("a", 1)}
    assert assign(twins) == {"version": 1, "error": DUPLICATE_URLS}
