"""The REST API v1 of Confluent's Schema Registry, over aiohttp (Confluent's
SchemaRegistryRestApplication and its resources).

Answers are JSON with Confluent's content type `application/vnd.schemaregistry.v1+json`;
failures are `{"error_code": ..., "message": ...}` with Confluent's codes (errors.py), also
for an unknown path (404), a wrong method (405), a body that is not JSON (400) or is larger
than MAX_REQUEST_BYTES (413). Boolean query parameters are true only when they say "true"
in any case, as JAX-RS reads them (confluent-kafka's Python client sends "False"/"True").

Writes (registering, deleting, config and mode changes) are served by the group's leader
only: another instance forwards the request to the leader as it came and answers what the
leader answered, once it has read the leader's write itself (50004 while no leader is
known, 50003 when the leader cannot be reached). Reads are served by every instance.
"""

from __future__ import annotations

import functools
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import aiohttp
from aiohttp import web

from kafpy.common.logger import component_logger
from kafpy.schema_registry import errors
from kafpy.schema_registry.avro_schema import AVRO
from kafpy.schema_registry.compatibility import CompatibilityLevel
from kafpy.schema_registry.kafka_schema_registry import (
    SCHEMA_TYPES,
    KafkaSchemaRegistry,
    Mode,
    parse_references,
    schema_json,
)
from kafpy.schema_registry.schema_registry_config import MAX_REQUEST_BYTES

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
REGISTRY_KEY = web.AppKey("registry", KafkaSchemaRegistry)
FORWARDING_KEY = web.AppKey("forwarding", aiohttp.ClientSession)
FORWARDED_HEADER = "X-Kafpy-Forwarded"
"""Marks a request one instance forwarded to another, which never forwards it again."""
FORWARD_TIMEOUT_S = 30.0
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

_log = component_logger(__name__, "SchemaRegistryRestApplication")


def _json(body: Any, status: int = 200) -> web.Response:
    return web.Response(
        body=json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode(),
        status=status,
        content_type=CONTENT_TYPE,
    )


def _error(e: errors.RestError) -> web.Response:
    return _json(e.as_json(), e.status)


@web.middleware
async def _errors_as_json(request: web.Request, handler: Handler) -> web.StreamResponse:
    try:
        return await handler(request)
    except errors.RestError as e:
        return _error(e)
    except web.HTTPException as e:
        if e.status < 400:
            raise
        return _error(errors.http_error(e.status, f"HTTP {e.status} {e.reason}"))
    except Exception as e:  # a bug answers 500 in Confluent's shape, and is logged
        _log.exception(f"Error while serving {request.method} {request.path}")
        return _error(errors.RestError(500, 500, f"Internal Server Error: {e}"))


def _flag(request: web.Request, name: str) -> bool:
    return request.query.get(name, "").strip().lower() == "true"


def _registry(request: web.Request) -> KafkaSchemaRegistry:
    return request.app[REGISTRY_KEY]


async def _body(request: web.Request) -> dict[str, Any]:
    raw = await request.read()
    try:
        body = json.loads(raw) if raw.strip() else None
    except ValueError as e:
        raise errors.http_error(400, f"Unexpected request body: not JSON ({e})") from None
    if not isinstance(body, dict):
        raise errors.http_error(400, "The request body must be a JSON object")
    return body


def _schema_request(body: dict[str, Any]) -> tuple[str, str, Any]:
    """The schema, its type and its references from a RegisterSchemaRequest."""
    text = body.get("schema")
    if not isinstance(text, str) or not text.strip():
        raise errors.invalid_schema("Empty schema")
    schema_type = body.get("schemaType") or AVRO
    if not isinstance(schema_type, str):
        raise errors.invalid_schema(f"Invalid schema type {schema_type!r}")
    return schema_type, text, parse_references(body.get("references"))


def _id(request: web.Request) -> int:
    try:
        return int(request.match_info["id"])
    except ValueError:
        raise errors.http_error(404, "HTTP 404 Not Found") from None


