"""BrokerConnection: one TCP connection to one broker, speaking Kafka's request/response protocol.

After Kafka's NetworkClient/KafkaChannel as seen from one node: int32-size-prefixed frames
over asyncio streams, correlation ids matching responses to requests (several requests may
be in flight at once, pipelined), ApiVersions on connect to learn which versions the broker
speaks, per-request timeouts, and every in-flight request failed when the connection drops.
With `security.protocol=SSL` (a ClientSecurity with an SslFactory) the TCP connection is
wrapped in TLS before ApiVersions, checking the broker's certificate (and host name, unless
`ssl.endpoint.identification.algorithm` is empty). With SASL, a session the broker gives a
lifetime (KIP-368: `connections.max.reauth.ms`, a token's expiry) is re-authenticated
in-band before it ends, as Kafka's client does: at 85 to 95% of the lifetime, the next
request waits for those in flight to finish, authenticates again, then goes.
"""

from __future__ import annotations

import asyncio
import enum
import random
import ssl
from collections.abc import Generator, Mapping
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as package_version
from typing import Any

from kafpy.client.client_security import ClientSecurity, SaslCredentials
from kafpy.client.response_errors import error_for_code
from kafpy.common.errors import (
    KafkaConnectionError,
    KafkaError,
    RequestTimedOutError,
    UnsupportedSaslMechanismError,
    UnsupportedVersionError,
)
from kafpy.common.logger import component_logger
from kafpy.protocol.api_keys import ApiKey, api_name
from kafpy.protocol.api_versions import SUPPORTED_VERSIONS
from kafpy.protocol.errors import Errors
from kafpy.protocol.headers import RequestHeader, decode_response, encode_request
from kafpy.protocol.messages import REQUESTS
from kafpy.security.sasl_client_authenticator import SaslClientAuthenticator

_MAX_CORRELATION_ID = 2**31 - 1
_SIZE = 4

try:
    _CLIENT_SOFTWARE_VERSION = package_version("kafpy")
except PackageNotFoundError:  # running from a source tree that was never installed
    _CLIENT_SOFTWARE_VERSION = "0.0.0"


class ConnectionState(enum.Enum):
    """The life of a BrokerConnection (Kafka's ConnectionState, without authentication)."""

    DISCONNECTED = "disconnected"
    CONNECTING = "connecting"
    CHECKING_API_VERSIONS = "checking_api_versions"
    READY = "ready"


_VALID_PREVIOUS: dict[ConnectionState, frozenset[ConnectionState]] = {
    ConnectionState.CONNECTING: frozenset({ConnectionState.DISCONNECTED}),
    ConnectionState.CHECKING_API_VERSIONS: frozenset({ConnectionState.CONNECTING}),
    ConnectionState.READY: frozenset({ConnectionState.CHECKING_API_VERSIONS}),
    ConnectionState.DISCONNECTED: frozenset(ConnectionState),
}


def client_version_range(api_key: int) -> tuple[int, int]:
    """The versions of `api_key` this client will send: those the codec declares, capped at
    what kafpy's own broker speaks (the versions tested both ways) where it speaks the API."""
    try:
        message = REQUESTS[ApiKey(api_key)]
    except (KeyError, ValueError):
        raise UnsupportedVersionError(f"kafpy's client does not know API key {api_key}") from None
    lo, hi = message.valid_versions
    served = SUPPORTED_VERSIONS.get(ApiKey(api_key))
    if served is not None:
        hi = min(hi, served[1])
    return lo, hi


@dataclass
class _InFlight:
    api_key: int
    version: int
    future: asyncio.Future[dict[str, Any]]


class _Closing:
    """What close() returns: the connection is already closed when close() returns;
    awaiting this also waits until the socket is gone."""

    def __init__(self, connection: BrokerConnection) -> None:
        self._connection = connection

    def __await__(self) -> Generator[Any, None, None]:
        return self._connection.wait_closed().__await__()


