"""SocketServer: accepts client connections and turns their bytes into requests and back.

One asyncio server per listener. Each connection reads int32-size-prefixed frames
straight into buffers (a large frame lands in a buffer of its own size, so a produce
request's records are never copied after the socket read), decodes the request header
(and the body when the broker serves that API version) and hands the request to the
handler. Requests of one connection are processed one at a time, in order, so responses
go out in request order (Kafka mutes a channel while its request is in flight); frames
that arrive meanwhile are read ahead, up to a bound, then reading pauses. A Produce request
lets the next one start once its batches are appended (acks=all waits for the replicas
while the connection goes on). Requests are started as soon as their bytes are read, in
the read callback itself (see `_run_eagerly`): the common request that never waits (a
produce with acks=0/1, a fetch with data) costs no task and no extra loop iteration, and
the responses of the frames one read brought in leave in one write.

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
import errno
import itertools
import os
import ssl
import struct
import sys
from asyncio import sslproto
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from time import perf_counter
from typing import Any, TypeVar

from kafpy.common.logger import component_logger
from kafpy.common.time import SYSTEM_TIME, Time
from kafpy.network.acceptor import Acceptor, open_server_sockets
from kafpy.network.connection_quotas import (
    CONNECTION_QUOTA_CONFIG_DEF,
    FAILED_AUTHENTICATION_DELAY_MS,
    ConnectionQuotaConfig,
    ConnectionQuotas,
)
from kafpy.network.request_channel import (
    CloseConnection,
    Request,
    RequestHandler,
    RequestMetrics,
    ResponseParts,
)
from kafpy.network.socket_server_config import (
    CONNECTIONS_MAX_IDLE_MS,
    SOCKET_REQUEST_MAX_BYTES,
    SOCKET_SERVER_CONFIG_DEF,
)
from kafpy.protocol.api_keys import ApiKey, api_name
from kafpy.protocol.api_versions import is_supported
from kafpy.protocol.errors import ProtocolDecodeError
from kafpy.protocol.headers import decode_request_header
from kafpy.protocol.messages import REQUESTS
from kafpy.security.kafka_principal import ANONYMOUS, KafkaPrincipal
from kafpy.security.sasl_server_authenticator import SaslListenerConfig, SaslServerAuthenticator
from kafpy.security.ssl_factory import SslFactory
from kafpy.security.ssl_principal_mapper import NoMatchingRule

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
_T = TypeVar("_T")


class KafkaConnection(asyncio.BufferedProtocol):
    """One client connection: framing, in-order processing, flow control."""

    def __init__(
        self, server: SocketServer, listener_name: str, counted_ip: str | None = None
    ) -> None:
        self.server = server
        self.listener_name = listener_name
        # the address this connection is counted under in the ConnectionQuotas, until it
        # gives its count back (at close)
        self._quota_ip = counted_ip
        # when the client last sent anything (the least recently used connection is the
        # one closed when the broker is over max.connections)
        self.last_active = perf_counter()
        self._delayed_close: asyncio.TimerHandle | None = None
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
        self._writing_paused = False
        # processing starts with connection_made (TLS: with the handshake's end)
        self._processing = False
        self._running = False  # in _run (it is not reentrant)
        # the requests started and not yet answered on the socket, in request order
        self._slots: deque[_Slot] = deque()
        # the request that must finish (or release the connection) before the next starts
        self._blocker: _Slot | None = None
        self._muted_until = 0.0  # loop time before which no request is read (quota throttle)
        self._unmute: asyncio.TimerHandle | None = None
        self._handshake: asyncio.Task[None] | None = None
        self._tls: SslFactory | None = None
        self._closed = False
        self._lost = False
        self.security_protocol = server.security_protocols.get(listener_name, "PLAINTEXT")
        self.principal: KafkaPrincipal = ANONYMOUS
        sasl = server.sasl_configs.get(listener_name)
        self.authenticator = SaslServerAuthenticator(sasl) if sasl is not None else None
        self._authentication_deadline: asyncio.TimerHandle | None = None

    @property
    def closed(self) -> bool:
        return self._closed

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
            self._processing = True
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
            self._failed_authentication(str(e), transport)
            return
        self.server.log.debug(
            "Connection %s on listener %s authenticated as %s (%s)",
            self.connection_id, self.listener_name, self.principal,
            transport.get_extra_info("cipher"),
        )  # fmt: skip
        self._processing = True
        self._run()

    async def _watch_handshake(self, waiter: asyncio.Future[None]) -> None:
        """Log and close a connection whose handshake fails (garbage, plaintext, a refused
        certificate, a timeout); the TLS layer never calls connection_made for it."""
        raw = self.transport
        assert raw is not None
        try:
            await waiter
        except asyncio.CancelledError:
            self._close_now(raw)
            raise
        except (OSError, EOFError, TimeoutError) as e:
            if not self._closed:  # else the broker closed it (shutting down)
                self._failed_authentication(f"SSL handshake failed: {_handshake_error(e)}", raw)
            else:
                self._close_now(raw)

    def _failed_authentication(self, reason: str, transport: asyncio.BaseTransport) -> None:
        """Log the failure and close the connection after
        connection.failed.authentication.delay.ms (Kafka delays the close so that a client
        retrying bad credentials cannot make the broker spin); the answers already due
        (the authentication error) go out first, nothing more is read."""
        self.server.log.info("Failed authentication with /%s (%s)", self.client_address[0], reason)
        if self.transport is not None and not self._closed:
            self._flush()
        self._closed = True
        delay_ms = self.server.failed_authentication_delay_ms
        if delay_ms <= 0 or transport.is_closing():  # (a TLS layer may have aborted it)
            self._close_now(transport)
            return
        try:
            transport.pause_reading()  # type: ignore[attr-defined]
        except (AttributeError, RuntimeError):
            pass  # closing already, or a TLS layer that is not reading
        self._delayed_close = asyncio.get_running_loop().call_later(
            delay_ms / 1000, self._close_now, transport
        )

    def _close_now(self, transport: asyncio.BaseTransport, *, abort: bool = False) -> None:
        if self._delayed_close is not None:
            self._delayed_close.cancel()
            self._delayed_close = None
        self._closed = True
        if abort:
            transport.abort()  # type: ignore[attr-defined]
        else:
            transport.close()
        # a connection whose TLS handshake failed never hears connection_lost
        self.server._connections.discard(self)
        if self._tls is not None and not self._processing:
            self._lost = True
        self._release_quota()

    def _release_quota(self) -> None:
        """Give this connection's count back to the ConnectionQuotas (once)."""
        if self._quota_ip is not None:
            ip, self._quota_ip = self._quota_ip, None
            self.server.connection_quotas.dec(self.listener_name, ip)

    def _authentication_expired(self) -> None:
        if not self._closed and self.authenticator is not None and not self.authenticator.complete:
            self.close(
                "SASL authentication did not complete within connections.max.idle.ms "
                f"({self.server.sasl_authentication_timeout_ms} ms)"
            )

    def connection_lost(self, exc: Exception | None) -> None:
        self._lost = True
        if self._authentication_deadline is not None:
            self._authentication_deadline.cancel()
        if self._delayed_close is not None:
            self._delayed_close.cancel()
            self._delayed_close = None
        self._release_quota()
        self._closed = True
        self.server._connections.discard(self)
        self._frames.clear()
        self._arrivals.clear()
        if self._unmute is not None:
            self._unmute.cancel()
        for slot in self._slots:
            if slot.task is not None:
                slot.task.cancel()
        self._slots.clear()
        self._blocker = None

    def pause_writing(self) -> None:
        # the client does not read its responses: answer nothing more until it does
        self._writing_paused = True

    def resume_writing(self) -> None:
        self._writing_paused = False
        self._flush()
        self._run()

    @property
    def lost(self) -> bool:
        """Whether the transport reported the connection gone (connection_lost ran)."""
        return self._lost

    def close(self, reason: str | None = None, *, abort: bool = False) -> None:
        """Close the connection: after flushing the answers queued before it, or at once
        with abort (as a network failure would, whatever the client left unread)."""
        if reason is not None:
            self.server.log.warning(
                "Closing connection %s from %s:%d (listener %s): %s",
                self.connection_id,
                self.client_address[0],
                self.client_address[1],
                self.listener_name,
                reason,
            )
        if self.transport is not None and not self._closed and not abort:
            self._flush()  # the answers before the one that closes still go out
        if self.transport is not None:
            self._close_now(self.transport, abort=abort)
        self._closed = True

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
        self.last_active = perf_counter()
        if self._big is not None:
            self._big_filled += nbytes
            if self._big_filled == len(self._big):
                frame = memoryview(self._big)
                self._big = None
                self._enqueue(frame)
                self._run()
            return
        self._end += nbytes
        self._parse_frames()
        # every frame this read completed is started before any answer is written
        self._run()

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

    def eof_received(self) -> bool | None:
        return None  # close when the client half-closes, as Kafka does

    # -- processing -----------------------------------------------------------------------------

    def _run(self) -> None:
        """Start the queued requests while nothing holds the connection: no request ahead
        still running (or not yet released), no quota mute, the client reading its answers;
        then write the answers that are ready."""
        if self._running or not self._processing:
            return
        self._running = True
        try:
            loop = asyncio.get_running_loop()
            while (
                self._frames
                and self._blocker is None
                and not self._writing_paused
                and not self._closed
            ):
                if self._muted_until:
                    delay = self._muted_until - loop.time()
                    if delay > 0:
                        if self._unmute is None:
                            self._unmute = loop.call_later(delay, self._unmuted)
                        break
                    self._muted_until = 0.0
                frame = self._frames.popleft()
                arrived = self._arrivals.popleft() if self._arrivals else None
                self._queued_bytes -= len(frame)
                if self._reading_paused and len(self._frames) < _MAX_QUEUED_REQUESTS // 2:
                    self._reading_paused = False
                    assert self.transport is not None
                    self.transport.resume_reading()
                self._begin(frame, arrived)
        finally:
            self._running = False
        self._flush()

    def _unmuted(self) -> None:
        self._unmute = None
        self._run()

    def _begin(self, frame: memoryview, arrived: float | None) -> None:
        """Start one request: run its handler until it first waits, and if it does, let a
        task run the rest. Until it finishes, the next request waits, except behind a
        Produce, which releases the connection once its batches are appended (Kafka mutes a
        channel per request; pipelining produce requests lets acks=all requests of one
        connection wait for the replicas together instead of one after another)."""
        slot = _Slot()
        self._slots.append(slot)
        release = self._releaser(slot) if frame[:2] == _PRODUCE_KEY else None
        done, task = _run_eagerly(self._answer(frame, arrived, release, slot))
        if done:
            return
        assert task is not None
        slot.task = task
        if not slot.released:
            self._blocker = slot
        task.add_done_callback(lambda _task: self._finished(slot))

    def _releaser(self, slot: _Slot) -> Callable[[], None]:
        def release() -> None:
            if slot.released:
                return
            slot.released = True
            if self._blocker is slot:  # released after the handler first waited
                self._blocker = None
                asyncio.get_running_loop().call_soon(self._run)

        return release

    def _finished(self, slot: _Slot) -> None:
        slot.done = True  # (a cancelled task: nothing to answer)
        slot.task = None
        if self._blocker is slot:
            self._blocker = None
        if not self._closed:
            self._run()

    def _flush(self) -> None:
        """Write the answers that are next in request order, all in one write."""
        slots = self._slots
        if not slots or not slots[0].done or self._writing_paused:
            return
        parts: list[bytes | bytearray | memoryview] = []
        while slots and slots[0].done:
            response = slots.popleft().response
            if response is not None:
                parts.extend(response)
        if parts and not self._closed and self.transport is not None:
            self._send(parts)

    async def _answer(
        self,
        frame: memoryview,
        arrived: float | None,
        release: Callable[[], None] | None,
        slot: _Slot,
    ) -> None:
        """Handle one request and put its answer in its slot."""
        try:
            slot.response = await self._handle_request(frame, arrived, release)
        finally:
            slot.done = True
            if slot.task is not None and not self._running:
                # a request that waited (a long-poll fetch woken by new data): its answer
                # leaves now rather than a loop iteration later, from _finished
                self._flush()

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
            self._flush()  # the answers to the requests before it go first
            self.transport.writelines(step.response)
        if auth.complete and auth.principal is not None:
            self.principal = auth.principal
        if step.close_reason is not None:
            if step.failed_authentication:
                assert self.transport is not None
                self._failed_authentication(step.close_reason, self.transport)
            else:
                self.close(step.close_reason)
        return True

    async def _handle_request(
        self, frame: memoryview, arrived: float | None, release: Callable[[], None] | None
    ) -> ResponseParts | None:
        """Decode and handle one request; its response, or None (nothing to send)."""
        server = self.server
        if (
            self.authenticator is not None
            and self.authenticator.intercepts(frame, server.time.milliseconds())
            and self._authenticate(frame)
        ):
            return None
        started = perf_counter() if arrived is not None else 0.0
        try:
            header, offset = decode_request_header(frame)
        except ProtocolDecodeError as e:
            self.close(f"the request header does not decode: {e}")
            return None
        body: dict[str, Any] | None = None
        if is_supported(header.api_key, header.api_version):
            try:
                body = REQUESTS[ApiKey(header.api_key)].decode(header.api_version, frame, offset)
            except ProtocolDecodeError as e:
                self.close(
                    f"the {api_name(header.api_key)} v{header.api_version} request with correlation "
                    f"id {header.correlation_id} does not decode: {e}"
                )
                return None
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
            return None
        except asyncio.CancelledError:
            raise
        except Exception:
            server.log.exception(
                "Error processing request %s; closing the connection", request.describe()
            )
            self.close()
            return None
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
        return response


