"""Every declared message in every version against kafka-python's `kafka.protocol`.

Values generated from our schemas encode to the same bytes as kafka-python's classes
holding the same values, we decode what kafka-python encodes to the same values, and
kafka-python decodes what we encode to the same values.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.messages import REQUESTS, RESPONSES
from kafpy.protocol.schema import Message
from tests.unit.protocol.reference import (
    field_names,
    from_reference,
    reference_class,
    reference_field_names,
    to_reference,
)
from tests.unit.protocol.strategies import message_values, normalize

ALL_MESSAGES: list[Message] = [*REQUESTS.values(), *RESPONSES.values()]
ALL_PAIRS = [
    (m, v) for m in ALL_MESSAGES for v in range(m.valid_versions[0], m.valid_versions[1] + 1)
]

# APIs Kafka 4.0 removed (ZooKeeper-mode inter-broker APIs): kafka-python has no schema
# for them, so they are checked by round trips and literal bytes instead.
WITHOUT_REFERENCE = {
    ApiKey.LEADER_AND_ISR,
    ApiKey.STOP_REPLICA,
    ApiKey.UPDATE_METADATA,
    ApiKey.CONTROLLED_SHUTDOWN,
    ApiKey.ALTER_ISR,  # AlterPartition since Kafka 3.x; literal-byte tests cover it
    # kafka-python has no delegation token schemas: literal bytes in
    # tests/unit/protocol/messages/test_delegation_token.py
    ApiKey.CREATE_DELEGATION_TOKEN,
    ApiKey.RENEW_DELEGATION_TOKEN,
    ApiKey.EXPIRE_DELEGATION_TOKEN,
    ApiKey.DESCRIBE_DELEGATION_TOKEN,
}

# Versions below kafka-python's schema minimum whose fields its (Kafka 4.x) schema no
# longer describes; covered by literal-byte tests.
REFERENCE_DIFFERS: set[tuple[str, int]] = set()


def _reference_pairs() -> list[tuple[Message, int]]:
    pairs = []
    for m, v in ALL_PAIRS:
        if m.api_key in WITHOUT_REFERENCE or (m.name, v) in REFERENCE_DIFFERS:
            continue
        pairs.append((m, v))
    return pairs


REFERENCE_PAIRS = _reference_pairs()


def _id(pair: tuple[Message, int]) -> str:
    return f"{pair[0].name}-v{pair[1]}"


def test_every_api_but_the_removed_ones_has_a_reference() -> None:
    missing = {m.name for m in ALL_MESSAGES if reference_class(m) is None}
    expected = {m.name for m in ALL_MESSAGES if m.api_key in WITHOUT_REFERENCE}
    assert missing == expected


def test_versions_reach_the_reference_maximum() -> None:
    for m in ALL_MESSAGES:
        ref = reference_class(m)
        if ref is not None:
            assert m.valid_versions[1] == ref.max_version, m.name


@pytest.mark.parametrize("pair", REFERENCE_PAIRS, ids=_id)
def test_field_names_match_the_reference(pair: tuple[Message, int]) -> None:
    m, v = pair
    ref = reference_class(m)
    assert field_names(m.name, m.fields, v) == reference_field_names(ref._struct._fields, v)


@pytest.mark.parametrize("pair", REFERENCE_PAIRS, ids=_id)
@settings(
    max_examples=6,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data())
def test_encodes_and_decodes_like_kafka_python(
    pair: tuple[Message, int], data: st.DataObject
) -> None:
    m, v = pair
    value = data.draw(message_values(m, v))
    if m.name == "ApiVersionsResponse":
        # kafka-python (like Kafka's clients) reads an ApiVersions response carrying an
        # error as v0, the fallback format; that case has its own test.
        value["error_code"] = 0
    ours = m.encode(v, value)
    theirs = bytes(to_reference(m, v, value).encode(version=v))
    assert ours == theirs
    assert normalize(m.decode(v, theirs)) == normalize(value)
    decoded_by_them = reference_class(m).decode(ours, version=v)
    assert normalize(from_reference(m, v, decoded_by_them)) == normalize(value)
    assert b"".join(m.encode_parts(v, value)) == ours


@pytest.mark.parametrize("pair", ALL_PAIRS, ids=_id)
@settings(
    max_examples=4,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data())
def test_round_trips(pair: tuple[Message, int], data: st.DataObject) -> None:
    m, v = pair
    value = data.draw(message_values(m, v))
    encoded = m.encode(v, value)
    decoded, end = m.decode_from(v, encoded)
    assert end == len(encoded)
    assert normalize(decoded) == normalize(value)
    assert m.encode(v, decoded) == encoded


def _default_mismatches(mname: str, fields: list, kp_fields: dict, version: int, path: str) -> list:
    from kafpy.protocol.schema import Array, Struct
    from tests.unit.protocol.reference import OMITTED_OPERATIONS, RENAMES

    problems = []
    for f in fields:
        if not f.in_version(version):
            continue
        kp = kp_fields[RENAMES.get((mname, f.name), f.name)]
        ours = f.default_for(version)
        ft = f.type.element if isinstance(f.type, Array) else f.type
        if isinstance(ft, Struct):
            problems += _default_mismatches(
                mname, ft.fields, kp.fields, version, f"{path}{f.name}."
            )
        if "default" in kp._json:
            theirs = kp.default
            if kp._type_str == "bitfield":
                theirs = OMITTED_OPERATIONS if theirs is None else theirs
        elif ours is None and f.nullable is not None and f.nullable[0] <= version <= f.nullable[1]:
            continue  # the agreed design: a nullable field without a default defaults to null
        else:
            theirs = kp.default
        if isinstance(f.type, Struct) and not f.is_tagged(version):
            continue  # an untagged struct defaults to a dict of its fields' defaults
        if ours != theirs:
            problems.append((f"{path}{f.name}", ours, theirs))
    return problems


@pytest.mark.parametrize("pair", REFERENCE_PAIRS, ids=_id)
def test_defaults_match_the_reference(pair: tuple[Message, int]) -> None:
    m, v = pair
    ref = reference_class(m)
    assert _default_mismatches(m.name, m.fields, ref._struct.fields, v, "") == []