class BrokerConnection:
    """A connection to one broker that sends requests and matches their responses.

    Parameters:
        host, port: the broker's address.
        client_id: sent in every request header (Kafka's `client.id`).
        request_timeout_ms: how long `send` waits for a response before raising
            RequestTimedOutError; as in Kafka, a timed-out request closes the connection.
        node_id: the broker's id, used in log lines and error messages (-1 if unknown,
            e.g. for a bootstrap address).
        connect_timeout_ms: how long `connect` waits for TCP and ApiVersions
            (default: request_timeout_ms).
        security: the connection's `security.protocol` with its TLS context and SASL
            credentials (default PLAINTEXT); SASL authenticates right after ApiVersions.

    Use: `await conn.connect()`, then `await conn.send(api_key, body)`; `conn.close()`.
    Errors: KafkaConnectionError when the broker cannot be reached or the connection is lost
    (every in-flight request gets it), RequestTimedOutError, UnsupportedVersionError when
    the broker and this client share no version of an API.
    """

    def __init__(
        self,
        host: str,
        port: int,
        *,
        client_id: str = "kafpy",
        request_timeout_ms: int = 30000,
        node_id: int = -1,
        connect_timeout_ms: int | None = None,
        security: ClientSecurity | None = None,
    ) -> None:
        self.host = host
        self.security = security or ClientSecurity()
        self.port = port
        self.client_id = client_id
        self.request_timeout_ms = request_timeout_ms
        self.connect_timeout_ms = (
            connect_timeout_ms if connect_timeout_ms is not None else request_timeout_ms
        )
        self.node_id = node_id
        self.api_versions: dict[int, tuple[int, int]] = {}
        self.state = ConnectionState.DISCONNECTED
        self._writer: asyncio.StreamWriter | None = None
        self._closed_writer: asyncio.StreamWriter | None = None
        self._read_task: asyncio.Task[None] | None = None
        self._in_flight: dict[int, _InFlight] = {}
        self._next_correlation_id = 0
        self._connect_lock = asyncio.Lock()
        self._reauthenticate_at: float | None = None  # loop time
        self._requests_open = asyncio.Event()  # cleared while re-authenticating
        self._requests_open.set()
        self._log = component_logger(__name__, "BrokerConnection", f"{node_id} {host}:{port}")

    def __repr__(self) -> str:
        return (
            f"BrokerConnection(node {self.node_id} at {self.host}:{self.port}, {self.state.value})"
        )

    @property
    def connected(self) -> bool:
        """True once connected and the broker's API versions are known."""
        return self.state is ConnectionState.READY

    @property
    def in_flight_count(self) -> int:
        return sum(1 for r in self._in_flight.values() if not r.future.done())

    def _describe(self) -> str:
        node = f"node {self.node_id}" if self.node_id >= 0 else "bootstrap broker"
        return f"{node} ({self.host}:{self.port})"

    def _transition(self, new: ConnectionState) -> None:
        if self.state not in _VALID_PREVIOUS[new]:
            raise RuntimeError(
                f"{self!r}: invalid state transition {self.state.value} -> {new.value}"
            )
        self._log.debug("%s -> %s", self.state.value, new.value)
        self.state = new

    # --- connecting ---

    async def connect(self) -> None:
        """Open the connection and learn the broker's API versions (no-op when connected).

        Raises KafkaConnectionError if the broker cannot be reached or drops the
        connection, RequestTimedOutError if it does not answer ApiVersions in time."""
        async with self._connect_lock:
            if self.state is ConnectionState.READY:
                return
            self._transition(ConnectionState.CONNECTING)
            tls = self.security.ssl
            try:
                async with asyncio.timeout(self.connect_timeout_ms / 1000):
                    if tls is None:
                        reader, writer = await asyncio.open_connection(self.host, self.port)
                    else:
                        reader, writer = await asyncio.open_connection(
                            self.host, self.port, ssl=tls.context, server_hostname=self.host
                        )
            except ssl.SSLError as e:
                self._transition(ConnectionState.DISCONNECTED)
                raise KafkaConnectionError(
                    f"TLS handshake with {self._describe()} failed: {e.reason or e}. Check the "
                    "trust store (ssl.truststore.*) holds the CA of the broker's certificate, the "
                    "certificate names this host, and the port is an SSL listener."
                ) from None
            except (OSError, TimeoutError) as e:
                self._transition(ConnectionState.DISCONNECTED)
                reason = str(e) or "timed out"
                raise KafkaConnectionError(
                    f"Could not connect to {self._describe()}: {reason}. Check that the broker "
                    "is running and that the address is right."
                ) from None
            self._writer = writer
            self._read_task = asyncio.get_running_loop().create_task(
                self._read_responses(reader), name=f"kafpy-conn-{self.host}:{self.port}"
            )
            self._transition(ConnectionState.CHECKING_API_VERSIONS)
            try:
                self.api_versions = await self._negotiate_api_versions()
                if self.security.sasl is not None:
                    self._schedule_reauthentication(await self._authenticate(self.security.sasl))
            except BaseException:
                self._shutdown(KafkaConnectionError(f"Connection to {self._describe()} closed"))
                raise
            self._transition(ConnectionState.READY)
            self._log.debug("connected; API versions %s", self.api_versions)

    async def _negotiate_api_versions(self) -> dict[int, tuple[int, int]]:
        """ApiVersions at the highest version we know; on UNSUPPORTED_VERSION (the broker
        answers in v0 format listing its own ApiVersions range) retry at the broker's max."""
        key = ApiKey.API_VERSIONS
        ours = REQUESTS[key].valid_versions[1]
        body = await self._request(
            key, _api_versions_request(), ours, self.connect_timeout_ms, connecting=True
        )
        if body["error_code"] == Errors.UNSUPPORTED_VERSION:
            theirs = {e["api_key"]: e["max_version"] for e in body["api_keys"]}.get(int(key))
            if theirs is None or theirs >= ours:
                raise UnsupportedVersionError(
                    f"{self._describe()} refused ApiVersions v{ours} without naming a version "
                    "it supports; it does not look like a Kafka broker."
                )
            self._log.debug("ApiVersions v%d unsupported; retrying at v%d", ours, theirs)
            body = await self._request(
                key, _api_versions_request(), theirs, self.connect_timeout_ms, connecting=True
            )
        if body["error_code"] != Errors.NONE:
            raise error_for_code(body["error_code"], None, f"ApiVersions to {self._describe()}")
        return {e["api_key"]: (e["min_version"], e["max_version"]) for e in body["api_keys"]}

    async def _authenticate(self, sasl: SaslCredentials) -> int:
        """SaslHandshake v1 then SaslAuthenticate until the mechanism is done (Kafka's
        SaslClientAuthenticator); SaslAuthenticationError with the broker's message. Returns
        the session lifetime the broker gave (0: none)."""
        timeout = self.connect_timeout_ms
        handshake = await self._request(
            ApiKey.SASL_HANDSHAKE, {"mechanism": sasl.mechanism}, 1, timeout, connecting=True
        )
        if handshake["error_code"] == Errors.UNSUPPORTED_SASL_MECHANISM:
            raise UnsupportedSaslMechanismError(
                f"{self._describe()} does not enable SASL mechanism {sasl.mechanism} (it "
                f"enables {', '.join(handshake['mechanisms'])}); set sasl.mechanism to one of them"
            )
        if handshake["error_code"] != Errors.NONE:
            raise error_for_code(
                handshake["error_code"], None, f"SaslHandshake to {self._describe()}"
            )
        authenticator = SaslClientAuthenticator(sasl, self.host)
        version = min(2, self.api_versions.get(int(ApiKey.SASL_AUTHENTICATE), (0, 0))[1])
        # in a thread: GSSAPI's first token may wait on the KDC
        token: bytes | None = await asyncio.to_thread(authenticator.first_message)
        lifetime = 0
        while token is not None:
            body = await self._request(
                ApiKey.SASL_AUTHENTICATE, {"auth_bytes": token}, version, timeout,
                connecting=True,
            )  # fmt: skip
            if body["error_code"] != Errors.NONE:
                raise error_for_code(
                    body["error_code"], body["error_message"],
                    f"SASL authentication with {self._describe()}",
                )  # fmt: skip
            lifetime = int(body.get("session_lifetime_ms", 0))
            token = authenticator.evaluate_challenge(bytes(body["auth_bytes"]))
        self._log.debug("authenticated as %s with %s", sasl.username, sasl.mechanism)
        return lifetime

    def _schedule_reauthentication(self, lifetime_ms: int) -> None:
        """Re-authenticate at 85 to 95% of the session's lifetime (Kafka's client's window)."""
        if lifetime_ms <= 0:
            self._reauthenticate_at = None
            return
        at = lifetime_ms * (0.85 + 0.1 * random.random()) / 1000  # noqa: S311
        self._reauthenticate_at = asyncio.get_running_loop().time() + at

    async def _before_request(self) -> None:
        """Wait out a re-authentication in progress, or run one that is due."""
        if not self._requests_open.is_set():
            await self._requests_open.wait()
        due = self._reauthenticate_at
        if due is not None and asyncio.get_running_loop().time() >= due:
            await self._reauthenticate()
        self._ensure_ready()

    async def _reauthenticate(self) -> None:
        """KIP-368 in-band: no request may be sent meanwhile, so new ones wait and those in
        flight are let finish first. A failure closes the connection."""
        sasl = self.security.sasl
        assert sasl is not None
        self._reauthenticate_at = None
        self._requests_open.clear()
        try:
            pending = [r.future for r in self._in_flight.values() if not r.future.done()]
            if pending:
                await asyncio.wait(pending)
            self._ensure_ready()
            self._log.debug("re-authenticating with %s", sasl.mechanism)
            self._schedule_reauthentication(await self._authenticate(sasl))
        except BaseException as e:
            if self.state is ConnectionState.READY:
                self._shutdown(
                    KafkaConnectionError(f"Re-authentication with {self._describe()} failed: {e}")
                )
            raise
        finally:
            self._requests_open.set()

    # --- sending ---

    def pick_version(self, api_key: int) -> int:
        """The highest version of `api_key` both this client and the broker support."""
        lo, hi = client_version_range(api_key)
        theirs = self.api_versions.get(int(api_key))
        if theirs is None:
            raise UnsupportedVersionError(
                f"{self._describe()} does not support the {api_name(api_key)} API "
                f"(key {int(api_key)}); it needs a newer broker."
            )
        best = min(hi, theirs[1])
        if best < max(lo, theirs[0]):
            raise UnsupportedVersionError(
                f"{self._describe()} supports {api_name(api_key)} versions "
                f"{theirs[0]}-{theirs[1]}, kafpy's client {lo}-{hi}: no version in common."
            )
        return best

    def _check_version(self, api_key: int, version: int) -> None:
        message = REQUESTS[ApiKey(api_key)]
        lo, hi = message.valid_versions
        theirs = self.api_versions.get(int(api_key))
        if not lo <= version <= hi or (
            theirs is not None and not theirs[0] <= version <= theirs[1]
        ):
            span = f"{theirs[0]}-{theirs[1]}" if theirs is not None else "none"
            raise UnsupportedVersionError(
                f"{api_name(api_key)} v{version} cannot be sent to {self._describe()}: the "
                f"broker supports versions {span}, kafpy's codec {lo}-{hi}."
            )

    async def send(
        self,
        api_key: int,
        body: Mapping[str, Any],
        version: int | None = None,
        *,
        timeout_ms: int | None = None,
    ) -> dict[str, Any]:
        """Send one request and return the response body (a dict).

        `version` defaults to the highest both sides support; `timeout_ms` to the
        connection's request timeout (a long-polling Fetch should pass its max wait plus
        the request timeout). Requests may be sent concurrently; they are pipelined.
        Error codes inside the response are returned as they are, not raised."""
        self._ensure_ready()
        if self._reauthenticate_at is not None or not self._requests_open.is_set():
            await self._before_request()
        if version is None:
            version = self.pick_version(api_key)
        else:
            self._check_version(api_key, version)
        timeout = self.request_timeout_ms if timeout_ms is None else timeout_ms
        return await self._request(api_key, body, version, timeout)

    async def send_no_response(
        self, api_key: int, body: Mapping[str, Any], version: int | None = None
    ) -> None:
        """Send a request the broker does not answer (Produce with acks=0)."""
        self._ensure_ready()
        if self._reauthenticate_at is not None or not self._requests_open.is_set():
            await self._before_request()
        if version is None:
            version = self.pick_version(api_key)
        else:
            self._check_version(api_key, version)
        self._write(api_key, body, version, self._take_correlation_id())
        await self._drain(self.request_timeout_ms)

    def _ensure_ready(self) -> None:
        if self.state is not ConnectionState.READY:
            raise KafkaConnectionError(
                f"Not connected to {self._describe()} ({self.state.value}); connect first."
            )

    def _take_correlation_id(self) -> int:
        correlation_id = self._next_correlation_id
        self._next_correlation_id = (
            0 if correlation_id >= _MAX_CORRELATION_ID else correlation_id + 1
        )
        return correlation_id

    def _write(
        self, api_key: int, body: Mapping[str, Any], version: int, correlation_id: int
    ) -> None:
        header = RequestHeader(
            api_key=int(api_key),
            api_version=version,
            correlation_id=correlation_id,
            client_id=self.client_id,
        )
        frame = encode_request(header, body)
        assert self._writer is not None
        self._writer.write(frame)

    async def _drain(self, timeout_ms: int) -> None:
        assert self._writer is not None
        try:
            async with asyncio.timeout(timeout_ms / 1000):
                await self._writer.drain()
        except (OSError, TimeoutError) as e:
            error = KafkaConnectionError(
                f"Connection to {self._describe()} lost while sending: {e or 'timed out'}"
            )
            self._shutdown(error)
            raise error from None

    async def _request(
        self,
        api_key: int,
        body: Mapping[str, Any],
        version: int,
        timeout_ms: int,
        *,
        connecting: bool = False,
    ) -> dict[str, Any]:
        if not connecting:
            self._ensure_ready()
        elif self._writer is None:
            raise KafkaConnectionError(f"Connection to {self._describe()} is closed")
        correlation_id = self._take_correlation_id()
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        # registered before writing, so the response can never arrive first
        self._in_flight[correlation_id] = _InFlight(int(api_key), version, future)
        try:
            self._write(api_key, body, version, correlation_id)
        except BaseException:
            del self._in_flight[correlation_id]
            raise
        try:
            async with asyncio.timeout(timeout_ms / 1000):
                await self._drain(timeout_ms)
                return await future
        except TimeoutError:
            error = RequestTimedOutError(
                f"{api_name(api_key)} request (correlation id {correlation_id}) to "
                f"{self._describe()} timed out after {timeout_ms} ms"
            )
            # as Kafka's NetworkClient does: a node that does not answer in time is dropped
            self._log.info("Disconnecting: %s", error)
            self._shutdown(KafkaConnectionError(f"{self._describe()} was disconnected: {error}"))
            raise error from None

    # --- receiving ---

    async def _read_responses(self, reader: asyncio.StreamReader) -> None:
        reason = "the broker closed the connection"
        try:
            while True:
                size = int.from_bytes(await reader.readexactly(_SIZE), "big", signed=True)
                if size < _SIZE:
                    reason = f"the broker sent a response of invalid size {size}"
                    break
                frame = await reader.readexactly(size)
                problem = self._complete(frame)
                if problem is not None:
                    reason = problem
                    break
        except asyncio.IncompleteReadError:
            pass
        except OSError as e:
            reason = f"{e}"
        self._shutdown(KafkaConnectionError(f"Connection to {self._describe()} lost: {reason}"))

    def _complete(self, frame: bytes) -> str | None:
        """Hand one response frame to its request; a reason to close the connection if
        the frame answers no request."""
        correlation_id = int.from_bytes(frame[:_SIZE], "big", signed=True)
        request = self._in_flight.pop(correlation_id, None)
        if request is None:
            return f"the broker answered correlation id {correlation_id}, which no request has"
        if request.future.done():  # the caller gave up (cancelled) meanwhile
            return None
        version = request.version
        if (
            request.api_key == ApiKey.API_VERSIONS
            and int.from_bytes(frame[4:6], "big", signed=True) == Errors.UNSUPPORTED_VERSION
        ):
            version = 0  # Kafka answers an unsupported ApiVersions version in v0 format
        try:
            _, body = decode_response(request.api_key, version, frame)
        except KafkaError as e:
            request.future.set_exception(e)
        except Exception as e:  # ProtocolDecodeError, or anything a codec bug raises
            error = KafkaError(
                f"Could not decode the {api_name(request.api_key)} v{version} response "
                f"from {self._describe()}: {e}"
            )
            error.__cause__ = e
            request.future.set_exception(error)
        else:
            request.future.set_result(body)
        return None

    # --- closing ---

    def _shutdown(self, error: KafkaError) -> None:
        """Close the socket and fail every in-flight request with `error`."""
        if self._writer is not None:
            self._writer.close()
            self._closed_writer = self._writer
            self._writer = None
        task, self._read_task = self._read_task, None
        if task is not None and task is not asyncio.current_task():
            task.cancel()
        in_flight, self._in_flight = self._in_flight, {}
        for request in in_flight.values():
            if not request.future.done():
                request.future.set_exception(error)
        if in_flight:
            self._log.debug("failed %d in-flight requests: %s", len(in_flight), error)
        if self.state is not ConnectionState.DISCONNECTED:
            self._transition(ConnectionState.DISCONNECTED)

    def close(self) -> _Closing:
        """Close the connection now, failing in-flight requests with KafkaConnectionError.

        Works called plainly (`conn.close()`) or awaited (`await conn.close()`, which also
        waits until the socket is closed). Safe to call more than once."""
        self._shutdown(KafkaConnectionError(f"Connection to {self._describe()} was closed"))
        return _Closing(self)

    async def wait_closed(self) -> None:
        writer, self._closed_writer = self._closed_writer, None
        if writer is not None:
            try:
                await writer.wait_closed()
            except OSError:
                pass

    async def __aenter__(self) -> BrokerConnection:
        await self.connect()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


def _api_versions_request() -> dict[str, Any]:
    return {
        "client_software_name": "kafpy",
        "client_software_version": _CLIENT_SOFTWARE_VERSION,
    }