class _Slot:
    """A request's place in its connection's response order: its answer once handled."""

    __slots__ = ("done", "released", "response", "task")

    def __init__(self) -> None:
        self.done = False
        self.released = False  # a produce whose batches are appended: the next may start
        self.response: ResponseParts | None = None
        self.task: asyncio.Task[None] | None = None


def _run_eagerly(coro: Coroutine[Any, Any, _T]) -> tuple[bool, asyncio.Task[_T] | None]:
    """Run a coroutine until it finishes or first waits: (True, None) when it finished
    (its result and any exception are its own business), else (False, task) where the task
    runs the rest, so a request that never waits costs no loop iteration. Python 3.12+:
    an eagerly started task. 3.11 has none: the coroutine is stepped by hand and costs no
    task either, but while it runs so it is in no task (`asyncio.current_task()` is None,
    as in any protocol callback; `asyncio.timeout` would refuse it, `asyncio.wait_for` does
    not on 3.11)."""
    if sys.version_info >= (3, 12):
        task = asyncio.Task(coro, loop=asyncio.get_running_loop(), eager_start=True)
        if task.done():
            return True, None
        return False, task
    try:
        yielded = coro.send(None)
    except StopIteration:
        return True, None
    return False, asyncio.get_running_loop().create_task(_resume(coro, yielded))


