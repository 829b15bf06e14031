"""ConnectionQuotas: the broker's limits on client connections (Kafka 2.8's
`kafka.network.ConnectionQuotas`, KIP-306, KIP-402 and KIP-612).

What each limit does to a new connection, in the order the acceptor checks them:

1. `max.connections` (broker-wide) and `listener.name.<l>.max.connections`: the acceptor
   of the listener waits for a free slot before it takes the connection (it accepts nothing
   else meanwhile; connections queue in the kernel). The inter-broker listener is exempt
   from the broker-wide limit while the broker has another listener: when one of its
   connections takes the total over, the least recently used connection of another
   listener is closed instead.
2. `max.connection.creation.rate` (broker-wide, the inter-broker listener exempt) and
   `listener.name.<l>.max.connection.creation.rate`: the acceptor waits until the measured
   rate is back within the limit (capped at `quota.window.size.seconds`), then goes on.
3. The IP's connection-rate quota (`connection_creation_rate` of `/config/ips/<ip>` or
   `/config/ips/<default>`): a connection over it is not counted and is closed after the
   delay that brings the rate back within the quota.
4. `max.connections.per.ip` and `max.connections.per.ip.overrides`: a connection over the
   address's limit is closed at once ("Rejected connection from /<ip>, address already has
   the configured maximum of <n> connections.").

Every limit is unlimited (Int.MaxValue) unless set. Rates are measured as Kafka's sensors
measure them: `quota.window.num` windows of `quota.window.size.seconds`.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kafpy.common.client_quota_config import normalize_ip, resolve_host
from kafpy.common.config_def import ConfigDef, ConfigType, Importance, Range, config_error
from kafpy.common.errors import InvalidConfigurationError
from kafpy.common.logger import component_logger
from kafpy.common.rate import Rate
from kafpy.common.time import SYSTEM_TIME, Time
from kafpy.network.listener_name import listener_config_prefix

__all__ = [
    "CONNECTION_QUOTA_CONFIG_DEF",
    "ConnectionQuotaConfig",
    "ConnectionQuotas",
    "ConnectionThrottled",
    "INT_MAX",
    "LISTENER_RECONFIGURABLE_CONFIGS",
    "RECONFIGURABLE_CONFIGS",
    "TooManyConnections",
]

INT_MAX = 2**31 - 1
"""Java's Int.MaxValue: every connection limit's default (no limit)."""

MAX_CONNECTIONS_PER_IP = "max.connections.per.ip"
MAX_CONNECTIONS_PER_IP_OVERRIDES = "max.connections.per.ip.overrides"
MAX_CONNECTIONS = "max.connections"
MAX_CONNECTION_CREATION_RATE = "max.connection.creation.rate"
FAILED_AUTHENTICATION_DELAY_MS = "connection.failed.authentication.delay.ms"

RECONFIGURABLE_CONFIGS = frozenset(
    {MAX_CONNECTIONS_PER_IP, MAX_CONNECTIONS_PER_IP_OVERRIDES, MAX_CONNECTIONS,
     MAX_CONNECTION_CREATION_RATE}
)  # fmt: skip
"""Kafka's SocketServer.ReconfigurableConfigs (dynamic, per broker or cluster-wide)."""

LISTENER_RECONFIGURABLE_CONFIGS = frozenset({MAX_CONNECTIONS, MAX_CONNECTION_CREATION_RATE})
"""Kafka's SocketServer.ListenerReconfigurableConfigs: what `listener.name.<l>.` may set."""

# an IP's sensor is dropped after an hour without connections (Kafka's
# InactiveSensorExpirationTimeSeconds)
_IP_SENSOR_EXPIRATION_MS = 3600 * 1000


