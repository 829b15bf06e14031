"""The console's web app: HTML pages and a JSON API over one ClusterService.

aiohttp serves both; pages are jinja2 templates with autoescape on, so every name, key
and value from the cluster is HTML-escaped. The JSON API (`/api/...`) returns what the
pages show. A failure is a page (or a JSON error) saying what was tried and what went
wrong, never a stack trace. Writes are POST forms, refused with 403 unless the console
was started with --allow-writes, and refused from pages of another origin.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import jinja2
from aiohttp import web

from kafpy.console.cluster_service import (
    DEFAULT_LIMIT,
    RESET_STRATEGIES,
    ClusterService,
    ConsoleError,
    parse_timestamp,
)
from kafpy.console.message_format import MessageFormat

_HERE = Path(__file__).parent
SERVICE: web.AppKey[ClusterService] = web.AppKey("service", ClusterService)
ALLOW_WRITES: web.AppKey[bool] = web.AppKey("allow_writes", bool)
TEMPLATES: web.AppKey[jinja2.Environment] = web.AppKey("templates", jinja2.Environment)

_log = logging.getLogger("kafpy.console")

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def _render(request: web.Request, template: str, status: int = 200, **context: Any) -> web.Response:
    env = request.app[TEMPLATES]
    html = env.get_template(template).render(
        bootstrap=request.app[SERVICE].bootstrap_servers,
        allow_writes=request.app[ALLOW_WRITES],
        path=request.path,
        **context,
    )
    return web.Response(text=html, status=status, content_type="text/html")


def _is_api(request: web.Request) -> bool:
    return request.path.startswith("/api/")


@web.middleware
async def error_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Every failure as a page (or JSON under /api/) with its status, never a traceback."""
    try:
        return await handler(request)
    except ConsoleError as e:
        error = e
    except web.HTTPException as e:
        if e.status < 400:
            raise
        error = ConsoleError(e.status, e.reason, f"{request.path}: {e.reason}.")
    except Exception as e:
        _log.exception("Console request %s %s failed", request.method, request.path)
        error = ConsoleError(
            500,
            "Internal error",
            f"{type(e).__name__}: {e}. The console's log has the details.",
            f"{request.method} {request.path}",
        )
    if _is_api(request):
        return web.json_response({"error": error.as_json()}, status=error.status)
    return _render(request, "error.html", status=error.status, error=error)


def _int_param(request: web.Request, name: str, default: int | None = None) -> int | None:
    raw = request.query.get(name, "").strip()
    if not raw:
        return default
    try:
        return int(raw)
    except ValueError:
        raise ConsoleError(400, "Bad request", f"{name}={raw!r} is not a whole number.") from None


def _partition(request: web.Request) -> int:
    raw = request.match_info["partition"]
    try:
        return int(raw)
    except ValueError:
        raise ConsoleError(400, "Bad request", f"Partition {raw!r} is not a number.") from None


async def _messages(request: web.Request) -> dict[str, Any]:
    raw_ts = request.query.get("timestamp", "").strip()
    try:
        fmt = MessageFormat.parse(request.query.get("format"))
    except ValueError as e:
        raise ConsoleError(400, "Bad format", str(e)) from None
    return await request.app[SERVICE].messages(
        request.match_info["topic"],
        _partition(request),
        offset=_int_param(request, "offset"),
        timestamp=parse_timestamp(raw_ts) if raw_ts else None,
        limit=_int_param(request, "limit", DEFAULT_LIMIT) or DEFAULT_LIMIT,
        fmt=fmt,
    )


# --- JSON API ---


async def api_brokers(request: web.Request) -> web.Response:
    return web.json_response(await request.app[SERVICE].brokers())


async def api_topics(request: web.Request) -> web.Response:
    return web.json_response(await request.app[SERVICE].topics())


async def api_topic(request: web.Request) -> web.Response:
    return web.json_response(await request.app[SERVICE].topic(request.match_info["topic"]))


async def api_groups(request: web.Request) -> web.Response:
    return web.json_response(await request.app[SERVICE].groups())


async def api_group(request: web.Request) -> web.Response:
    return web.json_response(await request.app[SERVICE].group(request.match_info["group"]))


async def api_messages(request: web.Request) -> web.Response:
    return web.json_response(await _messages(request))


# --- pages ---


async def index(request: web.Request) -> web.Response:
    raise web.HTTPFound("/brokers")


async def brokers_page(request: web.Request) -> web.Response:
    return _render(request, "brokers.html", data=await request.app[SERVICE].brokers())


async def topics_page(request: web.Request) -> web.Response:
    return _render(
        request,
        "topics.html",
        data=await request.app[SERVICE].topics(),
        message=request.query.get("message"),
    )


async def topic_page(request: web.Request) -> web.Response:
    data = await request.app[SERVICE].topic(request.match_info["topic"])
    return _render(request, "topic.html", data=data)


async def groups_page(request: web.Request) -> web.Response:
    return _render(request, "groups.html", data=await request.app[SERVICE].groups())


async def group_page(request: web.Request) -> web.Response:
    data = await request.app[SERVICE].group(request.match_info["group"])
    return _render(
        request,
        "group.html",
        data=data,
        strategies=RESET_STRATEGIES,
        message=request.query.get("message"),
    )


