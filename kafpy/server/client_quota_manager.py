"""Client quotas: Kafka 2.x's ClientQuotaManager (bandwidth) and ClientRequestQuotaManager.

Quotas are set per user, per client id or per both, with defaults (`<default>`), under
`/config/users/<user>[/clients/<client-id>]` and `/config/clients/<client-id>` as
`producer_byte_rate`, `consumer_byte_rate` and `request_percentage`. A request is held
to the most specific quota that matches it, in Kafka's order:

    /config/users/<user>/clients/<client-id>      /config/users/<default>/clients/<client-id>
    /config/users/<user>/clients/<default>        /config/users/<default>/clients/<default>
    /config/users/<user>                          /config/users/<default>
    /config/clients/<client-id>                   /config/clients/<default>

(the first column before the second). Clients matching a quota share one rate when the
quota names them (a user's quota is shared by all of that user's client ids); a default
quota gives every client its own rate with that bound.

A rate is measured over `quota.window.num` windows of `quota.window.size.seconds`, as
Kafka's Rate stat: the sum of the samples over the time they span (at least all but one
window). A request that takes the rate over its bound makes the client wait
`(rate - bound) / bound * window` ms: the response says so (`throttle_time_ms`) and the
connection is not read for that long (KIP-219), so clients that ignore the field are
held all the same.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from kafpy.common.client_quota_config import (
    DEFAULT,
    QuotaEntity,
    QuotaType,
    validate_quota_configs,
)
from kafpy.common.rate import Rate

__all__ = ["ClientQuotaManager", "QuotaManagers", "Rate"]


@dataclass
class _Sensor:
    rate: Rate
    bound: float


class ClientQuotaManager:
    """The quotas of one QuotaType and the rates of the clients they hold.

    `quota_window_num` and `quota_window_size_seconds` are Kafka's broker configs of the
    same names; `clock` gives milliseconds.
    """

    def __init__(
        self,
        quota_type: QuotaType,
        quota_window_num: int = 11,
        quota_window_size_seconds: int = 1,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.quota_type = quota_type
        self.samples = quota_window_num
        self.window_ms = quota_window_size_seconds * 1000
        self.clock = clock or (lambda: time.monotonic() * 1000)
        self._quotas: dict[QuotaEntity, float] = {}
        self._sensors: dict[tuple[str, str], _Sensor] = {}

    @property
    def enabled(self) -> bool:
        """Whether any quota of this type is set (else recording is skipped entirely)."""
        return bool(self._quotas)

    def update_quota(self, entity: QuotaEntity, bound: float | None) -> None:
        """Set (or with None remove) the quota of an entity; rates are re-bound at once."""
        if bound is None:
            self._quotas.pop(entity, None)
        else:
            self._quotas[entity] = bound
        self._sensors.clear()  # which quota a client falls under may have changed

    def quotas(self) -> dict[QuotaEntity, float]:
        return dict(self._quotas)

    def quota_for(self, user: str, client_id: str) -> tuple[float, tuple[str, str]] | None:
        """The bound that holds (user, client_id) and the key of the rate it is measured
        by, in Kafka's order of precedence; None when no quota matches."""
        q = self._quotas
        for entity, key in (
            ((user, client_id), (user, client_id)),
            ((user, DEFAULT), (user, client_id)),
            ((user, None), (user, "")),
            ((DEFAULT, client_id), (user, client_id)),
            ((DEFAULT, DEFAULT), (user, client_id)),
            ((DEFAULT, None), (user, "")),
            ((None, client_id), ("", client_id)),
            ((None, DEFAULT), ("", client_id)),
        ):
            bound = q.get(entity)
            if bound is not None:
                return bound, key
        return None

    def record_and_get_throttle_time_ms(self, user: str, client_id: str, value: float) -> int:
        """Record `value` (bytes, or request-time percent-seconds) for the client; the ms
        it must wait because of it (0 when within its quota or without one)."""
        if not self._quotas:
            return 0
        found = self.quota_for(user, client_id)
        if found is None:
            return 0
        bound, key = found
        sensor = self._sensors.get(key)
        if sensor is None:
            sensor = self._sensors[key] = _Sensor(Rate(self.samples, self.window_ms), bound)
        now = self.clock()
        sensor.rate.record(value, now)
        rate = sensor.rate.measure(now)
        if rate <= bound:
            return 0
        return int((rate - bound) / bound * sensor.rate.window_size_ms(now))

    def unrecord(self, user: str, client_id: str, value: float) -> None:
        """Take back a recorded value (a throttled fetch answers without its records)."""
        found = self.quota_for(user, client_id)
        if found is not None:
            sensor = self._sensors.get(found[1])
            if sensor is not None:
                sensor.rate.unrecord(value)


class QuotaManagers:
    """The broker's three quota managers (Kafka's QuotaFactory.QuotaManagers)."""

    def __init__(
        self,
        quota_window_num: int = 11,
        quota_window_size_seconds: int = 1,
        clock: Callable[[], float] | None = None,
    ) -> None:
        def make(t: QuotaType) -> ClientQuotaManager:
            return ClientQuotaManager(t, quota_window_num, quota_window_size_seconds, clock)

        self.produce = make(QuotaType.PRODUCE)
        self.fetch = make(QuotaType.FETCH)
        self.request = make(QuotaType.REQUEST)

    def by_type(self) -> dict[QuotaType, ClientQuotaManager]:
        return {QuotaType.PRODUCE: self.produce, QuotaType.FETCH: self.fetch,
                QuotaType.REQUEST: self.request}  # fmt: skip

    def update_entity(self, entity: QuotaEntity, configs: Mapping[str, str]) -> None:
        """Apply an entity's stored configs: every quota type it sets or no longer sets."""
        values = validate_quota_configs(configs)
        for quota_type, manager in self.by_type().items():
            manager.update_quota(entity, values.get(quota_type.value))