def _leader_only(handler: Handler) -> Handler:
    """Serve a write here when this instance leads, else forward it to the leader."""

    @functools.wraps(handler)
    async def serve_or_forward(request: web.Request) -> web.StreamResponse:
        registry = _registry(request)
        if registry.is_leader:
            return await handler(request)
        leader = registry.leader
        if leader is None or FORWARDED_HEADER in request.headers:
            raise errors.unknown_leader()
        body = await request.read()
        try:
            async with request.app[FORWARDING_KEY].request(
                request.method,
                leader.url + request.raw_path,
                data=body or None,
                headers={
                    "Content-Type": CONTENT_TYPE,
                    "Accept": CONTENT_TYPE,
                    FORWARDED_HEADER: "1",
                },
            ) as answer:
                payload, status = await answer.read(), answer.status
        except (aiohttp.ClientError, TimeoutError) as e:
            raise errors.request_forwarding_failed(
                f"Error while forwarding {request.method} {request.path} to the leader "
                f"{leader.url}: {e or type(e).__name__}"
            ) from None
        if status < 300:
            await registry.store.wait_until_caught_up()  # answer what the leader wrote
        return web.Response(body=payload, status=status, content_type=CONTENT_TYPE)

    return serve_or_forward


async def _forwarding_session(app: web.Application) -> AsyncIterator[None]:
    timeout = aiohttp.ClientTimeout(total=FORWARD_TIMEOUT_S)
    async with aiohttp.ClientSession(timeout=timeout) as session:
        app[FORWARDING_KEY] = session
        yield


# --- root and schemas ---


async def root(request: web.Request) -> web.Response:
    return _json({})


async def schema_types(request: web.Request) -> web.Response:
    return _json(list(SCHEMA_TYPES))


async def list_schemas(request: web.Request) -> web.Response:
    values = _registry(request).schemas(
        request.query.get("subjectPrefix", ""),
        _flag(request, "deleted"),
        _flag(request, "latestOnly"),
    )
    offset, limit = _int_query(request, "offset", 0), _int_query(request, "limit", -1)
    values = values[offset : offset + limit if limit > 0 else None]
    return _json([schema_json(v) for v in values])


def _int_query(request: web.Request, name: str, default: int) -> int:
    try:
        return int(request.query.get(name, default))
    except ValueError:
        raise errors.http_error(404, "HTTP 404 Not Found") from None  # as JAX-RS answers


async def server_metadata_id(request: web.Request) -> web.Response:
    registry = _registry(request)
    clusters = {
        "kafka-cluster": registry.store.kafka_cluster_id,
        "schema-registry-cluster": registry.config.group_id,
    }
    return _json({"scope": {"path": [], "clusters": clusters}})


async def schema_by_id(request: web.Request) -> web.Response:
    registry = _registry(request)
    value = registry.schema_by_id(_id(request))
    out: dict[str, Any] = {}
    if value.schema_type != AVRO:
        out["schemaType"] = value.schema_type
    if value.references:
        out["references"] = [r.as_json() for r in value.references]
    out["schema"] = value.schema
    if _flag(request, "fetchMaxId"):
        out["maxId"] = registry.max_id
    return _json(out)


def _schema_only(text: str) -> web.Response:
    """A schema alone: its JSON (AVRO, JSON), or its text as stored (a foreign type)."""
    try:
        return _json(json.loads(text))
    except ValueError:
        return web.Response(text=text, content_type=CONTENT_TYPE)


async def schema_text_by_id(request: web.Request) -> web.Response:
    return _schema_only(_registry(request).schema_by_id(_id(request)).schema)


async def id_versions(request: web.Request) -> web.Response:
    values = _registry(request).versions_of_id(_id(request), _flag(request, "deleted"))
    return _json([{"subject": v.subject, "version": v.version} for v in values])


async def id_subjects(request: web.Request) -> web.Response:
    values = _registry(request).versions_of_id(_id(request), _flag(request, "deleted"))
    return _json(sorted({v.subject for v in values}))


# --- subjects ---


