"""Hypothesis strategies generating message values from our schemas, per version."""

from __future__ import annotations

import uuid
from typing import Any

from hypothesis import strategies as st

from kafpy.protocol.schema import Field, Message, Struct

_INTS = {
    "int8": st.integers(-(2**7), 2**7 - 1),
    "int16": st.integers(-(2**15), 2**15 - 1),
    "uint16": st.integers(0, 2**16 - 1),
    "int32": st.integers(-(2**31), 2**31 - 1),
    "int64": st.integers(-(2**63), 2**63 - 1),
}

_TEXT = st.text(max_size=12)
_BYTES = st.binary(max_size=24)
_UUIDS = st.one_of(st.none(), st.builds(lambda i: uuid.UUID(int=i), st.integers(1, 2**128 - 1)))


def _primitive(name: str) -> st.SearchStrategy[Any]:
    if name in _INTS:
        return _INTS[name]
    if name == "float64":
        return st.floats(allow_nan=False)
    if name == "bool":
        return st.booleans()
    if name == "uuid":
        return _UUIDS
    if name == "string":
        return _TEXT
    if name in ("bytes", "records"):
        return _BYTES
    raise ValueError(name)


def field_strategy(field: Field, version: int) -> st.SearchStrategy[Any]:
    ft = field.type
    nullable = field.nullable is not None and field.nullable[0] <= version <= field.nullable[1]
    if isinstance(ft, str):
        base = _primitive(ft)
    elif isinstance(ft, Struct):
        base = struct_strategy(ft.fields, version)
        if field.is_tagged(version):
            nullable = True  # an absent tagged struct is None
    else:
        element = ft.element
        inner = (
            _primitive(element)
            if isinstance(element, str)
            else struct_strategy(element.fields, version)
        )
        base = st.lists(inner, max_size=3)
    return st.one_of(st.none(), base) if nullable else base


def struct_strategy(fields: list[Field], version: int) -> st.SearchStrategy[dict]:
    present = [f for f in fields if f.in_version(version)]
    return st.fixed_dictionaries({f.name: field_strategy(f, version) for f in present})


def message_values(message: Message, version: int) -> st.SearchStrategy[dict]:
    return struct_strategy(message.fields, version)


def normalize(value: Any) -> Any:
    """Records memoryviews as bytes, recursively, for comparisons."""
    if isinstance(value, memoryview):
        return value.tobytes()
    if isinstance(value, dict):
        return {k: normalize(v) for k, v in value.items()}
    if isinstance(value, list):
        return [normalize(v) for v in value]
    return value