def _connection_quota_config_def() -> ConfigDef:
    m, t = Importance.MEDIUM, ConfigType
    return (
        ConfigDef()
        .define(MAX_CONNECTIONS_PER_IP, t.INT, INT_MAX, Range.at_least(0), m,
                "The maximum number of connections we allow from each ip address. New "
                "connections from the ip address are dropped if the limit is reached.")
        .define(MAX_CONNECTIONS_PER_IP_OVERRIDES, t.STRING, "", None, m,
                "Per-ip or hostname overrides of max.connections.per.ip: 'host:count,...'.")
        .define(MAX_CONNECTIONS, t.INT, INT_MAX, Range.at_least(0), m,
                "The maximum number of connections in the broker at any time; the acceptor "
                "waits for a slot. listener.name.<listener>.max.connections limits a listener.")
        .define(MAX_CONNECTION_CREATION_RATE, t.INT, INT_MAX, Range.at_least(0), m,
                "The maximum connection creation rate (per second) in the broker; "
                "listener.name.<listener>.max.connection.creation.rate limits a listener.")
        .define(FAILED_AUTHENTICATION_DELAY_MS, t.INT, 100, Range.at_least(0), Importance.LOW,
                "Connection close delay on failed authentication (ms); must be less than "
                "connections.max.idle.ms.")
    )  # fmt: skip


CONNECTION_QUOTA_CONFIG_DEF: ConfigDef = _connection_quota_config_def()
"""The server.properties keys of the connection quotas (a subset of KafkaConfig)."""

# Kafka's Utils.validHostPattern
_VALID_HOST = re.compile(r"^[0-9a-zA-Z\-%._:\[\]]*$")


def parse_max_connections_per_ip_overrides(value: str) -> dict[str, int]:
    """`host:count,host2:count` as {address: count} (Kafka's getMap and the checks of
    KafkaConfig); InvalidConfigurationError naming the key otherwise."""
    key = MAX_CONNECTIONS_PER_IP_OVERRIDES
    overrides: dict[str, int] = {}
    if not value.strip():
        return overrides
    invalid: list[str] = []
    entries: list[tuple[str, str]] = []
    for entry in value.split(","):
        host, sep, count = entry.strip().rpartition(":")
        if not sep or not host.strip():
            raise InvalidConfigurationError(
                f"Error parsing configuration property '{key}': it must be in the format "
                "'key1:value1,key2:value2'"
            )
        entries.append((host.strip(), count.strip()))
        if not _VALID_HOST.match(host.strip()):
            invalid.append(host.strip())
    if invalid:
        raise InvalidConfigurationError(f"{key} contains invalid addresses : {','.join(invalid)}")
    for host, count in entries:
        try:
            limit = int(count)
        except ValueError:
            raise config_error(key, value, f"{count} is not a number of connections") from None
        address = resolve_host(host)
        if address is None:
            raise config_error(key, value, f"{host} is not a valid IP or resolvable host")
        overrides[address] = limit
    return overrides


@dataclass(frozen=True)
class ConnectionQuotaConfig:
    """The connection limits of a broker (Kafka's keys in brackets).

    max_connections_per_ip [max.connections.per.ip], max_connections_per_ip_overrides
    (address -> limit) [max.connections.per.ip.overrides], max_connections
    [max.connections], max_connection_creation_rate [max.connection.creation.rate];
    listener_max_connections and listener_max_connection_creation_rate: listener name ->
    its `listener.name.<l>.` value; inter_broker_listener_name: the listener exempt from
    the broker-wide limits; quota_window_num / quota_window_size_seconds: how rates are
    measured [quota.window.num, quota.window.size.seconds]; failed_authentication_delay_ms
    [connection.failed.authentication.delay.ms].
    """

    max_connections_per_ip: int = CONNECTION_QUOTA_CONFIG_DEF.default(MAX_CONNECTIONS_PER_IP)
    max_connections_per_ip_overrides: Mapping[str, int] = field(default_factory=dict)
    max_connections: int = CONNECTION_QUOTA_CONFIG_DEF.default(MAX_CONNECTIONS)
    max_connection_creation_rate: int = CONNECTION_QUOTA_CONFIG_DEF.default(
        MAX_CONNECTION_CREATION_RATE
    )
    listener_max_connections: Mapping[str, int] = field(default_factory=dict)
    listener_max_connection_creation_rate: Mapping[str, int] = field(default_factory=dict)
    inter_broker_listener_name: str = ""
    quota_window_num: int = 11
    quota_window_size_seconds: int = 1
    failed_authentication_delay_ms: int = CONNECTION_QUOTA_CONFIG_DEF.default(
        FAILED_AUTHENTICATION_DELAY_MS
    )

    @classmethod
    def from_props(
        cls,
        props: Mapping[str, object],
        listener_names: Sequence[str],
        inter_broker_listener_name: str = "",
        quota_window_num: int = 11,
        quota_window_size_seconds: int = 1,
    ) -> ConnectionQuotaConfig:
        """The limits of a broker's raw properties (server.properties with its dynamic
        overrides): the keys above and each listener's `listener.name.<l>.` overrides.

        Raises InvalidConfigurationError naming the key."""
        values = CONNECTION_QUOTA_CONFIG_DEF.parse(props)
        overrides = parse_max_connections_per_ip_overrides(
            str(values[MAX_CONNECTIONS_PER_IP_OVERRIDES])
        )
        if values[MAX_CONNECTIONS_PER_IP] == 0 and not overrides:
            raise InvalidConfigurationError(
                f"{MAX_CONNECTIONS_PER_IP} can be set to zero only if "
                f"{MAX_CONNECTIONS_PER_IP_OVERRIDES} property is set."
            )
        per_listener: dict[str, dict[str, int]] = {
            MAX_CONNECTIONS: {}, MAX_CONNECTION_CREATION_RATE: {}
        }  # fmt: skip
        for name in listener_names:
            prefix = listener_config_prefix(name)
            for key, found in per_listener.items():
                raw = props.get(prefix + key)
                if raw is not None:
                    found[name] = _listener_value(key, prefix + key, raw)
        return cls(
            max_connections_per_ip=int(values[MAX_CONNECTIONS_PER_IP]),
            max_connections_per_ip_overrides=overrides,
            max_connections=int(values[MAX_CONNECTIONS]),
            max_connection_creation_rate=int(values[MAX_CONNECTION_CREATION_RATE]),
            listener_max_connections=per_listener[MAX_CONNECTIONS],
            listener_max_connection_creation_rate=per_listener[MAX_CONNECTION_CREATION_RATE],
            inter_broker_listener_name=inter_broker_listener_name,
            quota_window_num=quota_window_num,
            quota_window_size_seconds=quota_window_size_seconds,
            failed_authentication_delay_ms=int(values[FAILED_AUTHENTICATION_DELAY_MS]),
        )


