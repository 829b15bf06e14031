"""Test harness for the controller: brokers as sessions on one in-memory EmbeddedStore, each
with its own KafkaController, and a recording channel instead of sockets.

`ControllerCluster` starts N "brokers" (a store session, a registration under /brokers/ids
and a controller each); `RecordingChannelFactory` records every request a controller sends
(broker, API, version, body) and answers it as a healthy broker would. `settle()` runs the
loop until every controller is idle (no event queued or running, no request pending); it
never sleeps on the clock.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from kafpy.common.time import MockTime
from kafpy.controller.controller_channel_manager import CONTROLLER_MAX_VERSIONS
from kafpy.controller.controller_config import ControllerConfig
from kafpy.controller.kafka_controller import KafkaController
from kafpy.metadata.embedded_store import EmbeddedStore
from kafpy.metadata.kafka_zk_client import KafkaZkClient
from kafpy.metadata.zk_data import Broker, BrokerInfo, EndPoint
from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.messages import REQUESTS


@dataclass
class SentRequest:
    """One request a controller sent: from which controller, to which broker, what."""

    controller_id: int
    broker_id: int
    api_key: int
    version: int
    body: dict[str, Any]

    def partitions(self) -> list[tuple[str, int]]:
        """(topic, partition) pairs the request names, whatever its version's layout."""
        b = self.body
        if self.api_key == ApiKey.STOP_REPLICA:
            if "topic_states" in b:  # v3
                return [
                    (t["topic_name"], s["partition_index"])
                    for t in b["topic_states"]
                    for s in t["partition_states"]
                ]
            if "topics" in b:
                return [(t["name"], p) for t in b["topics"] for p in t["partition_indexes"]]
            return [(p["topic_name"], p["partition_index"]) for p in b["ungrouped_partitions"]]
        return [(topic, s["partition_index"]) for topic, s in self.partition_states()]

    def delete_partitions(self) -> bool:
        """A StopReplica's delete flag: the request's before v3, its partitions' (the controller
        sends deleting and non-deleting partitions apart) from v3 on."""
        if "topic_states" in self.body:
            flags = {s["delete_partition"] for _, s in self.partition_states()}
            assert len(flags) == 1, f"a StopReplica mixing deletes and stops: {self.body}"
            return bool(flags.pop())
        return bool(self.body["delete_partitions"])

    def partition_states(self) -> list[tuple[str, dict[str, Any]]]:
        b = self.body
        if "topic_states" in b:
            return [(t["topic_name"], s) for t in b["topic_states"] for s in t["partition_states"]]
        return [(s["topic_name"], s) for s in b.get("ungrouped_partition_states", [])]


Responder = Callable[[SentRequest], dict[str, Any]]


def healthy_response(request: SentRequest, error_code: int = 0) -> dict[str, Any]:
    """What a healthy broker answers: no error for any partition (or `error_code` for every
    one), in the layout of the request's version."""
    if request.api_key == ApiKey.UPDATE_METADATA:
        return {"error_code": 0}
    if request.api_key == ApiKey.LEADER_AND_ISR and request.version >= 5:
        # v5 answers per topic, named by topic id only
        ids = {t["topic_name"]: t["topic_id"] for t in request.body["topic_states"]}
        by_topic: dict[str, list[dict[str, Any]]] = {}
        for t, p in request.partitions():
            by_topic.setdefault(t, []).append({"partition_index": p, "error_code": error_code})
        return {
            "error_code": 0,
            "topics": [{"topic_id": ids[t], "partition_errors": e} for t, e in by_topic.items()],
        }
    return {
        "error_code": 0,
        "partition_errors": [
            {"topic_name": t, "partition_index": p, "error_code": error_code}
            for t, p in request.partitions()
        ],
    }


class RecordingChannel:
    """A ControllerChannel that records requests and answers through the factory's responder."""

    def __init__(
        self, factory: RecordingChannelFactory, controller_id: int, broker_id: int
    ) -> None:
        self.factory = factory
        self.controller_id = controller_id
        self.broker_id = broker_id
        self._connected = False
        self.closed = 0

    @property
    def connected(self) -> bool:
        return self._connected

    async def connect(self) -> None:
        self._connected = True

    def pick_version(self, api_key: int) -> int:
        return self.factory.versions.get(api_key, CONTROLLER_MAX_VERSIONS[api_key])

    async def send(
        self, api_key: int, body: dict[str, Any], version: int | None = None
    ) -> dict[str, Any]:
        assert version is not None
        request = SentRequest(self.controller_id, self.broker_id, api_key, version, body)
        self.factory.sent.append(request)
        return self.factory.responder(request)

    def close(self) -> None:
        self._connected = False
        self.closed += 1


