"""JSON schemas: validity through the `jsonschema` library, and Confluent's compatibility
rules for them.

Confluent decides JSON Schema compatibility by listing the differences from the writer's
schema (`original`) to the reader's (`update`) and accepting the change when each
difference is one of its compatible kinds. This module keeps Confluent's difference names
and its core rules:

- types: a type may be widened (integer to number, a type to a union holding it) but not
  narrowed or changed; an empty schema reads anything, and anything reads `false`'s data;
- objects under an open content model (additional properties allowed, no schema for them):
  removing a property is compatible, adding one is not (old data may hold it with any
  value) unless its schema is empty; under a closed model (additionalProperties false or a
  schema): adding an optional property is compatible, adding a required one is not unless it
  has a default, removing one is not; requiring a property that was optional is not;
  allowing additional properties is, forbidding them is not;
- strings, numbers and arrays: loosening a bound (maxLength, minimum, maxItems, ...) is
  compatible, adding or tightening one is not; enums may gain values, not lose them;
- combined schemas: anyOf/oneOf may gain branches, not lose them; allOf may lose them.

Local `$ref`s (`#/...`) are followed; other references are compared by their text.
"""

from __future__ import annotations

import json
from typing import Any

from jsonschema.exceptions import SchemaError
from jsonschema.validators import Draft7Validator, validator_for

from kafpy.schema_registry.avro_schema import InvalidSchemaError
from kafpy.schema_registry.compatibility import ParsedSchema

JSON = "JSON"

COMPATIBLE_CHANGES = frozenset(
    {
        "ID_CHANGED", "DESCRIPTION_CHANGED", "TITLE_CHANGED", "DEFAULT_CHANGED",
        "TYPE_EXTENDED",
        "MAX_LENGTH_INCREASED", "MAX_LENGTH_REMOVED", "MIN_LENGTH_DECREASED",
        "MIN_LENGTH_REMOVED", "PATTERN_REMOVED",
        "MAXIMUM_INCREASED", "MAXIMUM_REMOVED", "MINIMUM_DECREASED", "MINIMUM_REMOVED",
        "EXCLUSIVE_MAXIMUM_INCREASED", "EXCLUSIVE_MAXIMUM_REMOVED",
        "EXCLUSIVE_MINIMUM_DECREASED", "EXCLUSIVE_MINIMUM_REMOVED",
        "MULTIPLE_OF_REDUCED", "MULTIPLE_OF_REMOVED",
        "REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED", "REQUIRED_ATTRIBUTE_REMOVED",
        "MAX_PROPERTIES_INCREASED", "MAX_PROPERTIES_REMOVED",
        "MIN_PROPERTIES_DECREASED", "MIN_PROPERTIES_REMOVED",
        "ADDITIONAL_PROPERTIES_ADDED", "ADDITIONAL_PROPERTIES_EXTENDED",
        "PROPERTY_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL",
        "REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_UNOPEN_CONTENT_MODEL",
        "OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL",
        "PROPERTY_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL",
        "PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL",
        "MAX_ITEMS_INCREASED", "MAX_ITEMS_REMOVED", "MIN_ITEMS_DECREASED", "MIN_ITEMS_REMOVED",
        "UNIQUE_ITEMS_REMOVED",
        "ENUM_ARRAY_EXTENDED", "COMBINED_TYPE_EXTENDED", "PRODUCT_TYPE_NARROWED",
        "SUM_TYPE_EXTENDED", "NOT_TYPE_NARROWED",
    }
)  # fmt: skip
"""The kinds of difference (writer to reader) that keep data readable (Confluent's names)."""

_TYPE_KEYWORDS = {
    "object": ("properties", "required", "additionalProperties", "patternProperties",
               "maxProperties", "minProperties", "dependencies", "propertyNames"),
    "array": ("items", "additionalItems", "maxItems", "minItems", "uniqueItems", "contains"),
    "string": ("maxLength", "minLength", "pattern", "format"),
    "number": ("maximum", "minimum", "exclusiveMaximum", "exclusiveMinimum", "multipleOf"),
}  # fmt: skip
_COMBINERS = ("allOf", "anyOf", "oneOf")
_BOUNDS = {
    # keyword: (difference prefix, whether a larger value is looser)
    "maxLength": ("MAX_LENGTH", True), "minLength": ("MIN_LENGTH", False),
    "maximum": ("MAXIMUM", True), "minimum": ("MINIMUM", False),
    "exclusiveMaximum": ("EXCLUSIVE_MAXIMUM", True),
    "exclusiveMinimum": ("EXCLUSIVE_MINIMUM", False),
    "maxItems": ("MAX_ITEMS", True), "minItems": ("MIN_ITEMS", False),
    "maxProperties": ("MAX_PROPERTIES", True), "minProperties": ("MIN_PROPERTIES", False),
}  # fmt: skip


