"""Fault injection for kafpy.testing brokers, as librdkafka's mock cluster offers it.

`FaultInjector` sits in front of each in-process broker's request handler (the socket
server's `request_interceptor`). It fails the next requests of an API with an error Kafka
really returns for that API, answered in the API's own response shape (per partition where
the API has partitions), delays requests, throttles a client (throttle_time_ms and a muted
connection, as a quota does), drops connections, and stops and starts brokers of the
cluster it belongs to. Only client requests meet faults: replicas'
fetches (replica id >= 0) and the controller's requests to brokers pass untouched.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kafpy.network.request_channel import Request, RequestHandler, ResponseParts
from kafpy.network.socket_server import RequestInterceptor
from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.errors import Errors
from kafpy.protocol.headers import decode_response, encode_response
from kafpy.protocol.messages import API_SCHEMAS

if TYPE_CHECKING:
    from kafpy.testing.broker import KafkaCluster

__all__ = ["FaultInjector", "FAILABLE_ERRORS"]

_E = Errors
_COORDINATOR = (_E.COORDINATOR_NOT_AVAILABLE, _E.COORDINATOR_LOAD_IN_PROGRESS, _E.NOT_COORDINATOR)
_MEMBER = (_E.UNKNOWN_MEMBER_ID, _E.ILLEGAL_GENERATION, _E.REBALANCE_IN_PROGRESS)
_FENCED = (_E.PRODUCER_FENCED, _E.INVALID_PRODUCER_EPOCH)

# The errors Kafka 2.8 returns for each API that faults can fail (from each response's
# documented error codes); an injected error outside its API's list is refused.
FAILABLE_ERRORS: dict[ApiKey, tuple[Errors, ...]] = {
    ApiKey.PRODUCE: (
        _E.NOT_LEADER_OR_FOLLOWER, _E.UNKNOWN_TOPIC_OR_PARTITION, _E.LEADER_NOT_AVAILABLE,
        _E.NOT_ENOUGH_REPLICAS, _E.NOT_ENOUGH_REPLICAS_AFTER_APPEND, _E.REQUEST_TIMED_OUT,
        _E.KAFKA_STORAGE_ERROR, _E.MESSAGE_TOO_LARGE, _E.RECORD_LIST_TOO_LARGE,
        _E.CORRUPT_MESSAGE, _E.INVALID_RECORD, _E.TOPIC_AUTHORIZATION_FAILED,
        _E.UNKNOWN_SERVER_ERROR,
    ),
    ApiKey.FETCH: (
        _E.NOT_LEADER_OR_FOLLOWER, _E.UNKNOWN_TOPIC_OR_PARTITION, _E.OFFSET_OUT_OF_RANGE,
        _E.FENCED_LEADER_EPOCH, _E.UNKNOWN_LEADER_EPOCH, _E.KAFKA_STORAGE_ERROR,
        _E.TOPIC_AUTHORIZATION_FAILED, _E.UNKNOWN_SERVER_ERROR,
    ),
    ApiKey.LIST_OFFSETS: (
        _E.NOT_LEADER_OR_FOLLOWER, _E.UNKNOWN_TOPIC_OR_PARTITION, _E.LEADER_NOT_AVAILABLE,
        _E.OFFSET_NOT_AVAILABLE, _E.FENCED_LEADER_EPOCH, _E.UNKNOWN_LEADER_EPOCH,
        _E.KAFKA_STORAGE_ERROR, _E.TOPIC_AUTHORIZATION_FAILED,
    ),
    ApiKey.FIND_COORDINATOR: (
        _E.COORDINATOR_NOT_AVAILABLE, _E.COORDINATOR_LOAD_IN_PROGRESS,
        _E.GROUP_AUTHORIZATION_FAILED,
    ),
    ApiKey.JOIN_GROUP: (*_COORDINATOR, _E.UNKNOWN_MEMBER_ID, _E.GROUP_AUTHORIZATION_FAILED),
    ApiKey.SYNC_GROUP: (*_COORDINATOR, *_MEMBER, _E.GROUP_AUTHORIZATION_FAILED),
    ApiKey.HEARTBEAT: (*_COORDINATOR, *_MEMBER, _E.GROUP_AUTHORIZATION_FAILED),
    ApiKey.LEAVE_GROUP: (*_COORDINATOR, _E.UNKNOWN_MEMBER_ID, _E.GROUP_AUTHORIZATION_FAILED),
    ApiKey.OFFSET_COMMIT: (
        *_COORDINATOR, *_MEMBER, _E.REQUEST_TIMED_OUT, _E.OFFSET_METADATA_TOO_LARGE,
        _E.UNKNOWN_TOPIC_OR_PARTITION, _E.GROUP_AUTHORIZATION_FAILED,
        _E.TOPIC_AUTHORIZATION_FAILED,
    ),
    ApiKey.INIT_PRODUCER_ID: (
        *_COORDINATOR, _E.CONCURRENT_TRANSACTIONS, _E.CLUSTER_AUTHORIZATION_FAILED,
        *_FENCED, _E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
    ),
    ApiKey.ADD_PARTITIONS_TO_TXN: (
        *_COORDINATOR, _E.CONCURRENT_TRANSACTIONS, _E.UNKNOWN_TOPIC_OR_PARTITION, *_FENCED,
        _E.INVALID_TXN_STATE, _E.INVALID_PRODUCER_ID_MAPPING, _E.TOPIC_AUTHORIZATION_FAILED,
        _E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
    ),
    ApiKey.ADD_OFFSETS_TO_TXN: (
        *_COORDINATOR, _E.CONCURRENT_TRANSACTIONS, *_FENCED, _E.INVALID_PRODUCER_ID_MAPPING,
        _E.INVALID_TXN_STATE, _E.GROUP_AUTHORIZATION_FAILED,
        _E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
    ),
    ApiKey.TXN_OFFSET_COMMIT: (
        *_COORDINATOR, _E.REQUEST_TIMED_OUT, _E.UNKNOWN_TOPIC_OR_PARTITION, _E.ILLEGAL_GENERATION,
        _E.UNKNOWN_MEMBER_ID, _E.FENCED_INSTANCE_ID, *_FENCED, _E.GROUP_AUTHORIZATION_FAILED,
        _E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
    ),
    ApiKey.END_TXN: (
        *_COORDINATOR, _E.CONCURRENT_TRANSACTIONS, *_FENCED, _E.INVALID_PRODUCER_ID_MAPPING,
        _E.INVALID_TXN_STATE, _E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
    ),
}  # fmt: skip

# APIs the controller and replicas send each other: never faulted
_INTER_BROKER = frozenset(
    {
        ApiKey.LEADER_AND_ISR,
        ApiKey.UPDATE_METADATA,
        ApiKey.STOP_REPLICA,
        ApiKey.CONTROLLED_SHUTDOWN,
    }
)


def _api_by_name(api: str) -> ApiKey:
    for key in ApiKey:
        if key.api_name == api:
            return key
    raise ValueError(
        f"Unknown API {api!r} for a fault: use Kafka's API name, one of "
        f"{', '.join(sorted(k.api_name for k in ApiKey))}."
    )


def _failable_api(api: str) -> ApiKey:
    key = _api_by_name(api)
    if key not in FAILABLE_ERRORS:
        raise ValueError(
            f"Failing {api} requests is not supported: fail_next serves "
            f"{', '.join(sorted(k.api_name for k in FAILABLE_ERRORS))}."
        )
    return key


def _error_for(key: ApiKey, error: str) -> Errors:
    valid = FAILABLE_ERRORS[key]
    names = ", ".join(e.name for e in valid)
    try:
        code = Errors[error]
    except KeyError:
        raise ValueError(
            f"Unknown error {error!r} for a {key.api_name} fault: use Kafka's error name, "
            f"one of {names}."
        ) from None
    if code not in valid:
        raise ValueError(f"Kafka does not answer {key.api_name} with {error}: use one of {names}.")
    return code


def error_response(
    key: ApiKey, body: Mapping[str, Any], code: int, version: int | None = None
) -> dict[str, Any]:
    """The response body Kafka sends for a request of `key` failing with `code` (the API's
    error response, kafpy/protocol/messages); `version` defaults to the highest served."""
    schema = API_SCHEMAS[key]
    return schema.error_response(body, schema.versions[1] if version is None else version, code)


@dataclass
class _Failure:
    code: Errors
    remaining: int
    broker: int | None


@dataclass
class _Delay:
    ms: int
    remaining: int | None
    broker: int | None


@dataclass
class _Throttle:
    client_id: str
    ms: int
    remaining: int | None
    broker: int | None


class FaultInjector:
    """The faults of one KafkaBroker or KafkaCluster (in this process, or forwarded to a
    broker in a child process: kafpy.testing.child).

    Methods are called from the test's thread; brokers consult the faults on their own
    loops, so the state sits under a lock. `fired(api)` counts the requests of an API that
    met a fault, for asserting that a fault fired as often as configured.
    """

    def __init__(self, cluster: KafkaCluster) -> None:
        self._cluster = cluster
        self._lock = threading.Lock()
        self._failures: dict[ApiKey, list[_Failure]] = {}
        self._delays: dict[ApiKey, list[_Delay]] = {}
        self._fired: dict[ApiKey, int] = {}
        self._throttles: list[_Throttle] = []

    def _forward(self, op: str, **kwargs: Any) -> list[Any] | None:
        """With brokers in child processes, do `op` in each of them (kafpy.testing.child)
        and return their results; None when the brokers are in this process."""
        if getattr(self._cluster, "mode", "inprocess") != "subprocess":
            return None
        return self._cluster.remote_faults(op, kwargs)

    # -- configuring --------------------------------------------------------------------

    def fail_next(self, api: str, error: str, count: int = 1, *, broker: int | None = None) -> None:
        """Answer the next `count` `api` requests (to `broker` only, if given) with
        `error` in the API's response shape, every partition of the request failing."""
        key = _failable_api(api)
        code = _error_for(key, error)
        if count < 1:
            raise ValueError(f"count {count} for fail_next: it must be 1 or more.")
        if self._forward("fail_next", api=api, error=error, count=count, broker=broker):
            return
        with self._lock:
            self._failures.setdefault(key, []).append(_Failure(code, count, broker))

    def delay(
        self, api: str, ms: int, count: int | None = None, *, broker: int | None = None
    ) -> None:
        """Hold `api` requests `ms` milliseconds before serving them: the next `count`
        ones, or all until `clear()` when `count` is None."""
        key = _api_by_name(api)
        if ms < 0:
            raise ValueError(f"ms {ms} for delay: it must be 0 or more.")
        if count is not None and count < 1:
            raise ValueError(f"count {count} for delay: it must be 1 or more, or None.")
        if self._forward("delay", api=api, ms=ms, count=count, broker=broker):
            return
        with self._lock:
            self._delays.setdefault(key, []).append(_Delay(ms, count, broker))

    def throttle(
        self, client_id: str, ms: int, count: int | None = None, *, broker: int | None = None
    ) -> None:
        """Throttle the client `client_id` as a broker throttles a client over its quota:
        its responses carry `throttle_time_ms` = `ms` and its connection is not read for
        that long after each; the next `count` requests, or all until `clear()`."""
        if ms < 1:
            raise ValueError(f"ms {ms} for throttle: it must be 1 or more.")
        if count is not None and count < 1:
            raise ValueError(f"count {count} for throttle: it must be 1 or more, or None.")
        if self._forward("throttle", client_id=client_id, ms=ms, count=count, broker=broker):
            return
        with self._lock:
            self._throttles.append(_Throttle(client_id, ms, count, broker))

    def clear(self) -> None:
        """Forget every pending failure, delay and throttle, and the counts of `fired`."""
        self._forward("clear")
        with self._lock:
            self._failures.clear()
            self._delays.clear()
            self._throttles.clear()
            self._fired.clear()

    def fired(self, api: str) -> int:
        """How many `api` requests met a fault (failed or delayed) so far."""
        key = _api_by_name(api)
        remote = self._forward("fired", api=api)
        if remote is not None:
            return sum(remote)
        with self._lock:
            return self._fired.get(key, 0)

    # -- acting on brokers --------------------------------------------------------------

    def drop_connections(self, broker: int | None = None) -> None:
        """Close every client connection to `broker` (all brokers when None); clients
        reconnect as they would after a network failure."""
        self._cluster.drop_connections(broker)

    def move_leader(self, topic: str, partition: int, to: int) -> None:
        """Move the partition's leadership to broker `to` (a reassignment putting it first,
        then a preferred election, as with Kafka); clients follow through their metadata."""
        self._cluster.move_leader(topic, partition, to)

    def stop_broker(self, broker: int) -> None:
        """Shut broker `broker` (its broker.id) down cleanly; its leaderships move."""
        self._cluster.stop_broker(broker)

    def start_broker(self, broker: int) -> None:
        """Start a stopped broker again, on its old port and data."""
        self._cluster.start_broker(broker)

    # -- on the brokers' loops ----------------------------------------------------------

    def _take(self, key: ApiKey, broker_id: int) -> tuple[Errors | None, int]:
        with self._lock:
            code: Errors | None = None
            for failure in self._failures.get(key, ()):
                if failure.broker in (None, broker_id):
                    failure.remaining -= 1
                    code = failure.code
                    if failure.remaining == 0:
                        self._failures[key].remove(failure)
                    break
            delay_ms = 0
            for delay in self._delays.get(key, ()):
                if delay.broker in (None, broker_id):
                    delay_ms = delay.ms
                    if delay.remaining is not None:
                        delay.remaining -= 1
                        if delay.remaining == 0:
                            self._delays[key].remove(delay)
                    break
            if code is not None or delay_ms:
                self._fired[key] = self._fired.get(key, 0) + 1
            return code, delay_ms

    def _take_throttle(self, key: ApiKey, client_id: str, broker_id: int) -> int:
        with self._lock:
            for t in self._throttles:
                if t.client_id == client_id and t.broker in (None, broker_id):
                    if t.remaining is not None:
                        t.remaining -= 1
                        if t.remaining == 0:
                            self._throttles.remove(t)
                    self._fired[key] = self._fired.get(key, 0) + 1
                    return t.ms
            return 0

    def interceptor(self, broker_id: int) -> RequestInterceptor:
        """The socket server hook of broker `broker_id`."""

        async def intercept(request: Request, handler: RequestHandler) -> ResponseParts | None:
            if self._throttles and request.body is not None:
                return await throttled(request, handler)
            return await faulted(request, handler)

        async def throttled(request: Request, handler: RequestHandler) -> ResponseParts | None:
            try:
                key = ApiKey(request.api_key)
            except ValueError:
                return await faulted(request, handler)
            ms = 0 if key in _INTER_BROKER else self._take_throttle(
                key, request.header.client_id or "", broker_id)  # fmt: skip
            response = await faulted(request, handler)
            if not ms:
                return response
            request.context["throttle_ms"] = ms  # the socket server mutes the connection
            if response is None:
                return None
            header = request.header
            _cid, body = decode_response(key, header.api_version, b"".join(response)[4:])
            body["throttle_time_ms"] = ms
            return encode_response(key, header.api_version, header.correlation_id, body)

        async def faulted(request: Request, handler: RequestHandler) -> ResponseParts | None:
            try:
                key = ApiKey(request.api_key)
            except ValueError:
                return await handler.handle(request)
            body = request.body
            if (
                body is None
                or key in _INTER_BROKER
                or (key == ApiKey.FETCH and body.get("replica_id", -1) >= 0)
                or (key not in self._failures and key not in self._delays)
            ):
                return await handler.handle(request)
            code, delay_ms = self._take(key, broker_id)
            if delay_ms:
                await asyncio.sleep(delay_ms / 1000)
            if code is None:
                return await handler.handle(request)
            if key == ApiKey.PRODUCE and body["acks"] == 0:
                return None  # no answer is sent to acks=0 producers
            header = request.header
            answer = error_response(key, body, code, header.api_version)
            return encode_response(key, header.api_version, header.correlation_id, answer)

        return intercept
