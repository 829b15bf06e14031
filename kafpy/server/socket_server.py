"""SocketServer: accepts client connections and turns their bytes into requests and back.

One asyncio server per listener. Each connection reads int32-size-prefixed frames
straight into buffers (a large frame lands in a buffer of its own size, so a produce
request's records are never copied after the socket read), decodes the request header
(and the body when the broker serves that API version) and hands the request to the
handler. Requests of one connection are processed one at a time, in order, so responses
go out in request order (Kafka mutes a channel while its request is in flight); frames
that arrive meanwhile are read ahead, up to a bound, then reading pauses.

A frame larger than `socket.request.max.bytes`, a negative size, or a header or body that
does not decode closes that connection only, with a log line naming the client and why.

A listener whose security protocol is SSL (or SASL_SSL) has an SslFactory: each connection
first completes a TLS handshake (within `connections.max.idle.ms`), its principal comes
from the client certificate, and only then are frames read. A failed handshake (garbage,
a plaintext client, a refused certificate, a timeout) closes that connection only, logged
as Kafka logs it: `Failed authentication with /<ip> (SSL handshake failed)`.

A listener on SASL_PLAINTEXT or SASL_SSL gives each connection a SaslServerAuthenticator,
which takes every frame until the client has authenticated (then the principal is
`User:<name>`), and again for re-authentication (kafpy.security.sasl_server_authenticator).
"""

from __future__ import annotations

import asyncio
import itertools
import ssl
import struct
from asyncio import sslproto
from collections import deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from time import perf_counter
from typing import TYPE_CHECKING, Any

from kafpy.common.logger import component_logger
from kafpy.common.time import SYSTEM_TIME, Time
from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.api_versions import is_supported
from kafpy.protocol.errors import ProtocolDecodeError
from kafpy.protocol.headers import decode_request_header
from kafpy.protocol.messages import REQUESTS
from kafpy.security.kafka_principal import ANONYMOUS, KafkaPrincipal
from kafpy.security.sasl_server_authenticator import SaslListenerConfig, SaslServerAuthenticator
from kafpy.security.ssl_factory import SslFactory
from kafpy.security.ssl_principal_mapper import NoMatchingRule
from kafpy.server.request_channel import CloseConnection, Request, RequestHandler, ResponseParts

# kafpy.testing's fault injection: sees each request with the real handler and answers it
# (or delays it, or fails it) instead of the handler.
RequestInterceptor = Callable[[Request, RequestHandler], Awaitable[ResponseParts | None]]

_SIZE = struct.Struct(">i")
_READ_BUFFER = 64 * 1024
# Frames bigger than this get a buffer of their own (read into directly, never copied).
_OWN_BUFFER_THRESHOLD = 16 * 1024
# what a TLS connection encrypts at a time (see KafkaConnection._send)
_TLS_WRITE_SLICE = 1024 * 1024
# Read ahead at most this many requests (or bytes) per connection before pausing reads.
_MAX_QUEUED_REQUESTS = 64
_MAX_QUEUED_BYTES = 64 * 1024 * 1024
# the first two bytes of a Produce request (api key 0), the requests that are pipelined
_PRODUCE_KEY = b"\x00\x00"

if TYPE_CHECKING:
    from kafpy.server.broker_metrics import RequestMetrics


