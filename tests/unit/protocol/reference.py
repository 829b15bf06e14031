"""The bridge to kafka-python 3.0.12's `kafka.protocol`, our reference implementation.

Builds kafka-python message objects from our dict values and turns their decoded
objects back into our dicts, so tests can compare bytes and values both ways.
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any

import kafka.protocol
from kafka.protocol.api_message import ApiMessage
from kafka.protocol.schemas.fields.codecs.types import BitField

from kafpy.protocol.schema import Array, Field, Message, Struct

OMITTED_OPERATIONS = -(2**31)

# kafka-python renames a few fields of its schemas (and reads them as bit sets).
RENAMES: dict[tuple[str, str], str] = {
    ("MetadataResponse", "topic_authorized_operations"): "authorized_operations",
    ("MetadataResponse", "cluster_authorized_operations"): "authorized_operations",
    ("DescribeGroupsResponse", "authorized_operations"): "authorized_operations",
    ("DescribeClusterResponse", "cluster_authorized_operations"): "authorized_operations",
}


def _load_classes() -> dict[str, type]:
    for mod in pkgutil.walk_packages(kafka.protocol.__path__, "kafka.protocol."):
        if ".old" in mod.name or "generate_stubs" in mod.name:
            continue
        importlib.import_module(mod.name)
    found: dict[str, type] = {}
    stack = list(ApiMessage.__subclasses__())
    while stack:
        cls = stack.pop()
        stack.extend(cls.__subclasses__())
        if getattr(cls, "_class_version", None) is None and getattr(cls, "_json", None):
            found[cls._json["name"]] = cls
    return found


CLASSES = _load_classes()


def reference_class(message: Message) -> type | None:
    return CLASSES.get(message.name)


def _kp_name(message_name: str, name: str) -> str:
    return RENAMES.get((message_name, name), name)


def _is_bitfield(kp_field: Any) -> bool:
    return getattr(kp_field, "_type_str", None) == "bitfield"


def to_reference(message: Message, version: int, value: dict) -> Any:
    """A kafka-python object of `message` in `version` holding `value`."""
    cls = CLASSES[message.name]
    kwargs = _to_kwargs(message.name, message.fields, cls._struct.fields, version, value)
    return cls[version](**kwargs)


def _to_kwargs(mname: str, fields: list[Field], kp_fields: dict, version: int, value: dict) -> dict:
    kwargs = {}
    for f in fields:
        if not f.in_version(version) or f.name not in value:
            continue
        kp_field = kp_fields[_kp_name(mname, f.name)]
        kwargs[kp_field.name] = _to_ref_value(mname, f, kp_field, version, value[f.name])
    return kwargs


def _to_ref_value(mname: str, f: Field, kp_field: Any, version: int, v: Any) -> Any:
    if v is None:
        return None
    if isinstance(f.type, Struct):
        sub = _to_kwargs(mname, f.type.fields, kp_field.fields, version, v)
        return kp_field.data_class(version=version, **sub)
    if isinstance(f.type, Array) and isinstance(f.type.element, Struct):
        return [
            kp_field.data_class(
                version=version,
                **_to_kwargs(mname, f.type.element.fields, kp_field.fields, version, item),
            )
            for item in v
        ]
    if _is_bitfield(kp_field):
        return None if v == OMITTED_OPERATIONS else BitField.from_32_bit_field(v)
    return v


def from_reference(message: Message, version: int, obj: Any) -> dict:
    """Our dict for a kafka-python object of `message` (as decoded by kafka-python)."""
    return _from_struct(message.name, message.fields, obj, version)


def _from_struct(mname: str, fields: list[Field], obj: Any, version: int) -> dict:
    out = {}
    for f in fields:
        if not f.in_version(version):
            continue
        kp_name = _kp_name(mname, f.name)
        v = getattr(obj, kp_name)
        kp_field = obj._struct.fields[kp_name]
        out[f.name] = _from_ref_value(mname, f, kp_field, version, v)
    return out


def _from_ref_value(mname: str, f: Field, kp_field: Any, version: int, v: Any) -> Any:
    if v is None:
        if _is_bitfield(kp_field):
            return OMITTED_OPERATIONS
        return None
    if isinstance(f.type, Struct):
        return _from_struct(mname, f.type.fields, v, version)
    if isinstance(f.type, Array) and isinstance(f.type.element, Struct):
        return [_from_struct(mname, f.type.element.fields, item, version) for item in v]
    if _is_bitfield(kp_field):
        raw = BitField.to_32_bit_field(v)
        return raw - 2**32 if raw >= 2**31 else raw
    if isinstance(v, memoryview):
        return v.tobytes()
    return v


def field_names(mname: str, fields: list[Field], version: int) -> list:
    """Our field-name tree of a version, in kafka-python's names."""
    out: list = []
    for f in fields:
        if not f.in_version(version):
            continue
        ft = f.type
        if isinstance(ft, Array):
            ft = ft.element
        sub = field_names(mname, ft.fields, version) if isinstance(ft, Struct) else None
        out.append((_kp_name(mname, f.name), sub))
    return out


def reference_field_names(kp_fields: Any, version: int) -> list:
    """kafka-python's field-name tree of a version."""
    out: list = []
    for kp_field in kp_fields:
        if not kp_field.for_version_q(version):
            continue
        sub = kp_field._fields if (kp_field.is_struct() or kp_field.is_struct_array()) else None
        out.append((kp_field.name, reference_field_names(sub, version) if sub else None))
    return out
