"""KafkaSchemaRegistry: subjects, versions, ids, compatibility levels and modes, kept in
`_schemas` through the KafkaStore (Confluent's KafkaSchemaRegistry, single instance).

The state is what the store has applied, in topic order; every change is a record written
to the topic and applied when read back, so a restarted registry rebuilds the same state
with the same ids. Writes are serialized by one lock: a registration reads the state,
checks compatibility, picks the id and version, writes, and only then lets the next one
in. Ids are global: a schema registered under several subjects keeps one id, and a new
schema gets the highest id seen plus one.
"""

from __future__ import annotations

import asyncio
import dataclasses
import enum
from collections.abc import Iterable
from typing import Any

from kafpy.client.kafka_client import KafkaClient
from kafpy.common.errors import KafkaError
from kafpy.common.logger import component_logger
from kafpy.schema_registry import errors
from kafpy.schema_registry.avro_schema import AVRO, AvroSchema, InvalidSchemaError
from kafpy.schema_registry.compatibility import (
    CompatibilityLevel,
    ParsedSchema,
    compatibility_errors,
)
from kafpy.schema_registry.json_schema import JSON, JsonSchema
from kafpy.schema_registry.kafka_store import KafkaStore, StoreInitError
from kafpy.schema_registry.leader_elector import KafkaGroupLeaderElector, SchemaRegistryIdentity
from kafpy.schema_registry.schema_registry_config import SchemaRegistryConfig
from kafpy.schema_registry.schema_registry_records import (
    ConfigValue,
    DeleteSubjectValue,
    KeyType,
    ModeValue,
    SchemaReference,
    SchemaRegistryKey,
    SchemaRegistryRecordError,
    SchemaRegistryValue,
    SchemaValue,
)

SCHEMA_TYPES = (JSON, AVRO)
"""The schema types served, in the order GET /schemas/types lists them."""
REFUSED_SCHEMA_TYPES = {"PROTOBUF": "kafpy has no Protobuf schema parser"}
MAX_VERSION = 2**31 - 1


class Mode(enum.Enum):
    """What a subject (or the registry) accepts: READWRITE, READONLY (no writes),
    READONLY_OVERRIDE, IMPORT (registrations carry their ids and versions)."""

    READWRITE = "READWRITE"
    READONLY = "READONLY"
    READONLY_OVERRIDE = "READONLY_OVERRIDE"
    IMPORT = "IMPORT"


def schema_json(value: SchemaValue) -> dict[str, Any]:
    """A version as the REST API shows it (Confluent's Schema entity)."""
    out: dict[str, Any] = {"subject": value.subject, "version": value.version, "id": value.id}
    if value.schema_type != AVRO:
        out["schemaType"] = value.schema_type
    if value.references:
        out["references"] = [r.as_json() for r in value.references]
    out["schema"] = value.schema
    return out


def parse_references(raw: object) -> tuple[SchemaReference, ...]:
    """A request's `references`; RestError 42201 when they are not name/subject/version."""
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise errors.invalid_schema("Invalid schema: references must be a list")
    refs = []
    for r in raw:
        if (
            not isinstance(r, dict)
            or not isinstance(r.get("name"), str)
            or not isinstance(r.get("subject"), str)
            or not isinstance(r.get("version"), int)
        ):
            raise errors.invalid_schema(
                f"Invalid schema: reference {r!r} must have a name, a subject and a version"
            )
        refs.append(SchemaReference(r["name"], r["subject"], r["version"]))
    return tuple(refs)


def parse_version(version: str, *, allow_latest: bool = True) -> int:
    """A version path parameter: 1..2^31-1, or "latest" / -1 as -1; RestError 42202."""
    text = version.strip()
    if allow_latest and text.lower() == "latest":
        return -1
    try:
        number = int(text)
    except ValueError:
        raise errors.invalid_version(version) from None
    if number == -1 and allow_latest:
        return -1
    if not 1 <= number <= MAX_VERSION:
        raise errors.invalid_version(version)
    return number