def _listener_value(name: str, key: str, raw: object) -> int:
    """A listener's `name` (max.connections or max.connection.creation.rate) set by `key`:
    a positive int (Kafka's ListenerConnectionQuota.validateReconfiguration says
    `Invalid max.connections 0`)."""
    try:
        value = int(str(raw).strip())
    except ValueError:
        raise config_error(key, raw, "Not a number of type INT") from None
    if value <= 0:
        raise InvalidConfigurationError(f"Invalid {name} {value} (set by {key})")
    return value


class TooManyConnections(Exception):
    """Kafka's TooManyConnectionsException: the address has its maximum of connections."""

    def __init__(self, ip: str, count: int) -> None:
        super().__init__(f"Too many connections from /{ip} (maximum = {count})")
        self.ip = ip
        self.count = count


class ConnectionThrottled(Exception):
    """Kafka's ConnectionThrottledException: the address is over its connection-rate quota;
    its connection is closed `throttle_time_ms` after `start_throttle_time_ms`."""

    def __init__(self, ip: str, start_throttle_time_ms: int, throttle_time_ms: int) -> None:
        super().__init__(f"/{ip} throttled for {throttle_time_ms}")
        self.ip = ip
        self.start_throttle_time_ms = start_throttle_time_ms
        self.throttle_time_ms = throttle_time_ms


class _RateQuota:
    """A sensor with a rate quota: the connections recorded and the bound they are held to."""

    __slots__ = ("bound", "last_record_ms", "rate")

    def __init__(self, rate: Rate, bound: int) -> None:
        self.rate = rate
        self.bound = bound
        self.last_record_ms = 0

    def record_and_get_throttle_time_ms(self, now_ms: int, max_throttle_ms: int) -> int:
        """Record one connection; the delay that brings the rate back within the bound
        (Kafka's QuotaUtils.boundedThrottleTime), 0 when it is within."""
        self.last_record_ms = now_ms
        self.rate.record(1.0, now_ms)
        if self.bound >= INT_MAX:
            return 0
        value = self.rate.measure(now_ms)
        if value <= self.bound:
            return 0
        if self.bound <= 0:
            return max_throttle_ms
        throttle = round((value - self.bound) / self.bound * self.rate.window_size_ms(now_ms))
        return int(min(throttle, max_throttle_ms))

    def unrecord(self) -> None:
        self.rate.unrecord(1.0)