async def list_subjects(request: web.Request) -> web.Response:
    return _json(_registry(request).subjects(_flag(request, "deleted")))


async def list_versions(request: web.Request) -> web.Response:
    subject = request.match_info["subject"]
    return _json(_registry(request).list_versions(subject, _flag(request, "deleted")))


@_leader_only
async def register(request: web.Request) -> web.Response:
    subject = request.match_info["subject"]
    body = await _body(request)
    schema_type, text, refs = _schema_request(body)
    schema_id, version = body.get("id"), body.get("version")
    _log.info(
        f"Registering new schema: subject {subject}, version {version}, id {schema_id}, "
        f"type {schema_type}"
    )
    new_id = await _registry(request).register(
        subject,
        schema_type,
        text,
        refs,
        schema_id=schema_id if isinstance(schema_id, int) else -1,
        version=version if isinstance(version, int) else 0,
    )
    return _json({"id": new_id})


async def get_version(request: web.Request) -> web.Response:
    value = _registry(request).get_version(
        request.match_info["subject"], request.match_info["version"], _flag(request, "deleted")
    )
    return _json(schema_json(value))


async def get_version_schema(request: web.Request) -> web.Response:
    value = _registry(request).get_version(
        request.match_info["subject"], request.match_info["version"], _flag(request, "deleted")
    )
    return _schema_only(value.schema)


async def referenced_by(request: web.Request) -> web.Response:
    ids = _registry(request).referenced_by(
        request.match_info["subject"], request.match_info["version"]
    )
    return _json(ids)


@_leader_only
async def delete_version(request: web.Request) -> web.Response:
    subject, version = request.match_info["subject"], request.match_info["version"]
    _log.info(f"Deleting schema version {version} from subject {subject}")
    deleted = await _registry(request).delete_version(subject, version, _flag(request, "permanent"))
    return _json(deleted)


async def lookup(request: web.Request) -> web.Response:
    subject = request.match_info["subject"]
    schema_type, text, refs = _schema_request(await _body(request))
    value = _registry(request).lookup(subject, schema_type, text, refs, _flag(request, "deleted"))
    return _json(schema_json(value))


@_leader_only
async def delete_subject(request: web.Request) -> web.Response:
    subject = request.match_info["subject"]
    _log.info(f"Deleting subject {subject}")
    return _json(await _registry(request).delete_subject(subject, _flag(request, "permanent")))


# --- compatibility ---


async def test_compatibility(request: web.Request) -> web.Response:
    subject = request.match_info["subject"]
    version = request.match_info.get("version")
    verbose = _flag(request, "verbose")
    body = await _body(request)
    try:
        schema_type, text, refs = _schema_request(body)
        found = _registry(request).compatibility(subject, version, schema_type, text, refs)
    except errors.RestError as e:
        if not verbose or e.error_code != errors.INVALID_SCHEMA:
            raise
        found = [e.message]
    out: dict[str, Any] = {"is_compatible": not found}
    if verbose:
        out["messages"] = found
    return _json(out)


# --- config and mode ---


def _level(body: dict[str, Any]) -> CompatibilityLevel:
    level = CompatibilityLevel.for_name(body.get("compatibility"))
    if level is None:
        raise errors.invalid_compatibility_level()
    return level


async def get_top_level_config(request: web.Request) -> web.Response:
    return _json({"compatibilityLevel": _registry(request).compatibility_level(None).value})


@_leader_only
async def update_top_level_config(request: web.Request) -> web.Response:
    level = _level(await _body(request))
    await _registry(request).set_compatibility(None, level)
    return _json({"compatibility": level.value})


async def get_subject_config(request: web.Request) -> web.Response:
    subject = request.match_info["subject"]
    registry = _registry(request)
    level = (
        registry.compatibility_level(subject)
        if _flag(request, "defaultToGlobal")
        else registry.configs.get(subject)
    )
    if level is None:
        raise errors.subject_not_found(subject)
    return _json({"compatibilityLevel": level.value})