async def _resume(coro: Coroutine[Any, Any, _T], yielded: Any) -> _T:
    """Run the rest of a coroutine started by `_run_eagerly`, which suspended on `yielded`
    (a future, or None for a bare yield as `asyncio.sleep(0)`'s). The coroutine's own await
    takes the future's outcome when it resumes; a cancellation of this task reaches the
    coroutine at its await, as it would if the task had run it from the start."""
    while True:
        try:
            try:
                if yielded is None:
                    await asyncio.sleep(0)
                else:
                    # what a task does with a future its coroutine yields: take it over
                    yielded._asyncio_future_blocking = False
                    await yielded
            except asyncio.CancelledError as e:
                yielded = coro.throw(e)
                continue
            except Exception:
                pass  # the future failed: the coroutine's own await raises it
            yielded = coro.send(None)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]


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
    connection_quotas: the limits on connections (kafpy.network.connection_quotas; none by
    default); failed_authentication_delay_ms: how long a connection that failed
    authentication is held before it is closed (connection.failed.authentication.delay.ms).
    """

    def __init__(
        self,
        listeners: Sequence[tuple[str, str, int]],
        handler: RequestHandler | None = None,
        *,
        max_request_size: int = SOCKET_SERVER_CONFIG_DEF.default(SOCKET_REQUEST_MAX_BYTES),
        broker_id: int = 0,
        time: Time = SYSTEM_TIME,
        security_protocols: Mapping[str, str] | None = None,
        ssl_factories: Mapping[str, SslFactory] | None = None,
        ssl_handshake_timeout_ms: int = SOCKET_SERVER_CONFIG_DEF.default(CONNECTIONS_MAX_IDLE_MS),
        sasl_configs: Mapping[str, SaslListenerConfig] | None = None,
        sasl_authentication_timeout_ms: int = SOCKET_SERVER_CONFIG_DEF.default(
            CONNECTIONS_MAX_IDLE_MS
        ),
        connection_quotas: ConnectionQuotas | None = None,
        failed_authentication_delay_ms: int = CONNECTION_QUOTA_CONFIG_DEF.default(
            FAILED_AUTHENTICATION_DELAY_MS
        ),
    ) -> None:
        self.listeners = list(listeners)
        self.connection_quotas = connection_quotas or ConnectionQuotas(
            ConnectionQuotaConfig(), time
        )
        self.failed_authentication_delay_ms = failed_authentication_delay_ms
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
        self._acceptors: dict[str, Acceptor] = {}
        self._connections: set[KafkaConnection] = set()
        self._connection_counter = itertools.count()
        self.request_interceptor: RequestInterceptor | None = None
        # Kafka's RequestMetrics, kept while the broker serves metrics (KafkaServer sets it)
        self.request_metrics: RequestMetrics | None = None

    async def bind(self) -> None:
        """Bind every listener (not accepting connections until `start_processing`)."""
        for name, host, port in self.listeners:
            try:
                sockets = open_server_sockets(host, port)
            except OSError as e:
                reason = os.strerror(e.errno).lower() if e.errno else str(e)
                if e.errno == errno.EADDRNOTAVAIL:
                    reason += (
                        f" ({host} is not an address of this host: name one of its addresses, "
                        "or 0.0.0.0 for all, in listeners; what clients connect to goes in "
                        "advertised.listeners)"
                    )
                raise OSError(
                    e.errno, f"listener {name} cannot bind {host or '0.0.0.0'}:{port}: {reason}"
                ) from e
            self.connection_quotas.add_listener(name)
            self._acceptors[name] = Acceptor(
                name, sockets, self.connection_quotas,
                lambda ip, name=name: KafkaConnection(self, name, ip),  # type: ignore[misc]
                self.log, self.close_excess_connections,
            )  # fmt: skip
            self.log.info(
                "Created listener %s on %s:%d", name, host or "0.0.0.0", self.bound_port(name)
            )

    async def start_processing(self, handler: RequestHandler | None = None) -> None:
        """Start accepting connections (after the handler is ready)."""
        if handler is not None:
            self.handler = handler
        if self.handler is None:
            raise RuntimeError("SocketServer needs a request handler before it accepts connections")
        for acceptor in self._acceptors.values():
            acceptor.start()
        self.log.info("Started socket server acceptors and processors")

    async def startup(self, handler: RequestHandler | None = None) -> None:
        await self.bind()
        await self.start_processing(handler)

    def bound_port(self, listener_name: str) -> int:
        return self._acceptors[listener_name].port

    def bound_ports(self) -> dict[str, int]:
        """Listener name -> the port it bound (what port 0 turned into)."""
        return {name: self.bound_port(name) for name in self._acceptors}

    def acceptor(self, listener_name: str) -> Acceptor:
        return self._acceptors[listener_name]

    @property
    def connection_count(self) -> int:
        return len(self._connections)

    @property
    def connections(self) -> list[KafkaConnection]:
        """The open client connections, as they are now."""
        return list(self._connections)

    def close_connections(self, reason: str, *, abort: bool = False) -> list[KafkaConnection]:
        """Close every client connection (the listeners keep accepting new ones); returns
        them, to wait until each is `lost`."""
        closed = list(self._connections)
        for conn in closed:
            conn.close(reason, abort=abort)
        return closed

    def close_excess_connections(self) -> None:
        """While the broker is over max.connections (the inter-broker listener may take
        connections over it), close the least recently used connections of the other
        listeners (Kafka's Processor.closeExcessConnections)."""
        quotas = self.connection_quotas
        while quotas.total_count > quotas.config.max_connections:
            open_ = [
                c for c in self._connections
                if not c.closed and quotas.max_connections_exceeded(c.listener_name)
            ]  # fmt: skip
            if not open_:
                return
            lru = min(open_, key=lambda c: c.last_active)
            lru.close(
                f"the broker has more than max.connections ({quotas.config.max_connections}) "
                "connections: closing the least recently used"
            )

    def reconfigure_connection_quotas(self, config: ConnectionQuotaConfig) -> None:
        """New connection limits (dynamic broker configs)."""
        self.connection_quotas.reconfigure(config)
        self.close_excess_connections()

    def reconfigure_listener_security(
        self,
        ssl_factories: Mapping[str, SslFactory],
        sasl_configs: Mapping[str, SaslListenerConfig],
    ) -> None:
        """Replace the TLS side and SASL settings of listeners (dynamic listener configs,
        KIP-226): connections accepted from now on use them; open ones keep theirs."""
        for name, factory in ssl_factories.items():
            self.ssl_factories[name] = factory
            self.log.info("Reconfigured the TLS key and trust stores of listener %s", name)
        for name, sasl in sasl_configs.items():
            self.sasl_configs[name] = sasl
            self.log.info(
                "Reconfigured SASL of listener %s: mechanisms %s",
                name, ", ".join(sasl.enabled_mechanisms),
            )  # fmt: skip

    def stop_accepting(self) -> None:
        for acceptor in self._acceptors.values():
            acceptor.close()

    async def shutdown(self) -> None:
        """Stop listening, close every connection."""
        self.log.info("Shutting down socket server")
        self.stop_accepting()
        for conn in list(self._connections):
            conn.close()
        for acceptor in self._acceptors.values():
            await acceptor.wait_closed()
        self._acceptors.clear()
        self.log.info("Shutdown completed")