class RecordingChannelFactory:
    """Makes RecordingChannels for one controller; all requests land in `sent`."""

    def __init__(self, controller_id: int, sent: list[SentRequest], responder: Responder) -> None:
        self.controller_id = controller_id
        self.sent = sent
        self.responder = responder
        self.versions: dict[int, int] = {}

    def __call__(self, broker_id: int, host: str, port: int) -> RecordingChannel:
        return RecordingChannel(self, self.controller_id, broker_id)


def broker_info(broker_id: int) -> BrokerInfo:
    endpoint = EndPoint("localhost", 9092 + broker_id, "PLAINTEXT", "PLAINTEXT")
    return BrokerInfo(Broker(broker_id, (endpoint,), None), 4, -1, 1_600_000_000_000)


@dataclass
class BrokerHandle:
    broker_id: int
    store: EmbeddedStore
    zk: KafkaZkClient
    controller: KafkaController


class ControllerCluster:
    """Brokers sharing one in-memory metadata database, each running a KafkaController."""

    def __init__(self, **config: Any) -> None:
        self.config = config
        self.root: EmbeddedStore | None = None
        self.brokers: dict[int, BrokerHandle] = {}
        self.sent: list[SentRequest] = []
        self.responder: Responder = healthy_response
        self.time = MockTime()

    async def __aenter__(self) -> ControllerCluster:
        return self

    async def __aexit__(self, *exc: object) -> None:
        for broker_id in list(self.brokers):
            await self.stop_broker(broker_id)
        if self.root is not None:
            await self.root.close()

    async def _new_store(self) -> EmbeddedStore:
        if self.root is None:
            self.root = EmbeddedStore(None, time=self.time)
            await self.root.start()
            await KafkaZkClient(self.root).make_sure_persistent_paths_exist()
        store = self.root.new_session()
        await store.start()
        return store

    @property
    def admin(self) -> KafkaZkClient:
        assert self.root is not None
        return KafkaZkClient(self.root)

    async def start_broker(self, broker_id: int, **config: Any) -> BrokerHandle:
        """Register a broker and start its controller (its election runs as an event)."""
        store = await self._new_store()
        zk = KafkaZkClient(store)
        info = broker_info(broker_id)
        await zk.register_broker(info)
        settings = {**self.config, **config}
        controller = KafkaController(
            ControllerConfig(broker_id=broker_id, **settings),
            zk,
            RecordingChannelFactory(broker_id, self.sent, lambda r: self.responder(r)),
            self.time,
            info,
        )
        handle = BrokerHandle(broker_id, store, zk, controller)
        self.brokers[broker_id] = handle
        await controller.startup()
        return handle

    async def stop_broker(self, broker_id: int) -> None:
        """The broker dies: its controller stops and its session closes (ephemerals go)."""
        handle = self.brokers.pop(broker_id)
        await handle.controller.shutdown()
        await handle.store.close()

    async def start(self, *broker_ids: int) -> None:
        for broker_id in broker_ids:
            await self.start_broker(broker_id)
            await self.settle()

    def active(self) -> list[KafkaController]:
        return [h.controller for h in self.brokers.values() if h.controller.is_active]

    def controller(self) -> KafkaController:
        active = self.active()
        assert len(active) == 1, f"expected one active controller, found {len(active)}"
        return active[0]

    async def settle(self, max_rounds: int = 20000) -> None:
        """Run the loop until every controller is idle for a few consecutive rounds."""
        quiet = 0
        for _ in range(max_rounds):
            await asyncio.sleep(0)
            if all(h.controller.is_idle() for h in self.brokers.values()):
                quiet += 1
                if quiet >= 20:
                    return
            else:
                quiet = 0
        raise AssertionError("controllers did not settle")

    def requests(
        self, api_key: int | None = None, broker_id: int | None = None
    ) -> list[SentRequest]:
        return [
            r
            for r in self.sent
            if (api_key is None or r.api_key == api_key)
            and (broker_id is None or r.broker_id == broker_id)
        ]


def run(body: Callable[[ControllerCluster], Awaitable[None]], **config: object) -> None:
    """Run `body` against a fresh ControllerCluster (configured by `config`)."""

    async def main() -> None:
        async with ControllerCluster(**config) as cluster:
            await body(cluster)

    asyncio.run(main())


async def state_json(
    cluster: ControllerCluster, topic: str, partition: int
) -> dict[str, object] | None:
    """The partition's state znode as JSON (None while it has none)."""
    data = await cluster.admin.store.get_data_or_none(
        f"/brokers/topics/{topic}/partitions/{partition}/state"
    )
    return None if data is None else json.loads(data)


def assert_encodable(request: SentRequest) -> None:
    """The body is valid for the protocol codec at the version it was sent with."""
    message = REQUESTS[ApiKey(request.api_key)]
    decoded = message.decode(request.version, message.encode(request.version, request.body))
    assert decoded["controller_id"] == request.body["controller_id"]
