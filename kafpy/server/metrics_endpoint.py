"""MetricsEndpoint: the broker's Prometheus endpoint (`kafpy.metrics.listener`).

An aiohttp server on the broker's own event loop answers `GET /metrics` with the
registry rendered by prometheus-client's text exposition (and `/` with a pointer to it).
Rendering runs on the loop once per scrape, so the collectors read the broker's state
between two events, never while it changes.
"""

from __future__ import annotations

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from kafpy.common.errors import InvalidConfigurationError
from kafpy.common.logger import component_logger
from kafpy.server.kafka_config import METRICS_LISTENER_CONFIG


class MetricsEndpoint:
    """Serves one broker's metrics registry over HTTP at `/metrics`.

    Parameters:
        registry: the broker's own CollectorRegistry.
        host, port: where to listen (port 0 picks a free one; see `port` once started).
        broker_id: shown in the log lines.
    """

    def __init__(self, registry: CollectorRegistry, host: str, port: int, broker_id: int) -> None:
        self.registry = registry
        self.host = host
        self._requested_port = port
        self.port = port
        self.log = component_logger("kafpy.server.MetricsEndpoint", "MetricsEndpoint", broker_id)
        self._runner: web.AppRunner | None = None

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else (self.host or "0.0.0.0")
        return f"http://{host}:{self.port}/metrics"

    async def start(self) -> None:
        app = web.Application()
        app.router.add_get("/metrics", self._metrics)
        app.router.add_get("/", self._index)
        runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await runner.setup()
        site = web.TCPSite(runner, self.host or None, self._requested_port, reuse_address=True)
        try:
            await site.start()
        except OSError as e:
            await runner.cleanup()
            raise InvalidConfigurationError(
                f"Cannot serve metrics on {self.host or '0.0.0.0'}:{self._requested_port} "
                f"({METRICS_LISTENER_CONFIG}): {e.strerror or e}. Pick a free port or leave "
                f"{METRICS_LISTENER_CONFIG} empty."
            ) from e
        self._runner = runner
        if runner.addresses:  # the bound (host, port, ...) of each socket
            self.port = int(runner.addresses[0][1])
        self.log.info("Serving metrics on %s", self.url)

    async def stop(self) -> None:
        if self._runner is not None:
            runner, self._runner = self._runner, None
            await runner.cleanup()

    async def _metrics(self, request: web.Request) -> web.Response:
        body = generate_latest(self.registry)
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})

    async def _index(self, request: web.Request) -> web.Response:
        return web.Response(text="kafpy broker metrics: /metrics\n")