class KafkaConnection(asyncio.BufferedProtocol):
    """One client connection: framing, in-order processing, flow control."""

    def __init__(self, server: SocketServer, listener_name: str) -> None:
        self.server = server
        self.listener_name = listener_name
        self.transport: asyncio.Transport | None = None
        self.connection_id = "?"
        self.client_address: tuple[str, int] = ("?", 0)
        self._buf = bytearray(_READ_BUFFER)
        self._start = 0
        self._end = 0
        self._big: bytearray | None = None
        self._big_filled = 0
        self._frames: deque[memoryview] = deque()
        # arrival times (perf_counter) of the queued frames, kept while metrics are on
        self._arrivals: deque[float] = deque()
        self._queued_bytes = 0
        self._reading_paused = False
        self._waiter: asyncio.Future[None] | None = None
        self._write_ready: asyncio.Future[None] | None = None
        self._processor: asyncio.Task[None] | None = None
        # pipelined requests (see _pipeline): their tasks, and the responses in order
        self._inflight: deque[tuple[asyncio.Task[None], asyncio.Future[ResponseParts | None]]] = (
            deque()
        )
        self._writer: asyncio.Task[None] | None = None
        self._muted_until = 0.0  # loop time before which no request is read (quota throttle)
        self._handshake: asyncio.Task[None] | None = None
        self._tls: SslFactory | None = None
        self._closed = False
        self.security_protocol = server.security_protocols.get(listener_name, "PLAINTEXT")
        self.principal: KafkaPrincipal = ANONYMOUS
        sasl = server.sasl_configs.get(listener_name)
        self.authenticator = SaslServerAuthenticator(sasl) if sasl is not None else None
        self._authentication_deadline: asyncio.TimerHandle | None = None

    # -- connection events --------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        if self._tls is not None:  # the TLS layer's call: the handshake is complete
            self._tls_established(transport)
            return
        # uvloop's transports are not asyncio.Transport subclasses: duck-typed
        self.transport = transport  # type: ignore[assignment]
        peer = transport.get_extra_info("peername") or ("?", 0)
        local = transport.get_extra_info("sockname") or ("?", 0)
        self.client_address = (str(peer[0]), int(peer[1]))
        self.connection_id = (
            f"{local[0]}:{local[1]}-{peer[0]}:{peer[1]}-{next(self.server._connection_counter)}"
        )
        self.server._connections.add(self)
        timeout_ms = self.server.sasl_authentication_timeout_ms
        if self.authenticator is not None and timeout_ms > 0:
            # a client that never authenticates does not hold its connection (Kafka's idle
            # reaper closes it after connections.max.idle.ms)
            self._authentication_deadline = asyncio.get_running_loop().call_later(
                timeout_ms / 1000, self._authentication_expired
            )
        self._tls = self.server.ssl_factories.get(self.listener_name)
        if self._tls is None:
            self._processor = asyncio.get_running_loop().create_task(self._process())
            return
        # The TLS layer sits between the socket and this protocol from the first byte on
        # (loop.start_tls cannot: uvloop reads right after connection_made, paused or not).
        # It calls connection_made again once the handshake is done.
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[None] = loop.create_future()
        timeout_ms = self.server.ssl_handshake_timeout_ms
        tls = _ssl_protocol_class(loop)(
            loop, self, self._tls.context, waiter, server_side=True,
            # no limit configured (<= 0): the loop's default (60 s), never none at all
            ssl_handshake_timeout=timeout_ms / 1000 if timeout_ms > 0 else None,
        )  # fmt: skip
        transport.set_protocol(tls)
        tls.connection_made(transport)
        self._handshake = loop.create_task(
            self._watch_handshake(waiter), name=f"kafpy-tls-{self.connection_id}"
        )

    def _tls_established(self, transport: asyncio.BaseTransport) -> None:
        """Name the peer from its certificate and start processing its requests."""
        assert self._tls is not None
        self.transport = transport  # type: ignore[assignment]
        if self._closed:
            transport.close()
            return
        try:
            self.principal = self._tls.peer_principal(transport.get_extra_info("ssl_object"))
        except NoMatchingRule as e:
            self._failed_authentication(str(e))
            transport.close()
            return
        self.server.log.debug(
            "Connection %s on listener %s authenticated as %s (%s)",
            self.connection_id, self.listener_name, self.principal,
            transport.get_extra_info("cipher"),
        )  # fmt: skip
        self._processor = asyncio.get_running_loop().create_task(self._process())

    async def _watch_handshake(self, waiter: asyncio.Future[None]) -> None:
        """Log and close a connection whose handshake fails (garbage, plaintext, a refused
        certificate, a timeout); the TLS layer never calls connection_made for it."""
        raw = self.transport
        assert raw is not None
        try:
            await waiter
        except asyncio.CancelledError:
            raw.close()
            raise
        except (OSError, EOFError, TimeoutError) as e:
            if not self._closed:  # else the broker closed it (shutting down)
                self._failed_authentication(f"SSL handshake failed: {_handshake_error(e)}")
            raw.close()

    def _failed_authentication(self, reason: str) -> None:
        self._closed = True
        self.server._connections.discard(self)
        self.server.log.info("Failed authentication with /%s (%s)", self.client_address[0], reason)

    def _authentication_expired(self) -> None:
        if not self._closed and self.authenticator is not None and not self.authenticator.complete:
            self.close(
                "SASL authentication did not complete within connections.max.idle.ms "
                f"({self.server.sasl_authentication_timeout_ms} ms)"
            )

    def connection_lost(self, exc: Exception | None) -> None:
        if self._authentication_deadline is not None:
            self._authentication_deadline.cancel()
        self._closed = True
        self.server._connections.discard(self)
        self._frames.clear()
        self._arrivals.clear()
        self._wake()
        if self._write_ready is not None and not self._write_ready.done():
            self._write_ready.set_result(None)
        if self._processor is not None and not self._processor.done():
            self._processor.cancel()
        if self._writer is not None and not self._writer.done():
            self._writer.cancel()
        for task, _slot in self._inflight:
            task.cancel()
        self._inflight.clear()

    def pause_writing(self) -> None:
        if self._write_ready is None or self._write_ready.done():
            self._write_ready = asyncio.get_running_loop().create_future()

    def resume_writing(self) -> None:
        if self._write_ready is not None and not self._write_ready.done():
            self._write_ready.set_result(None)

    def close(self, reason: str | None = None) -> None:
        if reason is not None:
            self.server.log.warning(
                "Closing connection %s from %s:%d (listener %s): %s",
                self.connection_id,
                self.client_address[0],
                self.client_address[1],
                self.listener_name,
                reason,
            )
        self._closed = True
        if self.transport is not None:
            self.transport.close()

    # -- reading --------------------------------------------------------------------------------

    def get_buffer(self, sizehint: int) -> memoryview:
        if self._big is not None:
            return memoryview(self._big)[self._big_filled :]
        if self._end == len(self._buf):
            # make room: move the unread tail to the front (it is less than a frame)
            tail = self._buf[self._start : self._end]
            self._buf = (
                bytearray(_READ_BUFFER) if len(tail) < _READ_BUFFER else bytearray(2 * len(tail))
            )
            self._buf[: len(tail)] = tail
            self._start, self._end = 0, len(tail)
        return memoryview(self._buf)[self._end :]

    def buffer_updated(self, nbytes: int) -> None:
        if self._closed:
            return
        if self._big is not None:
            self._big_filled += nbytes
            if self._big_filled == len(self._big):
                frame = memoryview(self._big)
                self._big = None
                self._enqueue(frame)
            return
        self._end += nbytes
        self._parse_frames()

    def _parse_frames(self) -> None:
        buf = self._buf
        while self._end - self._start >= 4:
            (size,) = _SIZE.unpack_from(buf, self._start)
            if size < 0 or size > self._max_frame_size():
                if self._max_frame_size() != self.server.max_request_size:
                    self.close(
                        f"invalid request size {size} before SASL authentication completed: "
                        f"it must be between 0 and {self._max_frame_size()}"
                    )
                    return
                self.close(
                    f"invalid request size {size}: it must be between 0 and "
                    f"socket.request.max.bytes ({self.server.max_request_size})"
                )
                return
            body_start = self._start + 4
            available = self._end - body_start
            if available >= size:
                # a frame of its own, writable (the produce path patches batch headers in place)
                frame = memoryview(bytearray(memoryview(buf)[body_start : body_start + size]))
                self._start = body_start + size
                self._enqueue(frame)
                if self._closed:
                    return
                continue
            if size > _OWN_BUFFER_THRESHOLD or size > len(buf) - body_start:
                big = bytearray(size)
                big[:available] = memoryview(buf)[body_start : self._end]
                self._big = big
                self._big_filled = available
                self._start = self._end = 0
                return
            break
        if self._start == self._end:
            self._start = self._end = 0

    def _enqueue(self, frame: memoryview) -> None:
        self._frames.append(frame)
        if self.server.request_metrics is not None:
            self._arrivals.append(perf_counter())
        self._queued_bytes += len(frame)
        if not self._reading_paused and (
            len(self._frames) >= _MAX_QUEUED_REQUESTS or self._queued_bytes >= _MAX_QUEUED_BYTES
        ):
            self._reading_paused = True
            assert self.transport is not None
            self.transport.pause_reading()
        self._wake()

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    def eof_received(self) -> bool | None:
        return None  # close when the client half-closes, as Kafka does

    # -- processing -----------------------------------------------------------------------------

    async def _process(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            while not self._closed:
                if not self._frames:
                    self._waiter = loop.create_future()
                    await self._waiter
                    self._waiter = None
                    continue
                frame = self._frames.popleft()
                arrived = self._arrivals.popleft() if self._arrivals else None
                self._queued_bytes -= len(frame)
                if self._reading_paused and len(self._frames) < _MAX_QUEUED_REQUESTS // 2:
                    self._reading_paused = False
                    assert self.transport is not None
                    self.transport.resume_reading()
                delay = self._muted_until - loop.time()
                if delay > 0:
                    await asyncio.sleep(delay)
                if self._inflight or frame[:2] == _PRODUCE_KEY:
                    await self._pipeline(frame, arrived)
                else:
                    await self._handle_frame(frame, arrived)
        except asyncio.CancelledError:
            pass

    def _max_frame_size(self) -> int:
        if self.authenticator is None:
            return self.server.max_request_size
        return self.authenticator.max_frame_size(self.server.max_request_size)

    def _send(self, response: ResponseParts) -> None:
        """Write a response. Over TLS, in slices of at most _TLS_WRITE_SLICE bytes: the TLS layer
        encrypts all it is given into one buffer before it writes any of it, so a fetch response
        of megabytes, given whole, would grow (and copy, and fault in) a buffer of that size."""
        assert self.transport is not None
        if self._tls is None:
            self.transport.writelines(response)
            return
        for part in response:
            size = len(part)
            if size <= _TLS_WRITE_SLICE:
                self.transport.write(part)
                continue
            view = memoryview(part)
            for start in range(0, size, _TLS_WRITE_SLICE):
                self.transport.write(view[start : start + _TLS_WRITE_SLICE])

    def _authenticate(self, frame: memoryview) -> bool:
        """Give the frame to the SASL authenticator when it is its; True when the frame
        was handled (answered, or the connection closed)."""
        auth = self.authenticator
        assert auth is not None
        step = auth.handle_frame(frame, self.server.time.milliseconds())
        if step.forward:
            return False
        if step.response is not None and self.transport is not None and not self._closed:
            self.transport.writelines(step.response)
        if auth.complete and auth.principal is not None:
            self.principal = auth.principal
        if step.close_reason is not None:
            if step.failed_authentication:
                self.server.log.info(
                    "Failed authentication with /%s (%s)", self.client_address[0], step.close_reason
                )
                self.close()
            else:
                self.close(step.close_reason)
        return True

    async def _pipeline(self, frame: memoryview, arrived: float | None) -> None:
        """Handle a request as a task and go on to the next one as soon as the handler
        releases the connection (`request.context["release"]`: a produce, once its batches
        are appended, while it waits for the replicas), so that acks=all produce requests
        of one connection wait for replication together instead of one after another.
        Requests still start in the order they came, and responses go out in that order
        (written by _write_in_order); a handler that never releases just finishes first."""
        loop = asyncio.get_running_loop()
        release: asyncio.Future[None] = loop.create_future()
        slot: asyncio.Future[ResponseParts | None] = loop.create_future()
        task = loop.create_task(self._handle_frame(frame, arrived, release, slot))
        self._inflight.append((task, slot))
        if self._writer is None or self._writer.done():
            self._writer = loop.create_task(self._write_in_order())
        await asyncio.wait((task, release), return_when=asyncio.FIRST_COMPLETED)

    async def _write_in_order(self) -> None:
        try:
            while self._inflight and not self._closed:
                response = await self._inflight[0][1]
                self._inflight.popleft()
                if response is not None and not self._closed:
                    if self._write_ready is not None and not self._write_ready.done():
                        await self._write_ready
                    if not self._closed and self.transport is not None:
                        self._send(response)
        except asyncio.CancelledError:
            pass

    async def _handle_frame(
        self,
        frame: memoryview,
        arrived: float | None = None,
        release: asyncio.Future[None] | None = None,
        slot: asyncio.Future[ResponseParts | None] | None = None,
    ) -> None:
        """Decode, handle and answer one request; with `slot`, the response is put there
        for _write_in_order instead of written here."""
        try:
            await self._handle_request(frame, arrived, release, slot)
        finally:
            if slot is not None and not slot.done():
                slot.set_result(None)

    async def _handle_request(
        self,
        frame: memoryview,
        arrived: float | None,
        release: asyncio.Future[None] | None,
        slot: asyncio.Future[ResponseParts | None] | None,
    ) -> None:
        server = self.server
        if (
            self.authenticator is not None
            and self.authenticator.intercepts(frame, server.time.milliseconds())
            and self._authenticate(frame)
        ):
            return
        started = perf_counter() if arrived is not None else 0.0
        try:
            header, offset = decode_request_header(frame)
        except ProtocolDecodeError as e:
            self.close(f"the request header does not decode: {e}")
            return
        body: dict[str, Any] | None = None
        if is_supported(header.api_key, header.api_version):
            try:
                body = REQUESTS[ApiKey(header.api_key)].decode(header.api_version, frame, offset)
            except ProtocolDecodeError as e:
                self.close(
                    f"the {_api_name(header.api_key)} v{header.api_version} request with correlation "
                    f"id {header.correlation_id} does not decode: {e}"
                )
                return
        request = Request(
            header, body, frame, len(frame), server.time.milliseconds(), self.connection_id,
            self.client_address, self.listener_name,
            security_protocol=self.security_protocol, principal=self.principal,
        )  # fmt: skip
        if release is not None:
            request.context["release"] = release
        try:
            if server.request_interceptor is None:
                response = await server.handler.handle(request)
            else:
                response = await server.request_interceptor(request, server.handler)
        except CloseConnection as e:
            self.close(str(e))
            return
        except asyncio.CancelledError:
            raise
        except Exception:
            server.log.exception(
                "Error processing request %s; closing the connection", request.describe()
            )
            self.close()
            return
        if slot is not None:
            slot.set_result(response)
        elif response is not None and not self._closed:
            if self._write_ready is not None and not self._write_ready.done():
                await self._write_ready
            if not self._closed and self.transport is not None:
                self._send(response)
        throttle_ms = request.context.get("throttle_ms", 0)
        if throttle_ms > 0:
            # a client over its quota: its response is sent, then its channel is muted
            now = asyncio.get_running_loop().time()
            self._muted_until = max(self._muted_until, now + throttle_ms / 1000)

        metrics = server.request_metrics
        if metrics is not None and arrived is not None:
            from_follower = (
                header.api_key == ApiKey.FETCH and body is not None and body["replica_id"] >= 0
            )
            metrics.record(
                header.api_key,
                from_follower,
                (started - arrived) * 1000.0,
                (perf_counter() - arrived) * 1000.0,
            )


def _ssl_protocol_class(loop: asyncio.AbstractEventLoop) -> Any:
    """The loop's own TLS protocol: uvloop's (in C) on uvloop, else asyncio's."""
    if type(loop).__module__.startswith("uvloop"):
        import uvloop.loop

        return uvloop.loop.SSLProtocol  # type: ignore[attr-defined]
    return sslproto.SSLProtocol


def _handshake_error(e: BaseException) -> str:
    if isinstance(e, ssl.SSLError) and e.reason:
        return str(e.reason)
    return str(e) or type(e).__name__


def _api_name(api_key: int) -> str:
    try:
        return REQUESTS[ApiKey(api_key)].name.removesuffix("Request")
    except (KeyError, ValueError):
        return f"api key {api_key}"


class SocketServer:
    """Listens on each configured listener and serves requests through `handler`.

    listeners: (name, host, port) triples (port 0 picks a free one; see `bound_port`).
    max_request_size: socket.request.max.bytes.
    security_protocols: listener name -> security protocol (PLAINTEXT when absent), which
    every Request carries. ssl_factories: listener name -> its TLS side, for the listeners
    that speak TLS. ssl_handshake_timeout_ms: how long a client may take over the handshake
    (the broker passes connections.max.idle.ms). sasl_configs: listener name -> what its
    SASL authenticator offers, for the SASL_PLAINTEXT and SASL_SSL listeners.
    sasl_authentication_timeout_ms: how long a SASL connection may take to authenticate
    before it is closed (the broker passes connections.max.idle.ms; <= 0: no limit).
    """

    def __init__(
        self,
        listeners: Sequence[tuple[str, str, int]],
        handler: RequestHandler | None = None,
        *,
        max_request_size: int = 104857600,
        broker_id: int = 0,
        time: Time = SYSTEM_TIME,
        security_protocols: Mapping[str, str] | None = None,
        ssl_factories: Mapping[str, SslFactory] | None = None,
        ssl_handshake_timeout_ms: int = 600000,
        sasl_configs: Mapping[str, SaslListenerConfig] | None = None,
        sasl_authentication_timeout_ms: int = 600000,
    ) -> None:
        self.listeners = list(listeners)
        self.security_protocols = dict(security_protocols or {})
        self.ssl_factories = dict(ssl_factories or {})
        self.ssl_handshake_timeout_ms = ssl_handshake_timeout_ms
        self.sasl_configs = dict(sasl_configs or {})
        self.sasl_authentication_timeout_ms = sasl_authentication_timeout_ms
        self.handler: RequestHandler = handler  # type: ignore[assignment]
        self.max_request_size = max_request_size
        self.time = time
        self.log = component_logger(
            "kafpy.network.SocketServer", f"SocketServer brokerId={broker_id}"
        )
        self._servers: dict[str, asyncio.base_events.Server] = {}
        self._connections: set[KafkaConnection] = set()
        self._connection_counter = itertools.count()
        self.request_interceptor: RequestInterceptor | None = None
        # Kafka's RequestMetrics, kept while the broker serves metrics (KafkaServer sets it)
        self.request_metrics: RequestMetrics | None = None

    async def bind(self) -> None:
        """Bind every listener (not accepting connections until `start_processing`)."""
        loop = asyncio.get_running_loop()
        for name, host, port in self.listeners:
            server = await loop.create_server(
                lambda name=name: KafkaConnection(self, name),
                host or None, port, reuse_address=True, start_serving=False,
            )  # fmt: skip
            self._servers[name] = server
            self.log.info(
                "Created listener %s on %s:%d", name, host or "0.0.0.0", self.bound_port(name)
            )

    async def start_processing(self, handler: RequestHandler | None = None) -> None:
        """Start accepting connections (after the handler is ready)."""
        if handler is not None:
            self.handler = handler
        if self.handler is None:
            raise RuntimeError("SocketServer needs a request handler before it accepts connections")
        for server in self._servers.values():
            await server.start_serving()
        self.log.info("Started socket server acceptors and processors")

    async def startup(self, handler: RequestHandler | None = None) -> None:
        await self.bind()
        await self.start_processing(handler)

    def bound_port(self, listener_name: str) -> int:
        server = self._servers[listener_name]
        return int(server.sockets[0].getsockname()[1])

    @property
    def connection_count(self) -> int:
        return len(self._connections)

    def close_connections(self, reason: str) -> None:
        """Close every client connection (the listeners keep accepting new ones)."""
        for conn in list(self._connections):
            conn.close(reason)

    def stop_accepting(self) -> None:
        for server in self._servers.values():
            server.close()

    async def shutdown(self) -> None:
        """Stop listening, close every connection."""
        self.log.info("Shutting down socket server")
        self.stop_accepting()
        for conn in list(self._connections):
            conn.close()
        for server in self._servers.values():
            await server.wait_closed()
        self._servers.clear()
        self.log.info("Shutdown completed")