class JsonSchema:
    """A parsed JSON schema (draft 4, 6, 7 or later, as its `$schema` says; draft 7 if it
    does not)."""

    schema_type = JSON

    def __init__(self, text: str) -> None:
        try:
            raw = json.loads(text)
        except ValueError as e:
            raise InvalidSchemaError(f"Invalid schema: not JSON ({e})") from None
        if not isinstance(raw, dict | bool):
            raise InvalidSchemaError("Invalid schema: a JSON schema is an object or a boolean")
        try:
            validator_for(raw, default=Draft7Validator).check_schema(raw)
        except SchemaError as e:
            raise InvalidSchemaError(f"Invalid schema: {e.message}") from None
        self.raw: Any = raw
        self.text = json.dumps(raw, separators=(",", ":"), ensure_ascii=False)
        self.canonical = json.dumps(raw, sort_keys=True, separators=(",", ":"))

    def read_errors(self, writer: ParsedSchema) -> list[str]:
        assert isinstance(writer, JsonSchema)
        differences = _Diff(writer.raw, self.raw).compare(writer.raw, self.raw, "#")
        return [f"{kind} at {path}" for kind, path in differences if kind not in COMPATIBLE_CHANGES]


def _types(schema: dict[str, Any]) -> list[str]:
    """The types a schema names, or infers from its keywords."""
    declared = schema.get("type")
    if isinstance(declared, str):
        return [declared]
    if isinstance(declared, list):
        return [t for t in declared if isinstance(t, str)]
    return [t for t, words in _TYPE_KEYWORDS.items() if any(w in schema for w in words)]


