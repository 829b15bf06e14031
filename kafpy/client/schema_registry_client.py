"""A client of a schema registry's REST API v1, for kafpy's own tools (Confluent's
`CachedSchemaRegistryClient`): schemas by id, a subject's latest version, and
registrations, each remembered so that a registry is asked once per id or schema.

It speaks plain HTTP through `urllib`, blocking, so that Spark's executors, the console
tools and the web console share one client; async callers run it on a thread. Any
registry speaking Confluent's API will do (`kafpy schema-registry` or Confluent's).
"""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
DEFAULT_TIMEOUT_S = 10.0
SCHEMA_NOT_FOUND = 40403
SUBJECT_NOT_FOUND = 40401


class SchemaRegistryClientError(Exception):
    """A request the registry refused (`error_code` is Confluent's, or the HTTP status) or
    could not be made (the registry is down: `error_code` None)."""

    def __init__(self, message: str, error_code: int | None = None) -> None:
        super().__init__(message)
        self.error_code = error_code


@dataclass(frozen=True)
class RegisteredSchema:
    """A schema as the registry holds it: its global id, its type (AVRO, JSON, PROTOBUF)
    and its text; `subject` and `version` when it was looked up through a subject."""

    schema_id: int
    schema_type: str
    schema: str
    subject: str | None = None
    version: int | None = None


class SchemaRegistryClient:
    """Confluent's REST API v1 at `url` (`http://host:port`, a comma-separated list tries
    each in turn), with the schemas by id and the registrations cached."""

    def __init__(self, url: str, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        self.urls = [u.strip().rstrip("/") for u in url.split(",") if u.strip()]
        if not self.urls or any(
            urllib.parse.urlsplit(u).scheme not in ("http", "https") for u in self.urls
        ):
            raise SchemaRegistryClientError(
                f"schema.registry.url: {url!r} is not a registry URL (expected "
                "http://host:port, or several separated by commas)"
            )
        self.url = url
        self.timeout_s = timeout_s
        self._by_id: dict[int, RegisteredSchema] = {}
        self._registered: dict[tuple[str, str, str], int] = {}
        self._lock = threading.Lock()

    def schema_by_id(self, schema_id: int) -> RegisteredSchema:
        """The schema with this global id (`GET /schemas/ids/{id}`), from the cache after
        the first time."""
        with self._lock:
            cached = self._by_id.get(schema_id)
        if cached is not None:
            return cached
        body = self._request("GET", f"/schemas/ids/{schema_id}")
        found = RegisteredSchema(schema_id, body.get("schemaType", "AVRO"), body["schema"])
        with self._lock:
            self._by_id[schema_id] = found
        return found

    def latest_version(self, subject: str) -> RegisteredSchema:
        """The subject's latest version (`GET /subjects/{s}/versions/latest`); never
        cached, so that a new version is seen."""
        quoted = urllib.parse.quote(subject, safe="")
        body = self._request("GET", f"/subjects/{quoted}/versions/latest")
        found = RegisteredSchema(
            body["id"], body.get("schemaType", "AVRO"), body["schema"], subject, body["version"]
        )
        with self._lock:
            self._by_id.setdefault(found.schema_id, found)
        return found

    def register(self, subject: str, schema: str, schema_type: str = "AVRO") -> int:
        """Register the schema under the subject (`POST /subjects/{s}/versions`; the
        registry answers the existing id for a schema it holds) and return its id."""
        key = (subject, schema_type, schema)
        with self._lock:
            cached = self._registered.get(key)
        if cached is not None:
            return cached
        quoted = urllib.parse.quote(subject, safe="")
        payload: dict[str, Any] = {"schema": schema}
        if schema_type != "AVRO":
            payload["schemaType"] = schema_type
        schema_id = int(self._request("POST", f"/subjects/{quoted}/versions", payload)["id"])
        with self._lock:
            self._registered[key] = schema_id
            self._by_id.setdefault(schema_id, RegisteredSchema(schema_id, schema_type, schema))
        return schema_id

    def _request(self, method: str, path: str, payload: Any = None) -> dict[str, Any]:
        data = None if payload is None else json.dumps(payload).encode()
        unreachable: list[str] = []
        for base in self.urls:
            request = urllib.request.Request(
                base + path,
                data=data,
                method=method,
                headers={"Accept": CONTENT_TYPE, "Content-Type": CONTENT_TYPE},
            )
            try:
                with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                    answer: dict[str, Any] = json.loads(response.read())
                    return answer
            except urllib.error.HTTPError as e:
                raise _refusal(e, base + path) from None
            except (urllib.error.URLError, OSError, ValueError) as e:
                reason = getattr(e, "reason", e)
                unreachable.append(f"{base} ({reason})")
        raise SchemaRegistryClientError(
            f"The schema registry could not be reached: {', '.join(unreachable)}"
        )


def _refusal(error: urllib.error.HTTPError, where: str) -> SchemaRegistryClientError:
    """The registry's `{"error_code", "message"}` answer as an error (the HTTP status and
    body when the answer is not Confluent's JSON)."""
    text = error.read().decode("utf-8", "replace")
    try:
        body = json.loads(text)
        return SchemaRegistryClientError(
            f"{body['message']} (error code {body['error_code']}, from {where})",
            int(body["error_code"]),
        )
    except (ValueError, KeyError, TypeError):
        return SchemaRegistryClientError(
            f"The schema registry answered HTTP {error.code} to {where}: {text[:200]}",
            error.code,
        )