class KafkaSchemaRegistry:
    """The registry's state and operations; every operation raises RestError for what it
    refuses (Confluent's codes and messages)."""

    def __init__(self, config: SchemaRegistryConfig, store: KafkaStore | None = None) -> None:
        self.config = config
        self.store = store or KafkaStore(config, self.apply)
        self.versions: dict[str, dict[int, SchemaValue]] = {}
        self.by_id: dict[int, SchemaValue] = {}
        self.id_holders: dict[int, set[tuple[str, int]]] = {}
        self.configs: dict[str | None, CompatibilityLevel] = {}
        self.modes: dict[str | None, Mode] = {}
        self.max_id = 0
        self._parsed: dict[tuple[str, str, tuple[SchemaReference, ...]], ParsedSchema] = {}
        # (type, canonical form, references) -> id, for the schemas applied and indexed
        self._ids_by_form: dict[tuple[str, str, tuple[SchemaReference, ...]], list[int]] = {}
        self._unindexed: list[SchemaValue] = []
        self._write_lock = asyncio.Lock()
        self.elector: KafkaGroupLeaderElector | None = None
        self.identity: SchemaRegistryIdentity | None = None
        self.leader: SchemaRegistryIdentity | None = None
        """The instance that writes (None: unknown); with no identity, this one."""
        self._log = component_logger(__name__, "KafkaSchemaRegistry")

    async def init(self) -> None:
        """Read `_schemas` to its end, then index what it held (parsing each schema once),
        so that the first look-ups do not pay for it."""
        await self.store.init()
        self._index()
        self._log.info(
            f"Loaded {sum(len(v) for v in self.versions.values())} versions of "
            f"{len(self.versions)} subjects, {len(self.by_id)} schema ids"
        )

    async def elect(self, identity: SchemaRegistryIdentity) -> None:
        """Join the registries' group as `identity` and wait for the first leader election
        (at most kafkastore.init.timeout.ms)."""
        self.identity = identity
        client = KafkaClient(
            self.config.bootstrap_servers,
            client_id="kafpy-schema-registry-elector",
            security=self.config.security,
        )
        self.elector = KafkaGroupLeaderElector(
            client, self.config.group_id, identity, self.set_leader
        )
        try:
            async with asyncio.timeout(self.config.init_timeout_ms / 1000):
                await self.elector.start()
                await self.elector.wait_assigned()
        except TimeoutError:
            raise StoreInitError(
                f"No leader elected in group {self.config.group_id} within "
                f"{self.config.init_timeout_ms} ms (kafkastore.init.timeout.ms)"
            ) from None
        except KafkaError as e:
            raise StoreInitError(f"Cannot join group {self.config.group_id}: {e}") from None

    @property
    def is_leader(self) -> bool:
        """Whether this instance writes: it leads the group, or it is in none (no identity:
        a registry used alone, as the unit tests do)."""
        if self.identity is None:
            return True
        return self.leader is not None and self.leader == self.identity

    async def set_leader(self, leader: SchemaRegistryIdentity | None) -> None:
        """The group's new leader (a LeaderListener). Becoming the leader, this instance
        first reads the topic to its end, so that ids and versions follow every write the
        previous leader made."""
        if leader is not None and leader == self.identity:
            async with self._write_lock:
                while True:
                    try:
                        await self.store.wait_until_caught_up()
                        break
                    except errors.RestError as e:  # a slow cluster: keep reading, then lead
                        self._log.warning(f"Becoming the leader: {e.message}; still reading")
                self.leader = leader
            self._log.info(f"This instance ({leader.url}) is the leader")
        else:
            self.leader = leader

    def _check_leader(self) -> None:
        if not self.is_leader:
            raise errors.unknown_leader()

    async def close(self) -> None:
        if self.elector is not None:
            await self.elector.close()
            await self.elector.client.close()
        await self.store.close()

    # --- applying the store's records ---

    def apply(self, key: SchemaRegistryKey, value: SchemaRegistryValue | None) -> None:
        """Apply one record of `_schemas` (a StoreUpdateHandler)."""
        if key.keytype is KeyType.SCHEMA:
            self._apply_schema(key, value)
        elif key.keytype is KeyType.CONFIG:
            self._apply_config(key, value)
        elif key.keytype is KeyType.MODE:
            self._apply_mode(key, value)
        elif key.keytype is KeyType.DELETE_SUBJECT and isinstance(value, DeleteSubjectValue):
            versions = self.versions.get(value.subject, {})
            for number, v in list(versions.items()):
                if number <= value.version and not v.deleted:
                    versions[number] = dataclasses.replace(v, deleted=True)

    def _apply_schema(self, key: SchemaRegistryKey, value: SchemaRegistryValue | None) -> None:
        assert key.subject is not None and key.version is not None
        subject, number = key.subject, key.version
        if value is not None:
            if not isinstance(value, SchemaValue):
                raise SchemaRegistryRecordError("the SCHEMA key has a value of another kind")
            if value.subject != subject or value.version != number or value.id < 0:
                raise SchemaRegistryRecordError(
                    f"the SCHEMA value ({value.subject} version {value.version} id {value.id}) "
                    f"does not match its key ({subject} version {number})"
                )
        old = self.versions.get(subject, {}).get(number)
        if old is not None:
            self._release_id(old.id, subject, number)
        if value is None:
            if old is not None:
                del self.versions[subject][number]
                if not self.versions[subject]:
                    del self.versions[subject]
            return
        self.versions.setdefault(subject, {})[number] = value
        self.id_holders.setdefault(value.id, set()).add((subject, number))
        self.by_id.setdefault(value.id, value)
        self._unindexed.append(value)
        self.max_id = max(self.max_id, value.id)

    def _release_id(self, schema_id: int, subject: str, number: int) -> None:
        holders = self.id_holders.get(schema_id)
        if holders is None:
            return
        holders.discard((subject, number))
        if not holders:
            del self.id_holders[schema_id]
            self.by_id.pop(schema_id, None)
        elif (self.by_id[schema_id].subject, self.by_id[schema_id].version) == (subject, number):
            s, n = min(holders)
            self.by_id[schema_id] = self.versions[s][n]

    def _apply_config(self, key: SchemaRegistryKey, value: SchemaRegistryValue | None) -> None:
        if value is None:
            self.configs.pop(key.subject, None)
            return
        level = (
            CompatibilityLevel.for_name(value.compatibility_level)
            if isinstance(value, ConfigValue)
            else None
        )
        if level is None:
            raise SchemaRegistryRecordError(
                f"the CONFIG value {value} is not a compatibility level"
            )
        self.configs[key.subject] = level

    def _apply_mode(self, key: SchemaRegistryKey, value: SchemaRegistryValue | None) -> None:
        if value is None:
            self.modes.pop(key.subject, None)
            return
        try:
            mode = Mode(value.mode) if isinstance(value, ModeValue) else None
        except ValueError:
            mode = None
        if mode is None:
            raise SchemaRegistryRecordError(f"the MODE value {value} is not a mode")
        self.modes[key.subject] = mode

    # --- parsing ---

    def parse(
        self, schema_type: str, text: str, references: tuple[SchemaReference, ...] = ()
    ) -> ParsedSchema:
        """The schema parsed (cached); RestError 42201 when it is invalid, of a type not
        served, or refers to a version that does not exist."""
        cache_key = (schema_type, text, references)
        parsed = self._parsed.get(cache_key)
        if parsed is not None:
            return parsed
        if not text.strip():
            raise errors.invalid_schema("Empty schema")
        if schema_type in REFUSED_SCHEMA_TYPES:
            raise errors.invalid_schema(
                f"Invalid schema type {schema_type}: {REFUSED_SCHEMA_TYPES[schema_type]}; "
                f"kafpy's schema registry serves {' and '.join(SCHEMA_TYPES)}"
            )
        if schema_type not in SCHEMA_TYPES:
            raise errors.invalid_schema(f"Invalid schema type {schema_type}")
        referenced: dict[str, Any] = {}
        for ref in references:
            target = self.versions.get(ref.subject, {}).get(ref.version)
            if target is None:
                raise errors.invalid_schema(
                    f"Invalid schema: reference '{ref.name}' names subject '{ref.subject}' "
                    f"version {ref.version}, which does not exist"
                )
            if schema_type == AVRO:
                if target.schema_type != AVRO:
                    raise errors.invalid_schema(
                        f"Invalid schema: reference '{ref.name}' is a {target.schema_type} schema"
                    )
                dep = self.parse(AVRO, target.schema, target.references)
                assert isinstance(dep, AvroSchema)
                referenced.update(dep.named)
        try:
            parsed = AvroSchema(text, referenced) if schema_type == AVRO else JsonSchema(text)
        except InvalidSchemaError as e:
            raise errors.invalid_schema(str(e)) from None
        self._parsed[cache_key] = parsed
        return parsed

    def _parse_stored(self, value: SchemaValue) -> ParsedSchema:
        return self.parse(value.schema_type, value.schema, value.references)

    def _same(
        self, parsed: ParsedSchema, refs: tuple[SchemaReference, ...], value: SchemaValue
    ) -> bool:
        if value.schema_type != parsed.schema_type or value.references != refs:
            return False
        try:
            return self._parse_stored(value).canonical == parsed.canonical
        except errors.RestError:
            return False

    def _ids_of(self, parsed: ParsedSchema, refs: tuple[SchemaReference, ...]) -> list[int]:
        """The ids this schema has under some subject (usually one; an import may have given
        it more), oldest first."""
        self._index()
        key = (parsed.schema_type, parsed.canonical, refs)
        # an id whose versions were all removed, or rewritten with another schema (by a
        # foreign writer of the topic), no longer stands for this schema
        ids = [
            i
            for i in self._ids_by_form.get(key, ())
            if i in self.by_id and self._same(parsed, refs, self.by_id[i])
        ]
        if ids:
            self._ids_by_form[key] = ids
        else:
            self._ids_by_form.pop(key, None)
        return ids

    def _index(self) -> None:
        """Index the schemas applied since the last time by their identifying form."""
        pending, self._unindexed = self._unindexed, []
        for value in pending:
            try:
                form = self._parse_stored(value).canonical
            except errors.RestError as e:
                # a stored schema this registry cannot parse is served by id, never matched
                self._log.warning(
                    f"Schema id {value.id} ({value.subject} version {value.version}) cannot "
                    f"be parsed: {e.message}"
                )
                continue
            ids = self._ids_by_form.setdefault((value.schema_type, form, value.references), [])
            if value.id not in ids:
                ids.append(value.id)

    def _versions_holding(
        self, subject: str, parsed: ParsedSchema, refs: tuple[SchemaReference, ...], deleted: bool
    ) -> list[SchemaValue]:
        """The subject's versions holding this schema (soft-deleted ones only if `deleted`)."""
        versions = self.versions.get(subject, {})
        found = [
            versions[n]
            for schema_id in self._ids_of(parsed, refs)
            for s, n in self.id_holders.get(schema_id, ())
            if s == subject and (deleted or not versions[n].deleted)
        ]
        return sorted(found, key=lambda v: v.version)

    # --- scopes ---

    def compatibility_level(self, subject: str | None) -> CompatibilityLevel:
        """The level that applies to `subject`: its own, else the global one, else the
        configured default."""
        return (
            self.configs.get(subject) or self.configs.get(None) or self.config.compatibility_level
        )

    def mode(self, subject: str | None) -> Mode:
        return self.modes.get(subject) or self.modes.get(None) or Mode.READWRITE

    def _check_writable(self, subject: str | None) -> None:
        if self.mode(subject) in (Mode.READONLY, Mode.READONLY_OVERRIDE):
            raise errors.operation_not_permitted(f"Subject {subject} is in read-only mode")

    # --- reads ---

    def subjects(self, deleted: bool = False) -> list[str]:
        return sorted(
            s
            for s, vs in self.versions.items()
            if any(deleted or not v.deleted for v in vs.values())
        )

    def schemas(
        self, prefix: str = "", deleted: bool = False, latest_only: bool = False
    ) -> list[SchemaValue]:
        """The versions of the subjects starting with `prefix`, by subject then version
        (GET /schemas)."""
        out: list[SchemaValue] = []
        for subject in sorted(s for s in self.versions if s.startswith(prefix)):
            values = [
                v for _, v in sorted(self.versions[subject].items()) if deleted or not v.deleted
            ]
            out.extend(values[-1:] if latest_only else values)
        return out

    def _visible(self, subject: str, deleted: bool) -> list[SchemaValue]:
        """The subject's versions in order (soft-deleted ones only if `deleted`);
        RestError 40401 when there are none."""
        values = [
            v for _, v in sorted(self.versions.get(subject, {}).items()) if deleted or not v.deleted
        ]
        if not values:
            raise errors.subject_not_found(subject)
        return values

    def list_versions(self, subject: str, deleted: bool = False) -> list[int]:
        return [v.version for v in self._visible(subject, deleted)]

    def get_version(self, subject: str, version: str, deleted: bool = False) -> SchemaValue:
        number = parse_version(version)
        values = self._visible(subject, deleted)
        if number == -1:
            return values[-1]
        for v in values:
            if v.version == number:
                return v
        raise errors.version_not_found(number)

    def schema_by_id(self, schema_id: int) -> SchemaValue:
        value = self.by_id.get(schema_id)
        if value is None:
            raise errors.schema_not_found(schema_id)
        return value

    def versions_of_id(self, schema_id: int, deleted: bool = False) -> list[SchemaValue]:
        self.schema_by_id(schema_id)
        holders = sorted(self.id_holders.get(schema_id, ()))
        values = [self.versions[s][n] for s, n in holders]
        return [v for v in values if deleted or not v.deleted]

    def referenced_by(self, subject: str, version: str) -> list[int]:
        target = self.get_version(subject, version, deleted=True)
        return sorted(
            {
                v.id
                for vs in self.versions.values()
                for v in vs.values()
                if any(r.subject == subject and r.version == target.version for r in v.references)
            }
        )

    def lookup(
        self,
        subject: str,
        schema_type: str,
        text: str,
        references: tuple[SchemaReference, ...],
        deleted: bool = False,
    ) -> SchemaValue:
        """The version of `subject` holding this schema (POST /subjects/{subject})."""
        parsed = self.parse(schema_type, text, references)
        versions = self.versions.get(subject, {})
        if not any(deleted or not v.deleted for v in versions.values()):
            raise errors.subject_not_found(subject)
        holding = self._versions_holding(subject, parsed, references, deleted)
        if not holding:
            raise errors.schema_not_found()
        return holding[-1]

    def compatibility(
        self,
        subject: str,
        version: str | None,
        schema_type: str,
        text: str,
        references: tuple[SchemaReference, ...],
    ) -> list[str]:
        """Why the schema is not compatible with `version` of the subject (None: with every
        version), at the subject's level; empty when it is."""
        if version is None:
            against = [
                v for _, v in sorted(self.versions.get(subject, {}).items()) if not v.deleted
            ]
        else:
            number = parse_version(version)
            values = [v for _, v in sorted(self.versions.get(subject, {}).items()) if not v.deleted]
            if number == -1:
                against = values[-1:]
            else:
                against = [v for v in values if v.version == number]
                if not against:
                    raise errors.version_not_found(number)
        parsed = self.parse(schema_type, text, references)
        level = self.compatibility_level(subject)
        previous = [self._parse_stored(v) for v in against]
        if version is not None and level.transitive:
            level = CompatibilityLevel(level.value.removesuffix("_TRANSITIVE"))
        return compatibility_errors(level, parsed, previous)

    # --- writes ---

    async def register(
        self,
        subject: str,
        schema_type: str,
        text: str,
        references: tuple[SchemaReference, ...],
        schema_id: int = -1,
        version: int = 0,
    ) -> int:
        """Register the schema under `subject` (POST /subjects/{subject}/versions); its id."""
        async with self._write_lock:
            self._check_leader()
            self._check_writable(subject)
            mode = self.mode(subject)
            importing = schema_id >= 0 or version > 0
            if importing and mode is not Mode.IMPORT:
                raise errors.operation_not_permitted(f"Subject {subject} is not in import mode")
            if not importing and mode is not Mode.READWRITE:
                raise errors.operation_not_permitted(f"Subject {subject} is not in read-write mode")
            parsed = self.parse(schema_type, text, references)
            versions = self.versions.get(subject, {})
            if not importing:
                holding = self._versions_holding(subject, parsed, references, deleted=False)
                if holding:
                    return holding[-1].id
                level = self.compatibility_level(subject)
                undeleted = [n for n, v in versions.items() if not v.deleted]
                against = sorted(undeleted) if level.transitive else [max(undeleted, default=0)]
                previous = [self._parse_stored(versions[n]) for n in against if n in versions]
                errors_found = compatibility_errors(level, parsed, previous)
                if errors_found:
                    raise errors.incompatible_schema(subject, errors_found)
            if schema_id >= 0:
                holder = self.by_id.get(schema_id)
                if holder is not None and not self._same(parsed, references, holder):
                    raise errors.operation_not_permitted(
                        f"Overwrite new schema with id {schema_id} is not permitted."
                    )
            else:
                ids = self._ids_of(parsed, references)
                schema_id = ids[0] if ids else self.max_id + 1
            if version <= 0:
                version = max(versions, default=0) + 1
            soft_deleted_same_id = [
                n
                for s, n in self.id_holders.get(schema_id, ())
                if s == subject and versions[n].deleted
            ]
            value = SchemaValue(
                subject, version, schema_id, parsed.text, parsed.schema_type, references
            )
            await self.store.put(SchemaRegistryKey.schema(subject, version), value)
            for number in sorted(soft_deleted_same_id):
                # as Confluent: a re-registered schema's soft-deleted versions go
                await self.store.put(SchemaRegistryKey.schema(subject, number), None)
            self._log.info(
                f"Registered schema id {schema_id} as version {version} of subject {subject}"
            )
            return schema_id

    def _references_to(
        self, subject: str, numbers: Iterable[int], *, undeleted_only: bool
    ) -> str | None:
        wanted = set(numbers)
        for vs in self.versions.values():
            for v in vs.values():
                if undeleted_only and v.deleted:
                    continue
                for r in v.references:
                    if r.subject == subject and r.version in wanted:
                        return str(SchemaRegistryKey.schema(subject, r.version))
        return None

    async def delete_version(self, subject: str, version: str, permanent: bool) -> int:
        number = parse_version(version)
        async with self._write_lock:
            self._check_leader()
            self._check_writable(subject)
            values = self._visible(subject, deleted=permanent)
            if number == -1:
                target = values[-1]
            else:
                found = [v for v in self._visible(subject, deleted=True) if v.version == number]
                if not found:
                    raise errors.version_not_found(number)
                target = found[0]
            key = SchemaRegistryKey.schema(subject, target.version)
            referenced = self._references_to(
                subject, [target.version], undeleted_only=not permanent
            )
            if not permanent:
                if target.deleted:
                    raise errors.version_soft_deleted(subject, target.version)
                if referenced:
                    raise errors.reference_exists(referenced)
                await self.store.put(key, dataclasses.replace(target, deleted=True))
            else:
                if not target.deleted:
                    raise errors.version_not_soft_deleted(subject, target.version)
                if referenced:
                    raise errors.reference_exists(referenced)
                await self.store.put(key, None)
            return target.version

    async def delete_subject(self, subject: str, permanent: bool) -> list[int]:
        async with self._write_lock:
            self._check_leader()
            self._check_writable(subject)
            values = [v for _, v in sorted(self.versions.get(subject, {}).items())]
            if not values:
                raise errors.subject_not_found(subject)
            undeleted = [v.version for v in values if not v.deleted]
            if not permanent:
                if not undeleted:
                    raise errors.subject_soft_deleted(subject)
                referenced = self._references_to(subject, undeleted, undeleted_only=True)
                if referenced:
                    raise errors.reference_exists(referenced)
                await self.store.put(
                    SchemaRegistryKey(KeyType.DELETE_SUBJECT, subject),
                    DeleteSubjectValue(subject, values[-1].version),
                )
                if subject in self.modes:
                    await self.store.put(SchemaRegistryKey(KeyType.MODE, subject), None)
                if subject in self.configs:
                    await self.store.put(SchemaRegistryKey(KeyType.CONFIG, subject), None)
                return undeleted
            if undeleted:
                raise errors.subject_not_soft_deleted(subject)
            all_versions = [v.version for v in values]
            referenced = self._references_to(subject, all_versions, undeleted_only=False)
            if referenced:
                raise errors.reference_exists(referenced)
            for number in all_versions:
                await self.store.put(SchemaRegistryKey.schema(subject, number), None)
            return all_versions

    async def set_compatibility(self, subject: str | None, level: CompatibilityLevel) -> None:
        async with self._write_lock:
            self._check_leader()
            self._check_writable(subject)
            await self.store.put(
                SchemaRegistryKey(KeyType.CONFIG, subject), ConfigValue(level.value)
            )

    async def delete_compatibility(self, subject: str | None) -> CompatibilityLevel:
        async with self._write_lock:
            self._check_leader()
            self._check_writable(subject)
            previous = self.configs.get(subject)
            if previous is None:
                if subject is None:
                    return self.compatibility_level(None)
                raise errors.subject_not_found(subject)
            await self.store.put(SchemaRegistryKey(KeyType.CONFIG, subject), None)
            return previous

    async def set_mode(self, subject: str | None, mode: Mode, force: bool) -> None:
        async with self._write_lock:
            self._check_leader()
            if not self.config.mode_mutability:
                raise errors.operation_not_permitted("Mode changes are not allowed")
            if mode is Mode.IMPORT and not force:
                has_schemas = bool(self.versions) if subject is None else subject in self.versions
                if has_schemas:
                    raise errors.operation_not_permitted(
                        "Cannot import since found existing subjects"
                    )
            await self.store.put(SchemaRegistryKey(KeyType.MODE, subject), ModeValue(mode.value))

    async def delete_mode(self, subject: str) -> Mode:
        async with self._write_lock:
            self._check_leader()
            if not self.config.mode_mutability:
                raise errors.operation_not_permitted("Mode changes are not allowed")
            previous = self.modes.get(subject)
            if previous is None:
                raise errors.subject_not_found(subject)
            await self.store.put(SchemaRegistryKey(KeyType.MODE, subject), None)
            return previous