async def messages_page(request: web.Request) -> web.Response:
    data = await _messages(request)
    return _render(
        request,
        "messages.html",
        data=data,
        formats=[f.value for f in MessageFormat],
        query=request.query,
    )


# --- writes ---


async def _check_write(request: web.Request) -> dict[str, str]:
    """The form of a write request, once it is allowed: writes enabled, and the form
    posted from this console's own pages (no cross-site posts)."""
    if not request.app[ALLOW_WRITES]:
        raise ConsoleError(
            403,
            "Writes are disabled",
            "This console is read-only. Restart it with --allow-writes to create or delete "
            "topics and reset consumer group offsets.",
            f"{request.method} {request.path}",
        )
    origin = request.headers.get("Origin") or request.headers.get("Referer")
    if origin and origin != "null" and urlsplit(origin).netloc != request.host:
        raise ConsoleError(
            403,
            "Cross-site request refused",
            f"The form was posted from {origin}, not from this console ({request.host}).",
        )
    form = await request.post()
    return {k: v for k, v in form.items() if isinstance(v, str)}


def _form_int(form: dict[str, str], name: str, default: int | None = None) -> int:
    raw = form.get(name, "").strip()
    if not raw and default is not None:
        return default
    try:
        return int(raw)
    except ValueError:
        raise ConsoleError(400, "Bad form", f"{name}={raw!r} is not a whole number.") from None


async def create_topic(request: web.Request) -> web.Response:
    form = await _check_write(request)
    name = form.get("name", "").strip()
    if not name:
        raise ConsoleError(400, "Bad form", "A new topic needs a name.")
    configs: dict[str, str] = {}
    for line in form.get("configs", "").splitlines():
        if line.strip():
            key, sep, value = line.partition("=")
            if not sep or not key.strip():
                raise ConsoleError(
                    400, "Bad form", f"Config line {line!r} is not key=value (one per line)."
                )
            configs[key.strip()] = value.strip()
    partitions = _form_int(form, "partitions", -1)
    replication_factor = _form_int(form, "replication_factor", -1)
    await request.app[SERVICE].create_topic(name, partitions, replication_factor, configs)
    _log.info(
        "Created topic %s (partitions %d, replication factor %d, configs %s) for %s",
        name, partitions, replication_factor, configs, request.remote,
    )  # fmt: skip
    raise web.HTTPSeeOther(f"/topics/{quote(name, safe='')}")


async def delete_topic(request: web.Request) -> web.Response:
    await _check_write(request)
    name = request.match_info["topic"]
    await request.app[SERVICE].delete_topic(name)
    _log.info("Deleted topic %s for %s", name, request.remote)
    raise web.HTTPSeeOther("/topics?message=" + quote(f"Topic '{name}' is marked for deletion."))


async def reset_offsets(request: web.Request) -> web.Response:
    form = await _check_write(request)
    group = request.match_info["group"]
    strategy = form.get("strategy", "")
    offset = _form_int(form, "offset") if strategy == "offset" else None
    new = await request.app[SERVICE].reset_group_offsets(
        group, form.get("topic", "").strip(), strategy, offset
    )
    done = ", ".join(f"{tp}={o}" for tp, o in sorted(new.items()))
    _log.info("Reset the offsets of group %s: %s for %s", group, done, request.remote)
    raise web.HTTPSeeOther(
        f"/groups/{quote(group, safe='')}?message=" + quote(f"Offsets reset: {done}.")
    )


def create_app(service: ClusterService, *, allow_writes: bool = False) -> web.Application:
    """The console app over `service`; it closes the service's client on cleanup."""
    app = web.Application(middlewares=[error_middleware])
    app[SERVICE] = service
    app[ALLOW_WRITES] = allow_writes
    app[TEMPLATES] = jinja2.Environment(
        loader=jinja2.FileSystemLoader(_HERE / "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
    )
    # a topic or group name as one path segment: '/' encoded too (jinja's urlencode keeps it)
    app[TEMPLATES].filters["segment"] = lambda name: quote(str(name), safe="")
    app.router.add_get("/", index)
    app.router.add_get("/brokers", brokers_page)
    app.router.add_get("/topics", topics_page)
    app.router.add_post("/topics", create_topic)
    app.router.add_get("/topics/{topic}", topic_page)
    app.router.add_post("/topics/{topic}/delete", delete_topic)
    app.router.add_get("/topics/{topic}/partitions/{partition}/messages", messages_page)
    app.router.add_get("/groups", groups_page)
    app.router.add_get("/groups/{group}", group_page)
    app.router.add_post("/groups/{group}/offsets", reset_offsets)
    app.router.add_get("/api/brokers", api_brokers)
    app.router.add_get("/api/topics", api_topics)
    app.router.add_get("/api/topics/{topic}", api_topic)
    app.router.add_get("/api/groups", api_groups)
    app.router.add_get("/api/groups/{group}", api_group)
    app.router.add_get("/api/topics/{topic}/partitions/{partition}/messages", api_messages)
    app.router.add_static("/static", _HERE / "static")

    async def close_service(_: web.Application) -> None:
        await service.close()

    app.on_cleanup.append(close_service)
    return app
