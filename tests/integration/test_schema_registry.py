"""kafpy schema-registry against confluent-kafka's SchemaRegistryClient and serializers,
over a real kafpy broker: registering and evolving schemas, compatibility refusals,
producing and consuming through AvroSerializer/JSONSerializer, the state read back after
a restart, a foreign record in `_schemas` skipped, and Confluent's error JSON."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic
from confluent_kafka.schema_registry import Schema, SchemaReference, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from tests.fixtures.broker import KafpyBroker
from tests.fixtures.schema_registry import SchemaRegistryProcess, read_topic

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"

USER_V1 = {
    "type": "record",
    "name": "User",
    "namespace": "example",
    "fields": [{"name": "name", "type": "string"}],
}
USER_V2 = {
    **USER_V1,
    "fields": [*USER_V1["fields"], {"name": "age", "type": "int", "default": 0}],
}
USER_NO_DEFAULT = {
    **USER_V1,
    "fields": [*USER_V1["fields"], {"name": "email", "type": "string"}],
}

Start = Callable[..., SchemaRegistryProcess]


def avro(schema: dict[str, object]) -> Schema:
    return Schema(json.dumps(schema), "AVRO")


@pytest.fixture
def registry(
    kafpy_module_broker: KafpyBroker, schema_registry_factory: Start
) -> SchemaRegistryProcess:
    topic = f"_schemas_{uuid.uuid4().hex[:8]}"
    return schema_registry_factory(kafpy_module_broker.bootstrap, {"kafkastore.topic": topic})


def client(registry: SchemaRegistryProcess) -> SchemaRegistryClient:
    return SchemaRegistryClient({"url": registry.url})


def test_register_evolve_and_refuse_an_incompatible_schema(registry: SchemaRegistryProcess) -> None:
    sr = client(registry)
    first = sr.register_schema("users-value", avro(USER_V1))
    assert sr.register_schema("users-value", avro(USER_V1)) == first
    second = sr.register_schema("users-value", avro(USER_V2))
    assert second == first + 1
    assert sr.get_versions("users-value") == [1, 2]
    latest = sr.get_latest_version("users-value")
    assert (latest.version, latest.schema_id) == (2, second)
    assert json.loads(latest.schema.schema_str) == USER_V2
    assert json.loads(sr.get_schema(first).schema_str) == USER_V1
    found = sr.lookup_schema("users-value", avro(USER_V1))
    assert (found.version, found.schema_id) == (1, first)

    with pytest.raises(SchemaRegistryError) as refused:
        sr.register_schema("users-value", avro(USER_NO_DEFAULT))
    assert (refused.value.http_status_code, refused.value.error_code) == (409, 409)
    assert not sr.test_compatibility("users-value", avro(USER_NO_DEFAULT))
    assert sr.test_compatibility("users-value", avro(USER_V2))

    # the same schema under another subject keeps its id, as version 1 there
    assert sr.register_schema("other-value", avro(USER_V2)) == second
    assert sorted(sr.get_subjects()) == ["other-value", "users-value"]

    assert sr.get_compatibility() == "BACKWARD"
    sr.set_compatibility("users-value", "NONE")
    assert sr.get_compatibility("users-value") == "NONE"
    third = sr.register_schema("users-value", avro(USER_NO_DEFAULT))
    assert third == second + 1
    assert sr.get_versions("users-value") == [1, 2, 3]

    assert sr.delete_version("users-value", 3) == 3
    assert sr.get_versions("users-value") == [1, 2]
    assert sr.delete_version("users-value", 3, permanent=True) == 3
    assert sr.delete_subject("other-value") == [1]
    assert sr.get_subjects() == ["users-value"]
    assert sr.delete_subject("other-value", permanent=True) == [1]
    # the id stays readable while a version holds it
    assert json.loads(sr.get_schema(second).schema_str) == USER_V2


def test_avro_references(registry: SchemaRegistryProcess) -> None:
    sr = client(registry)
    address = {"type": "record", "name": "Address", "namespace": "example",
               "fields": [{"name": "city", "type": "string"}]}  # fmt: skip
    sr.register_schema("address", avro(address))
    person = {"type": "record", "name": "Person", "namespace": "example",
              "fields": [{"name": "home", "type": "example.Address"}]}  # fmt: skip
    ref = SchemaReference("example.Address", "address", 1)
    person_id = sr.register_schema("person-value", Schema(json.dumps(person), "AVRO", [ref]))
    got = sr.get_latest_version("person-value")
    assert got.schema_id == person_id
    assert [(r.name, r.subject, r.version) for r in got.schema.references] == [
        ("example.Address", "address", 1)
    ]
    with pytest.raises(SchemaRegistryError) as refused:
        sr.delete_subject("address")
    assert refused.value.error_code == 42206


def test_produce_and_consume_through_avro_and_json_serializers(
    kafpy_module_broker: KafpyBroker, registry: SchemaRegistryProcess
) -> None:
    sr = client(registry)
    topic = f"users-{uuid.uuid4().hex[:8]}"
    json_schema = json.dumps(
        {
            "type": "object",
            "properties": {
                "id": {"type": "integer"},
                "tags": {"type": "array", "items": {"type": "string"}},
            },
            "required": ["id"],
        }
    )
    value_serializer = AvroSerializer(sr, json.dumps(USER_V2))
    key_serializer = JSONSerializer(json_schema, sr)
    producer = Producer({"bootstrap.servers": kafpy_module_broker.bootstrap})
    sent = [({"id": i, "tags": [str(i)]}, {"name": f"user-{i}", "age": i}) for i in range(5)]
    for key, value in sent:
        producer.produce(
            topic,
            key=key_serializer(key, SerializationContext(topic, MessageField.KEY)),
            value=value_serializer(value, SerializationContext(topic, MessageField.VALUE)),
        )
    assert producer.flush(30) == 0
    assert sr.get_subjects() == [f"{topic}-key", f"{topic}-value"]
    key_version = sr.get_latest_version(f"{topic}-key")
    assert key_version.schema.schema_type == "JSON"

    consumer = Consumer(
        {
            "bootstrap.servers": kafpy_module_broker.bootstrap,
            "group.id": f"g-{topic}",
            "auto.offset.reset": "earliest",
        }
    )
    key_deserializer = JSONDeserializer(json_schema, schema_registry_client=sr)
    value_deserializer = AvroDeserializer(sr)
    received = []
    try:
        consumer.subscribe([topic])
        for _ in range(60):
            msg = consumer.poll(1.0)
            if msg is None or msg.error():
                if len(received) == len(sent):
                    break
                continue
            received.append(
                (
                    key_deserializer(msg.key(), SerializationContext(topic, MessageField.KEY)),
                    value_deserializer(
                        msg.value(), SerializationContext(topic, MessageField.VALUE)
                    ),
                )
            )
            if len(received) == len(sent):
                break
    finally:
        consumer.close()
    assert received == sent


def test_a_restarted_registry_reads_its_state_back(
    kafpy_module_broker: KafpyBroker, schema_registry_factory: Start
) -> None:
    overrides = {"kafkastore.topic": f"_schemas_{uuid.uuid4().hex[:8]}"}
    first = schema_registry_factory(kafpy_module_broker.bootstrap, overrides, name="first")
    sr = client(first)
    ids = [sr.register_schema("users-value", avro(s)) for s in (USER_V1, USER_V2)]
    sr.set_compatibility("users-value", "FULL")
    sr.delete_version("users-value", 2)
    first.stop()

    # the topic holds Confluent's records, as Confluent's registry would read them
    topic = overrides["kafkastore.topic"]
    records = read_topic(kafpy_module_broker.bootstrap, topic, 4)
    compact = json.dumps(USER_V1, separators=(",", ":")).replace('"', '\\"')
    assert records[0] == (
        b'{"keytype":"SCHEMA","subject":"users-value","version":1,"magic":1}',
        b'{"subject":"users-value","version":1,"id":%d,"schema":"%s","deleted":false}'
        % (ids[0], compact.encode()),
    )
    assert records[2] == (
        b'{"keytype":"CONFIG","subject":"users-value","magic":0}',
        b'{"compatibilityLevel":"FULL"}',
    )
    assert records[3][0] == b'{"keytype":"SCHEMA","subject":"users-value","version":2,"magic":1}'
    assert json.loads(records[3][1])["deleted"] is True
    admin = AdminClient({"bootstrap.servers": kafpy_module_broker.bootstrap})
    assert len(admin.list_topics(topic, timeout=10).topics[topic].partitions) == 1
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
    configs = admin.describe_configs([resource])[resource].result(10)
    assert configs["cleanup.policy"].value == "compact"

    second = schema_registry_factory(kafpy_module_broker.bootstrap, overrides, name="second")
    sr = client(second)
    assert sr.get_versions("users-value") == [1]
    assert sr.get_compatibility("users-value") == "FULL"
    assert json.loads(sr.get_schema(ids[1]).schema_str) == USER_V2
    assert sr.get_version("users-value", 1).schema_id == ids[0]
    # a new schema gets the next id, never one already given
    other = {"type": "record", "name": "Other", "fields": []}
    assert sr.register_schema("other-value", avro(other)) == ids[1] + 1


def test_a_foreign_record_in_the_schemas_topic_is_skipped_with_a_warning(
    kafpy_module_broker: KafpyBroker, schema_registry_factory: Start
) -> None:
    topic = f"_schemas_{uuid.uuid4().hex[:8]}"
    registry = schema_registry_factory(kafpy_module_broker.bootstrap, {"kafkastore.topic": topic})
    sr = client(registry)
    first = sr.register_schema("users-value", avro(USER_V1))
    producer = Producer({"bootstrap.servers": kafpy_module_broker.bootstrap})
    producer.produce(topic, key=b"not json", value=b"\x00\x01")
    producer.produce(
        topic, key=b'{"keytype":"SCHEMA","subject":"x","version":1,"magic":1}', value=b"[]"
    )
    assert producer.flush(30) == 0
    assert sr.register_schema("users-value", avro(USER_V2)) == first + 1
    log = registry.log()
    assert "WARN" in log and "Skipping the record at offset 1" in log
    assert "Skipping the record at offset 2" in log

    registry.stop()
    again = schema_registry_factory(
        kafpy_module_broker.bootstrap, {"kafkastore.topic": topic}, name="again"
    )
    assert client(again).get_versions("users-value") == [1, 2]
    assert "Skipping the record at offset 1" in again.log()


class Http:
    """Raw requests to a registry: (status, content type, JSON body)."""

    def __init__(self, url: str) -> None:
        self.url = url

    def call(self, method: str, path: str, body: object = None) -> tuple[int, str, object]:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data=data, method=method)
        request.add_header("Content-Type", CONTENT_TYPE)
        try:
            with urllib.request.urlopen(request, timeout=30) as answer:
                return answer.status, answer.headers["Content-Type"], json.loads(answer.read())
        except urllib.error.HTTPError as e:
            return e.code, e.headers["Content-Type"], json.loads(e.read())

    def code(self, method: str, path: str, body: object = None) -> object:
        """The error_code of the answer (None when there is none)."""
        answer = self.call(method, path, body)[2]
        return answer.get("error_code") if isinstance(answer, dict) else None


def test_errors_are_confluents_json(registry: SchemaRegistryProcess) -> None:
    http = Http(registry.url)
    bad_field = '{"type": "record", "name": "R", "fields": [{"name": "x"}]}'
    status, content_type, answer = http.call("POST", "/subjects/s/versions", {"schema": bad_field})
    assert (status, content_type) == (422, CONTENT_TYPE)
    assert isinstance(answer, dict) and answer["error_code"] == 42201
    assert http.code("POST", "/subjects/s/versions", {"schema": "{not json"}) == 42201
    bad_json = {"schema": json.dumps({"type": "object", "properties": 5}), "schemaType": "JSON"}
    assert http.code("POST", "/subjects/s/versions", bad_json) == 42201
    proto = {"schema": "syntax = 'proto3';", "schemaType": "PROTOBUF"}
    answer = http.call("POST", "/subjects/s/versions", proto)[2]
    assert isinstance(answer, dict) and answer["error_code"] == 42201
    assert "Protobuf" in answer["message"]
    assert http.call("GET", "/schemas/types")[2] == ["JSON", "AVRO"]
    assert http.call("GET", "/subjects/nope/versions")[::2] == (
        404,
        {"error_code": 40401, "message": "Subject 'nope' not found."},
    )
    assert http.call("GET", "/schemas/ids/99")[2] == {
        "error_code": 40403,
        "message": "Schema 99 not found",
    }
    assert http.call("POST", "/subjects/s/versions", {"schema": '"string"'})[2] == {"id": 1}
    assert http.code("GET", "/subjects/s/versions/2") == 40402
    assert http.code("GET", "/subjects/s/versions/zero") == 42202
    assert http.code("PUT", "/config", {"compatibility": "SIDEWAYS"}) == 42203
    assert http.code("PUT", "/mode", {"mode": "SOMETIMES"}) == 42204
    assert http.call("GET", "/nowhere")[::2] == (
        404,
        {"error_code": 404, "message": "HTTP 404 Not Found"},
    )
    assert http.call("DELETE", "/schemas/types")[0] == 405
    status, _, answer = http.call(
        "POST", "/subjects/s/versions", {"schema": "x" * (2 * 1024 * 1024)}
    )
    assert status == 413 and isinstance(answer, dict) and answer["error_code"] == 413
    metadata = http.call("GET", "/v1/metadata/id")[2]
    assert isinstance(metadata, dict)
    clusters = metadata["scope"]["clusters"]
    assert clusters["kafka-cluster"] and clusters["schema-registry-cluster"].startswith(
        "schema-registry"
    )
    assert http.call("GET", "/config")[2] == {"compatibilityLevel": "BACKWARD"}
    assert http.call("GET", "/mode")[2] == {"mode": "READWRITE"}
    assert http.call("PUT", "/mode/s", {"mode": "READONLY"})[2] == {"mode": "READONLY"}
    assert http.call("POST", "/subjects/s/versions", {"schema": '"int"'})[2] == {
        "error_code": 42205,
        "message": "Subject s is in read-only mode",
    }


def test_instances_over_one_topic_elect_a_leader_and_forward_writes_to_it(
    kafpy_module_broker: KafpyBroker, schema_registry_factory: Start
) -> None:
    overrides = {"kafkastore.topic": f"_schemas_{uuid.uuid4().hex[:8]}"}
    a = schema_registry_factory(kafpy_module_broker.bootstrap, overrides, name="a")
    b = schema_registry_factory(kafpy_module_broker.bootstrap, overrides, name="b")
    # the eligible member with the smallest URL leads
    leader, follower = (a, b) if a.url < b.url else (b, a)
    first = client(follower).register_schema("users-value", avro(USER_V1))
    # the follower answers with what the leader wrote, and has read it already
    assert client(follower).get_latest_version("users-value").schema_id == first
    assert client(leader).get_latest_version("users-value").schema_id == first
    assert "Registering new schema: subject users-value" in leader.log()
    assert "Registering new schema" not in follower.log()
    with pytest.raises(SchemaRegistryError) as refused:
        client(follower).register_schema("users-value", avro(USER_NO_DEFAULT))
    assert refused.value.error_code == 409  # the leader's answer, relayed
    client(follower).set_compatibility("users-value", "FULL")
    assert client(leader).get_compatibility("users-value") == "FULL"

    ids = {
        client(r).register_schema(f"s{i}-value", avro({**USER_V1, "name": f"U{i}"}))
        for i, r in enumerate([a, b, a, b])
    }
    assert ids == {first + 1, first + 2, first + 3, first + 4}

    # the leader leaves the group on stop: the other instance takes over and goes on
    leader.stop()
    survivor = client(follower)
    for _ in range(100):
        try:
            new_id = survivor.register_schema("users-value", avro(USER_V2))
            break
        except SchemaRegistryError as e:
            assert e.error_code in (50003, 50004), e
            time.sleep(0.2)
    else:
        pytest.fail(f"no new leader; the survivor's log:\n{follower.log()}")
    assert new_id == first + 5
    assert "is the leader" in follower.log()


def test_json_schemas_evolve_by_confluents_rules(registry: SchemaRegistryProcess) -> None:
    sr = client(registry)

    def closed(props: dict[str, object], required: list[str]) -> Schema:
        body = {"type": "object", "properties": props, "required": required,
                "additionalProperties": False}  # fmt: skip
        return Schema(json.dumps(body), "JSON")

    first = sr.register_schema("orders-value", closed({"id": {"type": "integer"}}, ["id"]))
    optional = closed({"id": {"type": "integer"}, "note": {"type": "string"}}, ["id"])
    assert sr.register_schema("orders-value", optional) == first + 1
    required = closed({"id": {"type": "integer"}, "note": {"type": "string"}, "qty": {"type": "integer"}}, ["id", "qty"])  # fmt: skip
    with pytest.raises(SchemaRegistryError) as refused:
        sr.register_schema("orders-value", required)
    assert refused.value.error_code == 409
    assert "REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL" in refused.value.error_message
    widened = closed({"id": {"type": "number"}, "note": {"type": "string"}}, ["id"])
    assert sr.test_compatibility("orders-value", widened)


def test_a_topic_confluents_registry_wrote_is_served(
    kafpy_module_broker: KafpyBroker, schema_registry_factory: Start
) -> None:
    """Records as Confluent Platform writes them (a later release's md5 and schemaType
    fields included, a soft delete, a global config) are read and served with their ids."""
    topic = f"_schemas_{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": kafpy_module_broker.bootstrap})
    created = admin.create_topics([NewTopic(topic, 1, 1, config={"cleanup.policy": "compact"})])
    created[topic].result(30)
    v1 = json.dumps(USER_V1, separators=(",", ":"))
    v2 = json.dumps(USER_V2, separators=(",", ":"))
    records = [
        (b'{"keytype":"NOOP","magic":0}', None),
        (b'{"keytype":"SCHEMA","subject":"users-value","version":1,"magic":1}',
         json.dumps({"subject": "users-value", "version": 1, "id": 21, "md5": "x", "schemaType": "AVRO",
                     "schema": v1, "deleted": False}).encode()),
        (b'{"keytype":"SCHEMA","subject":"users-value","version":2,"magic":1}',
         json.dumps({"subject": "users-value", "version": 2, "id": 22, "schema": v2, "deleted": False}).encode()),
        (b'{"keytype":"CONFIG","magic":0}', b'{"compatibilityLevel":"FULL"}'),
        (b'{"keytype":"SCHEMA","subject":"users-value","version":2,"magic":1}',
         json.dumps({"subject": "users-value", "version": 2, "id": 22, "schema": v2, "deleted": True}).encode()),
    ]  # fmt: skip
    producer = Producer({"bootstrap.servers": kafpy_module_broker.bootstrap})
    for key, value in records:
        producer.produce(topic, key=key, value=value, partition=0)
    assert producer.flush(30) == 0

    registry = schema_registry_factory(kafpy_module_broker.bootstrap, {"kafkastore.topic": topic})
    sr = client(registry)
    assert sr.get_versions("users-value") == [1]
    assert sr.get_versions("users-value", deleted=True) == [1, 2]
    assert sr.get_compatibility() == "FULL"
    assert json.loads(sr.get_schema(22).schema_str) == USER_V2
    assert sr.lookup_schema("users-value", avro(USER_V1)).schema_id == 21
    # a new schema gets the next id after the highest read, and re-registering the
    # soft-deleted one brings it back under its id as a new version
    assert sr.register_schema("other-value", avro({"type": "string"})) == 23
    assert sr.register_schema("users-value", avro(USER_V2)) == 22
    assert sr.get_versions("users-value") == [1, 3]
    assert "Skipping" not in registry.log()


def test_a_killed_leader_is_replaced_after_its_session_times_out(
    kafpy_module_broker: KafpyBroker, schema_registry_factory: Start
) -> None:
    overrides = {"kafkastore.topic": f"_schemas_{uuid.uuid4().hex[:8]}"}
    a = schema_registry_factory(kafpy_module_broker.bootstrap, overrides, name="a")
    b = schema_registry_factory(kafpy_module_broker.bootstrap, overrides, name="b")
    leader, follower = (a, b) if a.url < b.url else (b, a)
    first = client(follower).register_schema("users-value", avro(USER_V1))
    leader.kill()
    codes = set()
    for _ in range(150):  # the group's session timeout is 10 s
        try:
            second = client(follower).register_schema("users-value", avro(USER_V2))
            break
        except SchemaRegistryError as e:
            codes.add(e.error_code)
            time.sleep(0.2)
    else:
        pytest.fail(f"no new leader; the survivor's log:\n{follower.log()}")
    assert second == first + 1
    assert codes <= {50003, 50004}  # refused while the leader was gone, never half-done
    assert client(follower).get_versions("users-value") == [1, 2]


@pytest.mark.parametrize(
    ("partitions", "config", "refusal"),
    [
        (2, {"cleanup.policy": "compact"}, "should have only 1 partition but has 2"),
        (1, {"cleanup.policy": "delete"}, "You must configure the topic to 'compact'"),
    ],
)
def test_a_schemas_topic_that_could_lose_schemas_is_refused(
    kafpy_module_broker: KafpyBroker,
    tmp_path: Path,
    partitions: int,
    config: dict[str, str],
    refusal: str,
) -> None:
    topic = f"_schemas_{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": kafpy_module_broker.bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1, config=config)])[topic].result(30)
    registry = SchemaRegistryProcess(
        kafpy_module_broker.bootstrap, tmp_path, {"kafkastore.topic": topic}
    )
    with pytest.raises(pytest.fail.Exception):
        registry.start()
    assert refusal in registry.log()