@dataclass
class ListenerQuotaMetrics:
    """What a listener's quotas did (Kafka's AcceptorBlockedPercent meter and the
    connection-accept-throttle-time / ip-connection-accept-throttle-time sensors)."""

    blocked_time_ns: int = 0
    throttle_count: int = 0
    throttle_time_ms_total: int = 0
    ip_throttle_count: int = 0
    ip_throttle_time_ms_total: int = 0

    @property
    def connection_accept_throttle_time(self) -> float:
        """The average of the non-zero broker/listener rate throttle times (ms)."""
        return self.throttle_time_ms_total / self.throttle_count if self.throttle_count else 0.0

    @property
    def ip_connection_accept_throttle_time(self) -> float:
        """The average of the non-zero IP rate throttle times (ms)."""
        n = self.ip_throttle_count
        return self.ip_throttle_time_ms_total / n if n else 0.0


class _ListenerQuota:
    """A listener's limits, count and metrics (Kafka's ListenerConnectionQuota)."""

    def __init__(self, max_connections: int, rate: _RateQuota) -> None:
        self.max_connections = max_connections
        self.rate = rate
        self.count = 0
        self.metrics = ListenerQuotaMetrics()


class ConnectionQuotas:
    """Counts the broker's connections per address and per listener and holds new ones to
    the limits of `ConnectionQuotaConfig` (see the module docstring for what each does).

    The acceptors call `await inc(listener, ip)` for each connection they accept and
    `dec(listener, ip)` when it closes; the processors ask `max_connections_exceeded` to
    find listeners that must give up their least recently used connection. Runs on the
    broker's event loop (no locks): waiting for a slot is an await.
    """

    def __init__(self, config: ConnectionQuotaConfig, time: Time = SYSTEM_TIME) -> None:
        self.config = config
        self.time = time
        self.log = component_logger("kafpy.network.ConnectionQuotas")
        self._counts: dict[str, int] = {}
        self._total = 0
        self._listeners: dict[str, _ListenerQuota] = {}
        self._broker_rate = self._new_rate(config.max_connection_creation_rate)
        self._default_ip_rate = INT_MAX
        self._ip_rates: dict[str, int] = {}
        self._ip_sensors: dict[str, _RateQuota] = {}
        self._waiters: list[asyncio.Future[None]] = []

    # -- listeners --------------------------------------------------------------------------

    def add_listener(self, listener_name: str) -> None:
        if listener_name not in self._listeners:
            self._listeners[listener_name] = _ListenerQuota(
                self.config.listener_max_connections.get(listener_name, INT_MAX),
                self._new_rate(
                    self.config.listener_max_connection_creation_rate.get(listener_name, INT_MAX)
                ),
            )
        self._notify_all()

    def remove_listener(self, listener_name: str) -> None:
        if self._listeners.pop(listener_name, None) is not None:
            self._notify_all()  # a waiting acceptor of that listener wakes up to close

    def listener_metrics(self, listener_name: str) -> ListenerQuotaMetrics:
        return self._listeners[listener_name].metrics

    # -- counting -----------------------------------------------------------------------------

    async def inc(
        self, listener_name: str, ip: str, on_blocked: Callable[[int], None] | None = None
    ) -> None:
        """Count a new connection of `listener_name` from `ip`, after waiting for a slot and
        for the creation rates. Raises ConnectionThrottled (not counted: close it after the
        delay) or TooManyConnections (counted: `dec` and close it now)."""
        await self._wait_for_connection_slot(listener_name)
        ip = normalize_ip(ip)
        self._record_ip_connection_maybe_throttle(listener_name, ip)
        count = self._counts.get(ip, 0)
        self._counts[ip] = count + 1
        self._total += 1
        listener = self._listeners.get(listener_name)
        if listener is not None:
            listener.count += 1
        limit = self.config.max_connections_per_ip_overrides.get(
            ip, self.config.max_connections_per_ip
        )
        if count >= limit:
            raise TooManyConnections(ip, limit)

    def dec(self, listener_name: str, ip: str) -> None:
        """A counted connection closed."""
        ip = normalize_ip(ip)
        count = self._counts.get(ip)
        if count is None:
            raise ValueError(
                f"Attempted to decrease connection count for address with no connections, "
                f"address: /{ip}"
            )
        if count == 1:
            del self._counts[ip]
        else:
            self._counts[ip] = count - 1
        if self._total <= 0:
            self.log.error(
                "Attempted to decrease total connection count for broker with no connections"
            )
        self._total -= 1
        listener = self._listeners.get(listener_name)
        if listener is not None:
            if listener.count == 0:
                self.log.error(
                    "Attempted to decrease connection count for listener %s with no connections",
                    listener_name,
                )
            else:
                listener.count -= 1
        self._notify_all()

    def get(self, ip: str) -> int:
        """The connections counted for an address."""
        return self._counts.get(normalize_ip(ip), 0)

    @property
    def total_count(self) -> int:
        return self._total

    def listener_count(self, listener_name: str) -> int:
        listener = self._listeners.get(listener_name)
        return listener.count if listener is not None else 0

    def max_connections_exceeded(self, listener_name: str) -> bool:
        """Whether a connection of this listener must be closed: the broker is over
        max.connections (after the inter-broker listener took a connection over it)."""
        return self._total > self.config.max_connections and not self._protected(listener_name)

    # -- the limits -------------------------------------------------------------------------

    async def _wait_for_connection_slot(self, listener_name: str) -> None:
        start_ms = self.time.milliseconds()
        throttle_ms = max(
            self._record_connection_and_get_throttle_time_ms(listener_name, start_ms), 0
        )
        if throttle_ms <= 0 and self._connection_slot_available(listener_name):
            return
        start_ns = self.time.nanoseconds()
        end_ms = start_ms + throttle_ms
        remaining = throttle_ms
        while True:
            await self._wait(remaining)
            remaining = max(end_ms - self.time.milliseconds(), 0)
            if listener_name not in self._listeners:
                return  # the listener is going away: its acceptor closes
            if remaining <= 0 and self._connection_slot_available(listener_name):
                break
        self._listeners[listener_name].metrics.blocked_time_ns += self.time.nanoseconds() - start_ns

    def _connection_slot_available(self, listener_name: str) -> bool:
        listener = self._listeners.get(listener_name)
        if listener is not None and listener.count >= listener.max_connections:
            return False
        if self._protected(listener_name):
            return True
        return self._total < self.config.max_connections

    def _protected(self, listener_name: str) -> bool:
        """The inter-broker listener, exempt from the broker-wide limits while the broker has
        other listeners."""
        return listener_name == self.config.inter_broker_listener_name and len(self._listeners) > 1

    def _max_throttle_ms(self) -> int:
        return self.config.quota_window_size_seconds * 1000

    def _record_connection_and_get_throttle_time_ms(self, listener_name: str, now_ms: int) -> int:
        """The delay that brings the broker's and the listener's creation rates within their
        limits, whichever is longer (the inter-broker listener: its own limit only)."""
        cap = self._max_throttle_ms()
        throttle = 0
        if not self._protected(listener_name):
            throttle = self._broker_rate.record_and_get_throttle_time_ms(now_ms, cap)
        listener = self._listeners.get(listener_name)
        if listener is None:
            return 0
        throttle = max(throttle, listener.rate.record_and_get_throttle_time_ms(now_ms, cap))
        if throttle > 0:
            listener.metrics.throttle_count += 1
            listener.metrics.throttle_time_ms_total += throttle
            self.log.debug(
                "Connection creation rate of listener %s: delay %d ms", listener_name, throttle
            )
        return throttle

    def _record_ip_connection_maybe_throttle(self, listener_name: str, ip: str) -> None:
        bound = self.connection_rate_for_ip(ip)
        if bound == INT_MAX:
            return
        now_ms = self.time.milliseconds()
        sensor = self._ip_sensor(ip, bound, now_ms)
        throttle = sensor.record_and_get_throttle_time_ms(now_ms, self._max_throttle_ms())
        if throttle <= 0:
            return
        self.log.debug("Throttling /%s for %d ms", ip, throttle)
        # the connection is not accepted: take it back from every rate it was recorded in
        sensor.unrecord()
        if not self._protected(listener_name):
            self._broker_rate.unrecord()
        listener = self._listeners.get(listener_name)
        if listener is not None:
            listener.rate.unrecord()
            listener.metrics.ip_throttle_count += 1
            listener.metrics.ip_throttle_time_ms_total += throttle
        raise ConnectionThrottled(ip, now_ms, throttle)

    def _ip_sensor(self, ip: str, bound: int, now_ms: int) -> _RateQuota:
        sensor = self._ip_sensors.get(ip)
        if sensor is None:
            for stale in [
                k for k, s in self._ip_sensors.items()
                if now_ms - s.last_record_ms > _IP_SENSOR_EXPIRATION_MS
            ]:  # fmt: skip
                del self._ip_sensors[stale]
            sensor = self._ip_sensors[ip] = self._new_rate(bound)
        sensor.bound = bound
        return sensor

    def _new_rate(self, bound: int) -> _RateQuota:
        return _RateQuota(
            Rate(self.config.quota_window_num, self.config.quota_window_size_seconds * 1000),
            bound,
        )

    # -- waiting ----------------------------------------------------------------------------

    async def _wait(self, timeout_ms: int) -> None:
        """Until a count or a limit changes, or `timeout_ms` passes (0: no timeout), as
        Kafka's acceptor waits on `counts`."""
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            await asyncio.wait({waiter}, timeout=timeout_ms / 1000 if timeout_ms > 0 else None)
        finally:
            if waiter in self._waiters:
                self._waiters.remove(waiter)
            waiter.cancel()

    def _notify_all(self) -> None:
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    # -- updates (dynamic broker configs, /config/ips) ----------------------------------------

    def reconfigure(self, config: ConnectionQuotaConfig) -> None:
        """Apply new limits (Kafka's SocketServer.reconfigure and the listeners'
        ListenerConnectionQuota.reconfigure); a waiting acceptor re-checks at once."""
        old, self.config = self.config, config
        if config.max_connections_per_ip != old.max_connections_per_ip:
            self.log.info("Updating maxConnectionsPerIp: %d", config.max_connections_per_ip)
        if dict(config.max_connections_per_ip_overrides) != dict(
            old.max_connections_per_ip_overrides
        ):
            self.log.info(
                "Updating maxConnectionsPerIpOverrides: %s",
                ",".join(f"{k}={v}" for k, v in config.max_connections_per_ip_overrides.items()),
            )
        if config.max_connections != old.max_connections:
            self.log.info("Updating broker-wide maxConnections: %d", config.max_connections)
        if config.max_connection_creation_rate != old.max_connection_creation_rate:
            self.log.info(
                "Updating broker-wide maxConnectionCreationRate: %d",
                config.max_connection_creation_rate,
            )
            self._broker_rate.bound = config.max_connection_creation_rate
            self.log.info(
                "Updated broker-connection-accept-rate max connection creation rate to %d",
                config.max_connection_creation_rate,
            )
        for name, listener in self._listeners.items():
            listener.max_connections = config.listener_max_connections.get(name, INT_MAX)
            rate = config.listener_max_connection_creation_rate.get(name, INT_MAX)
            if rate != listener.rate.bound:
                listener.rate.bound = rate
                self.log.info(
                    "Updated connection-accept-rate (listener %s) max connection creation rate "
                    "to %d", name, rate,
                )  # fmt: skip
        self._notify_all()

    def update_ip_connection_rate_quota(self, ip: str | None, rate: int | None) -> None:
        """Set (or with None remove) the connection-rate quota of an address, or with `ip`
        None of every address without one of its own (Kafka's updateIpConnectionRateQuota)."""
        if ip is not None:
            ip = normalize_ip(ip)
            if rate is not None:
                self.log.info("Updating max connection rate override for /%s to %d", ip, rate)
                self._ip_rates[ip] = rate
            else:
                self.log.info("Removing max connection rate override for /%s", ip)
                self._ip_rates.pop(ip, None)
            sensor = self._ip_sensors.get(ip)
            if sensor is not None:
                sensor.bound = self.connection_rate_for_ip(ip)
            return
        self._default_ip_rate = INT_MAX if rate is None else rate
        self.log.info("Updated default max IP connection rate to %d", self._default_ip_rate)
        for address, sensor in self._ip_sensors.items():
            sensor.bound = self.connection_rate_for_ip(address)

    def connection_rate_for_ip(self, ip: str) -> int:
        """The connection-rate quota an address is held to (INT_MAX: none)."""
        return self._ip_rates.get(normalize_ip(ip), self._default_ip_rate)

    def describe(self) -> dict[str, Any]:
        """The counts, for logs and tests."""
        return {
            "total": self._total,
            "listeners": {name: q.count for name, q in self._listeners.items()},
            "addresses": dict(self._counts),
        }