class _Diff:
    """The differences from an original (writer) schema to an update (reader)."""

    def __init__(self, original_root: Any, update_root: Any) -> None:
        self.roots = (original_root, update_root)
        self.visiting: set[tuple[int, int]] = set()

    def _deref(self, schema: Any, root: Any) -> Any:
        seen = 0
        while isinstance(schema, dict) and isinstance(schema.get("$ref"), str):
            ref = schema["$ref"]
            if not ref.startswith("#") or seen > 32:
                return schema
            target = root
            for part in [p for p in ref[1:].split("/") if p]:
                part = part.replace("~1", "/").replace("~0", "~")
                if isinstance(target, dict) and part in target:
                    target = target[part]
                else:
                    return schema
            schema, seen = target, seen + 1
        return schema

    def _normalize(self, schema: Any, root: Any) -> Any:
        schema = self._deref(schema, root)
        if schema is True or schema == {}:
            return {}
        return schema

    def compare(self, original: Any, update: Any, path: str) -> list[tuple[str, str]]:
        original = self._normalize(original, self.roots[0])
        update = self._normalize(update, self.roots[1])
        key = (id(original), id(update))
        if key in self.visiting:
            return []
        self.visiting.add(key)
        try:
            return self._compare(original, update, path)
        finally:
            self.visiting.discard(key)

    def _compatible(self, original: Any, update: Any, path: str) -> bool:
        return all(k in COMPATIBLE_CHANGES for k, _ in self.compare(original, update, path))

    def _compare(self, original: Any, update: Any, path: str) -> list[tuple[str, str]]:
        if original is False or update == {}:
            return []
        if original == {} or update is False:
            return [("TYPE_CHANGED", path)]
        if "$ref" in original or "$ref" in update:
            same = original.get("$ref") == update.get("$ref")
            return [] if same else [("TYPE_CHANGED", path)]
        original_combined = next((c for c in _COMBINERS if c in original), None)
        update_combined = next((c for c in _COMBINERS if c in update), None)
        if original_combined is None and update_combined in ("anyOf", "oneOf"):
            for i, branch in enumerate(update[update_combined]):
                if self._compatible(original, branch, f"{path}/{update_combined}/{i}"):
                    return [("SUM_TYPE_EXTENDED", path)]
            return [("TYPE_CHANGED", path)]
        if original_combined is not None or update_combined is not None:
            return self._combined(original, update, original_combined, update_combined, path)
        if "not" in original or "not" in update:
            if "not" in original and "not" in update:
                inner = self.compare(update["not"], original["not"], f"{path}/not")
                return [("NOT_TYPE_NARROWED", path)] if not inner else [("NOT_TYPE_EXTENDED", path)]
            return [("TYPE_CHANGED", path)]
        if "enum" in original or "enum" in update:
            return self._enum(original, update, path)
        out: list[tuple[str, str]] = []
        for word, kind in (("$id", "ID"), ("id", "ID"), ("title", "TITLE"),
                           ("description", "DESCRIPTION"), ("default", "DEFAULT")):  # fmt: skip
            if original.get(word) != update.get(word):
                out.append((f"{kind}_CHANGED", path))
        original_types, update_types = _types(original), _types(update)
        widened = set(original_types) <= set(update_types) or (
            set(original_types) <= set(update_types) | {"integer"} and "number" in update_types
        )
        if set(original_types) != set(update_types):
            if not original_types or not update_types:
                out.append(("TYPE_CHANGED", path))
            else:
                out.append(("TYPE_EXTENDED" if widened else "TYPE_NARROWED", path))
            if not set(original_types) & (set(update_types) | {"integer"}):
                return out
        out.extend(self._bounds(original, update, path))
        if original.get("pattern") != update.get("pattern"):
            if "pattern" not in update:
                out.append(("PATTERN_REMOVED", path))
            else:
                out.append(
                    ("PATTERN_ADDED" if "pattern" not in original else "PATTERN_CHANGED", path)
                )
        if original.get("multipleOf") != update.get("multipleOf"):
            if "multipleOf" not in update:
                out.append(("MULTIPLE_OF_REMOVED", path))
            elif "multipleOf" not in original:
                out.append(("MULTIPLE_OF_ADDED", path))
            elif original["multipleOf"] % update["multipleOf"] == 0:
                out.append(("MULTIPLE_OF_REDUCED", path))
            else:
                out.append(("MULTIPLE_OF_CHANGED", path))
        if original.get("uniqueItems", False) != update.get("uniqueItems", False):
            out.append(
                (
                    "UNIQUE_ITEMS_ADDED" if update.get("uniqueItems") else "UNIQUE_ITEMS_REMOVED",
                    path,
                )
            )
        if "object" in original_types and "object" in update_types:
            out.extend(self._object(original, update, path))
        if "array" in original_types and "array" in update_types:
            original_items, update_items = original.get("items", {}), update.get("items", {})
            if isinstance(original_items, dict | bool) and isinstance(update_items, dict | bool):
                out.extend(self.compare(original_items, update_items, f"{path}/items"))
            elif original_items != update_items:
                out.append(("TYPE_CHANGED", f"{path}/items"))
        return out

    def _bounds(
        self, original: dict[str, Any], update: dict[str, Any], path: str
    ) -> list[tuple[str, str]]:
        out = []
        for word, (name, larger_is_looser) in _BOUNDS.items():
            before, after = original.get(word), update.get(word)
            if before == after or isinstance(before, bool) or isinstance(after, bool):
                continue
            if after is None:
                out.append((f"{name}_REMOVED", f"{path}/{word}"))
            elif before is None:
                out.append((f"{name}_ADDED", f"{path}/{word}"))
            elif (after > before) == larger_is_looser:
                out.append(
                    (f"{name}_{'INCREASED' if larger_is_looser else 'DECREASED'}", f"{path}/{word}")
                )
            else:
                out.append(
                    (f"{name}_{'DECREASED' if larger_is_looser else 'INCREASED'}", f"{path}/{word}")
                )
        return out

    def _enum(
        self, original: dict[str, Any], update: dict[str, Any], path: str
    ) -> list[tuple[str, str]]:
        if "enum" not in update:
            return (
                [("ENUM_ARRAY_EXTENDED", path)]
                if not _types(update) or set(_types(update)) >= set(_types(original))
                else [("TYPE_CHANGED", path)]
            )
        if "enum" not in original:
            return [("TYPE_CHANGED", path)]
        before, after = original["enum"], update["enum"]
        if before == after:
            return []
        if all(v in after for v in before):
            return [("ENUM_ARRAY_EXTENDED", path)]
        if all(v in before for v in after):
            return [("ENUM_ARRAY_NARROWED", path)]
        return [("ENUM_ARRAY_CHANGED", path)]

    def _combined(
        self,
        original: dict[str, Any],
        update: dict[str, Any],
        original_combined: str | None,
        update_combined: str | None,
        path: str,
    ) -> list[tuple[str, str]]:
        if original_combined is None or update_combined is None:
            # a singleton combination is its one branch
            if original_combined is not None and len(original[original_combined]) == 1:
                return self.compare(original[original_combined][0], update, path)
            if update_combined is not None and len(update[update_combined]) == 1:
                return self.compare(original, update[update_combined][0], path)
            return [("TYPE_CHANGED", path)]
        if original_combined != update_combined:
            return [("COMBINED_TYPE_CHANGED", path)]
        before, after = original[original_combined], update[update_combined]
        sub = f"{path}/{original_combined}"
        if original_combined == "allOf":
            # every branch the reader keeps must accept what some writer branch allowed
            unmatched = [
                j for j, b in enumerate(after)
                if not any(self._compatible(a, b, f"{sub}/{j}") for a in before)
            ]  # fmt: skip
            if unmatched:
                return [("PRODUCT_TYPE_EXTENDED", sub)]
            return [("PRODUCT_TYPE_NARROWED", sub)] if len(after) < len(before) else []
        unmatched = [
            i for i, a in enumerate(before)
            if not any(self._compatible(a, b, f"{sub}/{i}") for b in after)
        ]  # fmt: skip
        if unmatched:
            return [("SUM_TYPE_NARROWED", sub)]
        return [("SUM_TYPE_EXTENDED", sub)] if len(after) > len(before) else []

    def _object(
        self, original: dict[str, Any], update: dict[str, Any], path: str
    ) -> list[tuple[str, str]]:
        out: list[tuple[str, str]] = []
        before = original.get("properties", {})
        after = update.get("properties", {})
        before_required = set(original.get("required", ()))
        after_required = set(update.get("required", ()))
        for name in before:
            if name in after:
                if name in before_required and name not in after_required:
                    out.append(("REQUIRED_ATTRIBUTE_REMOVED", f"{path}/required/{name}"))
                elif name not in before_required and name in after_required:
                    with_default = isinstance(after[name], dict) and "default" in after[name]
                    kind = (
                        "REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED"
                        if with_default
                        else "REQUIRED_ATTRIBUTE_ADDED"
                    )
                    out.append((kind, f"{path}/required/{name}"))
        for name in sorted(set(before) | set(after)):
            where = f"{path}/properties/{name}"
            if name not in after:
                if _open(update):
                    out.append(("PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL", where))
                elif before[name] is False:
                    out.append(("PROPERTY_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL", where))
                else:
                    out.append(("PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL", where))
            elif name not in before:
                if _open(original):
                    empty = self._normalize(after[name], self.roots[1]) == {}
                    kind = "PROPERTY_WITH_EMPTY_SCHEMA" if empty else "PROPERTY"
                    out.append((f"{kind}_ADDED_TO_OPEN_CONTENT_MODEL", where))
                elif name in after_required:
                    with_default = isinstance(after[name], dict) and "default" in after[name]
                    kind = "REQUIRED_PROPERTY_WITH_DEFAULT" if with_default else "REQUIRED_PROPERTY"
                    out.append((f"{kind}_ADDED_TO_UNOPEN_CONTENT_MODEL", where))
                else:
                    out.append(("OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL", where))
            else:
                out.extend(self.compare(before[name], after[name], where))
        before_extra = original.get("additionalProperties", True)
        after_extra = update.get("additionalProperties", True)
        where = f"{path}/additionalProperties"
        if (before_extra is not False) != (after_extra is not False):
            out.append(
                (
                    "ADDITIONAL_PROPERTIES_ADDED"
                    if after_extra is not False
                    else "ADDITIONAL_PROPERTIES_REMOVED",
                    where,
                )
            )
        elif before_extra is True and isinstance(after_extra, dict) and after_extra:
            out.append(("ADDITIONAL_PROPERTIES_NARROWED", where))
        elif after_extra is True and isinstance(before_extra, dict) and before_extra:
            out.append(("ADDITIONAL_PROPERTIES_EXTENDED", where))
        elif isinstance(before_extra, dict) and isinstance(after_extra, dict):
            out.extend(self.compare(before_extra, after_extra, where))
        return out


def _open(schema: dict[str, Any]) -> bool:
    """An open content model: additional properties allowed, without a schema for them."""
    extra = schema.get("additionalProperties", True)
    return not schema.get("patternProperties") and (extra is True or extra == {})