@_leader_only
async def update_subject_config(request: web.Request) -> web.Response:
    level = _level(await _body(request))
    await _registry(request).set_compatibility(request.match_info["subject"], level)
    return _json({"compatibility": level.value})


@_leader_only
async def delete_subject_config(request: web.Request) -> web.Response:
    previous = await _registry(request).delete_compatibility(request.match_info["subject"])
    return _json({"compatibilityLevel": previous.value})


@_leader_only
async def delete_top_level_config(request: web.Request) -> web.Response:
    previous = await _registry(request).delete_compatibility(None)
    return _json({"compatibilityLevel": previous.value})


def _mode(body: dict[str, Any]) -> Mode:
    name = body.get("mode")
    try:
        return Mode(name.strip().upper() if isinstance(name, str) else name)
    except ValueError:
        raise errors.invalid_mode() from None


async def get_top_level_mode(request: web.Request) -> web.Response:
    return _json({"mode": _registry(request).mode(None).value})


@_leader_only
async def update_top_level_mode(request: web.Request) -> web.Response:
    mode = _mode(await _body(request))
    await _registry(request).set_mode(None, mode, _flag(request, "force"))
    return _json({"mode": mode.value})


async def get_subject_mode(request: web.Request) -> web.Response:
    subject = request.match_info["subject"]
    registry = _registry(request)
    mode = (
        registry.mode(subject) if _flag(request, "defaultToGlobal") else registry.modes.get(subject)
    )
    if mode is None:
        raise errors.subject_not_found(subject)
    return _json({"mode": mode.value})


@_leader_only
async def update_subject_mode(request: web.Request) -> web.Response:
    mode = _mode(await _body(request))
    await _registry(request).set_mode(request.match_info["subject"], mode, _flag(request, "force"))
    return _json({"mode": mode.value})


@_leader_only
async def delete_subject_mode(request: web.Request) -> web.Response:
    previous = await _registry(request).delete_mode(request.match_info["subject"])
    return _json({"mode": previous.value})


def create_app(registry: KafkaSchemaRegistry) -> web.Application:
    """The REST application serving `registry` (already initialized)."""
    app = web.Application(middlewares=[_errors_as_json], client_max_size=MAX_REQUEST_BYTES)
    app[REGISTRY_KEY] = registry
    app.cleanup_ctx.append(_forwarding_session)
    subject = "/subjects/{subject}"
    version = subject + "/versions/{version}"
    app.router.add_routes(
        [
            web.get("/", root),
            web.post("/", root),
            web.get("/v1/metadata/id", server_metadata_id),
            web.get("/schemas", list_schemas),
            web.get("/schemas/types", schema_types),
            web.get("/schemas/ids/{id}", schema_by_id),
            web.get("/schemas/ids/{id}/schema", schema_text_by_id),
            web.get("/schemas/ids/{id}/versions", id_versions),
            web.get("/schemas/ids/{id}/subjects", id_subjects),
            web.get("/subjects", list_subjects),
            web.get(subject + "/versions", list_versions),
            web.post(subject + "/versions", register),
            web.get(version, get_version),
            web.get(version + "/schema", get_version_schema),
            web.get(version + "/referencedby", referenced_by),
            web.delete(version, delete_version),
            web.post(subject, lookup),
            web.delete(subject, delete_subject),
            web.post("/compatibility" + version, test_compatibility),
            web.post("/compatibility" + subject + "/versions", test_compatibility),
            web.get("/config", get_top_level_config),
            web.put("/config", update_top_level_config),
            web.delete("/config", delete_top_level_config),
            web.get("/config/{subject}", get_subject_config),
            web.put("/config/{subject}", update_subject_config),
            web.delete("/config/{subject}", delete_subject_config),
            web.get("/mode", get_top_level_mode),
            web.put("/mode", update_top_level_mode),
            web.get("/mode/{subject}", get_subject_mode),
            web.put("/mode/{subject}", update_subject_mode),
            web.delete("/mode/{subject}", delete_subject_mode),
        ]
    )
    return app
