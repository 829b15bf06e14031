"""KafkaSchemaRegistry's rules over a store kept in memory (as Confluent's InMemoryStore):
every write goes through the `_schemas` codec and is applied at once. The real topic is
exercised by tests/integration/test_schema_registry.py."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Coroutine
from typing import Any, TypeVar

import pytest

from kafpy.schema_registry import errors
from kafpy.schema_registry.compatibility import CompatibilityLevel
from kafpy.schema_registry.errors import RestError
from kafpy.schema_registry.kafka_schema_registry import Mode
from kafpy.schema_registry.schema_registry_records import (
    SchemaReference,
    SchemaRegistryKey,
    SchemaRegistryRecordError,
    SchemaValue,
    deserialize_key,
    deserialize_value,
    serialize_key,
    serialize_value,
)
from tests.unit.schema_registry.fixtures import InMemoryStore, new_registry, replay

T = TypeVar("T")


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


def rec(*fields: tuple[str, Any], name: str = "R") -> str:
    return json.dumps(
        {
            "type": "record",
            "name": name,
            "fields": [
                {"name": n, "type": t, **({"default": d} if d is not None else {})}
                for n, t, d in fields
            ],
        }  # type: ignore[misc]
    )


V1 = rec(("a", "int", None))
V2 = rec(("a", "int", None), ("b", "string", "x"))
V3 = rec(("a", "int", None), ("b", "string", "x"), ("c", "long", 0))


def code(e: pytest.ExceptionInfo[RestError]) -> int:
    return e.value.error_code


def test_ids_are_global_and_versions_per_subject() -> None:
    r = new_registry()
    assert run(r.register("a", "AVRO", V1, ())) == 1
    assert run(r.register("a", "AVRO", V2, ())) == 2
    assert run(r.register("b", "AVRO", V2, ())) == 2
    assert run(r.register("a", "AVRO", V1.replace(",", ", "), ())) == 1  # already version 1
    assert r.list_versions("a") == [1, 2] and r.list_versions("b") == [1]
    assert r.get_version("b", "latest").id == 2


def test_replaying_the_topic_rebuilds_the_same_state() -> None:
    store = InMemoryStore()
    r = new_registry(store)
    run(r.register("a", "AVRO", V1, ()))
    run(r.register("a", "AVRO", V2, ()))
    run(r.set_compatibility("a", CompatibilityLevel.FULL))
    run(r.delete_version("a", "1", permanent=False))
    again = new_registry()
    replay(again, store.records)
    assert again.versions == r.versions
    assert again.configs == r.configs
    assert run(again.register("c", "AVRO", V3, ())) == 3


def test_incompatible_schemas_are_refused_at_each_level() -> None:
    r = new_registry()
    run(r.register("s", "AVRO", V1, ()))
    no_default = rec(("a", "int", None), ("z", "int", None))
    with pytest.raises(RestError) as refused:
        run(r.register("s", "AVRO", no_default, ()))
    assert (refused.value.status, code(refused)) == (409, errors.INCOMPATIBLE_SCHEMA)
    run(r.set_compatibility("s", CompatibilityLevel.FORWARD))
    assert run(r.register("s", "AVRO", no_default, ())) == 2  # old readers skip the new field
    run(r.set_compatibility(None, CompatibilityLevel.NONE))
    assert r.compatibility_level("other") is CompatibilityLevel.NONE


def test_transitive_levels_check_every_version() -> None:
    r = new_registry()
    run(r.set_compatibility("s", CompatibilityLevel.NONE))
    run(r.register("s", "AVRO", rec(("a", "int", None)), ()))
    run(r.register("s", "AVRO", rec(("a", "string", None)), ()))
    later = rec(("a", "string", None), ("b", "int", 1))
    run(r.set_compatibility("s", CompatibilityLevel.BACKWARD))
    assert r.compatibility("s", None, "AVRO", later, ()) == []  # the latest only
    run(r.set_compatibility("s", CompatibilityLevel.BACKWARD_TRANSITIVE))
    assert r.compatibility("s", None, "AVRO", later, ()) != []  # version 1 too
    assert r.compatibility("s", "latest", "AVRO", later, ()) == []  # the version named
    assert r.compatibility("s", "1", "AVRO", later, ()) != []
    with pytest.raises(RestError) as refused:
        run(r.register("s", "AVRO", later, ()))
    assert code(refused) == errors.INCOMPATIBLE_SCHEMA


def test_deletes_soft_then_permanent() -> None:
    r = new_registry()
    run(r.register("s", "AVRO", V1, ()))
    run(r.register("s", "AVRO", V2, ()))
    with pytest.raises(RestError) as refused:
        run(r.delete_version("s", "2", permanent=True))
    assert code(refused) == errors.SCHEMAVERSION_NOT_SOFT_DELETED
    assert run(r.delete_version("s", "latest", permanent=False)) == 2
    with pytest.raises(RestError) as refused:
        run(r.delete_version("s", "2", permanent=False))
    assert code(refused) == errors.SCHEMAVERSION_SOFT_DELETED
    assert r.list_versions("s") == [1] and r.list_versions("s", deleted=True) == [1, 2]
    assert r.get_version("s", "2", deleted=True).deleted
    with pytest.raises(RestError) as refused:
        r.get_version("s", "2")
    assert code(refused) == errors.VERSION_NOT_FOUND
    with pytest.raises(RestError) as refused:
        run(r.delete_subject("s", permanent=True))
    assert code(refused) == errors.SUBJECT_NOT_SOFT_DELETED
    assert run(r.delete_subject("s", permanent=False)) == [1]
    with pytest.raises(RestError) as refused:
        run(r.delete_subject("s", permanent=False))
    assert code(refused) == errors.SUBJECT_SOFT_DELETED
    assert r.subjects() == [] and r.subjects(deleted=True) == ["s"]
    assert run(r.delete_subject("s", permanent=True)) == [1, 2]
    with pytest.raises(RestError) as refused:
        r.schema_by_id(1)
    assert code(refused) == errors.SCHEMA_NOT_FOUND


def test_a_soft_deleted_schema_registered_again_keeps_its_id_as_a_new_version() -> None:
    r = new_registry()
    run(r.register("s", "AVRO", V1, ()))
    run(r.delete_version("s", "1", permanent=False))
    assert run(r.register("s", "AVRO", V1, ())) == 1
    assert r.list_versions("s", deleted=True) == [2]  # the deleted version 1 was tombstoned


def test_references_must_exist_and_keep_their_target() -> None:
    r = new_registry()
    address = json.dumps({"type": "record", "name": "Address", "namespace": "n", "fields": []})
    run(r.register("address", "AVRO", address, ()))
    person = json.dumps(
        {"type": "record", "name": "P", "fields": [{"name": "a", "type": "n.Address"}]}
    )
    refs = (SchemaReference("n.Address", "address", 1),)
    with pytest.raises(RestError) as refused:
        run(r.register("p", "AVRO", person, ()))
    assert code(refused) == errors.INVALID_SCHEMA
    with pytest.raises(RestError) as refused:
        run(r.register("p", "AVRO", person, (SchemaReference("n.Address", "address", 9),)))
    assert code(refused) == errors.INVALID_SCHEMA
    assert run(r.register("p", "AVRO", person, refs)) == 2
    assert r.referenced_by("address", "1") == [2]
    with pytest.raises(RestError) as refused:
        run(r.delete_version("address", "1", permanent=False))
    assert code(refused) == errors.REFERENCE_EXISTS


def test_modes() -> None:
    r = new_registry()
    run(r.register("s", "AVRO", V1, ()))
    run(r.set_mode("s", Mode.READONLY, force=False))
    with pytest.raises(RestError) as refused:
        run(r.register("s", "AVRO", V2, ()))
    assert refused.value.message == "Subject s is in read-only mode"
    with pytest.raises(RestError) as refused:
        run(r.set_mode(None, Mode.IMPORT, force=False))
    assert refused.value.message == "Cannot import since found existing subjects"
    run(r.set_mode("fresh", Mode.IMPORT, force=False))
    with pytest.raises(RestError) as refused:
        run(r.register("fresh", "AVRO", V1, ()))
    assert refused.value.message == "Subject fresh is not in read-write mode"
    assert run(r.register("fresh", "AVRO", V3, (), schema_id=42, version=7)) == 42
    assert r.get_version("fresh", "7").id == 42
    with pytest.raises(RestError) as refused:
        run(r.register("fresh", "AVRO", V2, (), schema_id=42, version=8))
    assert refused.value.message == "Overwrite new schema with id 42 is not permitted."
    with pytest.raises(RestError) as refused:
        run(r.register("s2", "AVRO", V2, (), schema_id=5))
    assert refused.value.message == "Subject s2 is not in import mode"
    assert run(r.delete_mode("s")) is Mode.READONLY
    assert run(r.register("other", "AVRO", rec(("q", "int", None), name="Q"), ())) == 43


def test_invalid_and_refused_schema_types() -> None:
    r = new_registry()
    for schema_type, text in [
        ("AVRO", "{"),
        ("JSON", '{"type": 5}'),
        ("PROTOBUF", "syntax"),
        ("XML", "<a/>"),
    ]:
        with pytest.raises(RestError) as refused:
            run(r.register("s", schema_type, text, ()))
        assert (refused.value.status, code(refused)) == (422, errors.INVALID_SCHEMA)


@pytest.mark.parametrize("version", ["0", "-2", "x", str(2**31)])
def test_invalid_versions(version: str) -> None:
    r = new_registry()
    run(r.register("s", "AVRO", V1, ()))
    with pytest.raises(RestError) as refused:
        r.get_version("s", version)
    assert code(refused) == errors.INVALID_VERSION


def test_a_schema_record_that_does_not_match_its_key_changes_nothing() -> None:
    store = InMemoryStore()
    r = new_registry(store)
    run(r.register("s", "AVRO", V1, ()))
    before = (dict(r.versions["s"]), dict(r.by_id), {k: set(v) for k, v in r.id_holders.items()})
    key = deserialize_key(b'{"keytype":"SCHEMA","subject":"s","version":1,"magic":1}')
    value = deserialize_value(
        key, b'{"subject":"other","version":1,"id":9,"schema":"\\"int\\"","deleted":false}'
    )
    with pytest.raises(SchemaRegistryRecordError):
        r.apply(key, value)
    assert (
        dict(r.versions["s"]),
        dict(r.by_id),
        {k: set(v) for k, v in r.id_holders.items()},
    ) == before


def test_an_id_rewritten_with_another_schema_no_longer_stands_for_the_first() -> None:
    r = new_registry()
    run(r.register("s", "AVRO", V1, ()))
    run(r.set_compatibility(None, CompatibilityLevel.NONE))
    # a foreign writer of the topic puts another schema under version 1 and id 1
    foreign = SchemaValue("s", 1, 1, '"string"')
    key = SchemaRegistryKey.schema("s", 1)
    replay(r, [(serialize_key(key), serialize_value(foreign))])
    assert run(r.register("t", "AVRO", V1, ())) == 2
