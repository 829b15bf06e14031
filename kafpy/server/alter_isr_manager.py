"""AlterIsrManager (KIP-497): a leader's ISR changes, sent to the controller as AlterIsr.

At inter.broker.protocol.version 2.7-IV2 and later (kafpy speaks 2.8-IV1 only, so always
on a KafkaServer), the leader no longer writes its partition's state znode: it submits
the ISR it wants, one pending change per partition, and the manager sends every pending
change in one AlterIsr request, one request in flight at a time (Kafka 2.8's
DefaultAlterIsrManager; the request is built when its task runs, so the changes of one
loop turn travel together). The controller writes ZooKeeper and answers with each
partition's new state or error; each item's callback gets it. A top-level error (the
controller moved, a stale broker epoch, no connection) keeps the changes pending and sends
them again 50 ms later (`send-alter-isr`); a partition missing from an answer is sent
again. The controller is found as Kafka's MetadataCacheControllerNodeProvider does, from
the controller id and endpoints the last UpdateMetadata gave.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any, Protocol

from kafpy.client.client_security import ClientSecurity
from kafpy.client.connection import BrokerConnection
from kafpy.common.logger import PrefixAdapter
from kafpy.common.topic_partition import TopicPartition
from kafpy.metadata.zk_data import LeaderAndIsr
from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.errors import Errors
from kafpy.server.metadata_cache import MetadataCache
from kafpy.storage.log_config import API_VERSIONS, parse_api_version

# Kafka 2.8: a top-level error is retried after 50 ms
ALTER_ISR_RETRY_BACKOFF_MS = 50
# how often a request waiting on the controller checks that it still is the controller
CONTROLLER_CHECK_MS = 100


def is_alter_isr_supported(inter_broker_protocol_version: str) -> bool:
    """Kafka's ApiVersion.isAlterIsrSupported: AlterIsr from 2.7-IV2 on; below, the leader
    writes ZooKeeper itself (ZkIsrManager)."""
    version = parse_api_version(inter_broker_protocol_version)
    return API_VERSIONS.index(version) >= API_VERSIONS.index("2.7-IV2")


# a partition's outcome: an error code, or its state as the controller wrote it
AlterIsrResult = int | LeaderAndIsr


@dataclass(frozen=True, eq=False)
class AlterIsrItem:
    """One partition's wanted ISR (`leader_and_isr`, at the znode version the leader knows)
    and what to call with the outcome."""

    topic_partition: TopicPartition
    leader_and_isr: LeaderAndIsr
    callback: Callable[[AlterIsrResult], None]


class ControllerChannel(Protocol):
    """Sends one request to the current controller and returns its answer (raises when
    there is no controller or no connection)."""

    async def send(self, api_key: ApiKey, body: dict[str, Any]) -> dict[str, Any]: ...


class BrokerToControllerChannel:
    """A connection to the controller the metadata cache names (Kafka's
    BrokerToControllerChannelManager with MetadataCacheControllerNodeProvider), on the
    inter-broker listener; opened again when the controller moves or the connection drops."""

    def __init__(
        self,
        broker_id: int,
        metadata_cache: MetadataCache,
        listener_name: str,
        channel_name: str,
        request_timeout_ms: int,
        security: ClientSecurity | None = None,
    ) -> None:
        self.broker_id = broker_id
        self.metadata_cache = metadata_cache
        self.listener_name = listener_name
        self.client_id = f"broker-{broker_id}-{channel_name}"
        self.request_timeout_ms = request_timeout_ms
        self.security = security
        self._connection: BrokerConnection | None = None

    async def _connection_to_controller(self) -> BrokerConnection:
        controller_id = self.metadata_cache.controller_id
        broker = (
            None if controller_id is None else self.metadata_cache.get_alive_broker(controller_id)
        )
        endpoint = None if broker is None else broker.endpoint(self.listener_name)
        if controller_id is None or endpoint is None:
            await self.close()
            raise ConnectionError(
                f"no controller with a {self.listener_name} endpoint is known yet"
            )
        conn = self._connection
        if conn is not None and conn.connected and conn.node_id == controller_id:
            return conn
        await self.close()
        conn = BrokerConnection(endpoint.host or "localhost", endpoint.port, node_id=controller_id,
                                client_id=self.client_id, request_timeout_ms=self.request_timeout_ms,
                                security=self.security)  # fmt: skip
        self._connection = conn  # closed by close(), also when the connect is cancelled
        await conn.connect()
        return conn

    async def send(self, api_key: ApiKey, body: dict[str, Any]) -> dict[str, Any]:
        controller_id = self.metadata_cache.controller_id
        request = asyncio.ensure_future(self._connect_and_send(api_key, body))
        try:
            while True:
                done, _ = await asyncio.wait({request}, timeout=CONTROLLER_CHECK_MS / 1000)
                if done:
                    return request.result()
                if self.metadata_cache.controller_id != controller_id:
                    # as Kafka's channel does, leave a controller that is no longer the
                    # active one (a frozen one never answers): the caller sends again
                    raise ConnectionError(
                        f"controller {controller_id} was replaced by "
                        f"{self.metadata_cache.controller_id} while the request waited"
                    )
        except BaseException:
            request.cancel()
            await self.close()
            raise

    async def _connect_and_send(self, api_key: ApiKey, body: dict[str, Any]) -> dict[str, Any]:
        conn = await self._connection_to_controller()
        return await conn.send(api_key, body)

    async def close(self) -> None:
        conn, self._connection = self._connection, None
        if conn is not None:
            await conn.close()


class AlterIsrManager:
    """Batches the pending ISR changes of the partitions this broker leads into AlterIsr
    requests to the controller, one in flight at a time."""

    def __init__(
        self,
        broker_id: int,
        broker_epoch: Callable[[], int],
        channel: ControllerChannel,
        log: PrefixAdapter,
        *,
        retry_backoff_ms: int = ALTER_ISR_RETRY_BACKOFF_MS,
    ) -> None:
        self.broker_id = broker_id
        self.broker_epoch = broker_epoch
        self.channel = channel
        self.log = log
        self.retry_backoff_ms = retry_backoff_ms
        # one pending change per partition; cleared by the answer (Kafka's unsentIsrUpdates)
        self.unsent_isr_updates: dict[TopicPartition, AlterIsrItem] = {}
        self.inflight = False
        self._tasks: set[asyncio.Task[None]] = set()
        self._closed = False

    def submit(self, item: AlterIsrItem) -> bool:
        """Queue `item`; False when its partition already has a pending change."""
        if item.topic_partition in self.unsent_isr_updates:
            return False
        self.unsent_isr_updates[item.topic_partition] = item
        self.maybe_propagate_isr_changes()
        return True

    def clear_pending(self, tp: TopicPartition) -> None:
        """Forget the partition's pending change (its leadership changed)."""
        self.unsent_isr_updates.pop(tp, None)

    def maybe_propagate_isr_changes(self) -> None:
        """Send every pending change unless a request is already in flight."""
        if self._closed or self.inflight or not self.unsent_isr_updates:
            return
        self.inflight = True
        self._spawn(self._send())

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def build_request(self, items: list[AlterIsrItem]) -> dict[str, Any]:
        """The AlterIsr request body for `items`, grouped by topic."""
        topics: dict[str, list[dict[str, Any]]] = {}
        for item in items:
            lai = item.leader_and_isr
            topics.setdefault(item.topic_partition.topic, []).append({
                "partition_index": item.topic_partition.partition,
                "leader_epoch": lai.leader_epoch,
                "new_isr": list(lai.isr),
                "current_isr_version": lai.zk_version,
            })  # fmt: skip
        return {
            "broker_id": self.broker_id,
            "broker_epoch": self.broker_epoch(),
            "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()],
        }

    async def _send(self) -> None:
        # taken when the task runs: changes submitted in the same loop turn (an
        # isr-expiration pass over many partitions) go in one request
        items = list(self.unsent_isr_updates.values())
        if not items:  # all cleared meanwhile
            self.inflight = False
            return
        request = self.build_request(items)
        self.log.debug("Sending AlterIsr to controller %s", request)
        try:
            response = await self.channel.send(ApiKey.ALTER_ISR, request)
            error = self.handle_alter_isr_response(response, request["broker_epoch"], items)
        except asyncio.CancelledError:
            raise
        except Exception as e:
            # Kafka's channel retries until the controller answers; so does this manager
            self.log.debug("AlterIsr to the controller failed (%s); retrying", e)
            error = Errors.NETWORK_EXCEPTION
        finally:
            self.inflight = False
        if error == Errors.NONE:
            self.maybe_propagate_isr_changes()
        else:
            self._spawn(self._retry_later())

    async def _retry_later(self) -> None:
        await asyncio.sleep(self.retry_backoff_ms / 1000)
        self.maybe_propagate_isr_changes()

    def handle_alter_isr_response(
        self, response: dict[str, Any], sent_broker_epoch: int, items: list[AlterIsrItem]
    ) -> int:
        """Run the callbacks of the answered items; the top-level error code."""
        error = int(response["error_code"])
        if error == Errors.STALE_BROKER_EPOCH:
            self.log.warning("Broker had a stale broker epoch (%d), retrying.", sent_broker_epoch)
        elif error == Errors.NOT_CONTROLLER:
            # Kafka's BrokerToControllerChannelManager retries this itself, quietly, until
            # UpdateMetadata names the new controller
            self.log.debug("The controller moved; retrying AlterIsr")
        elif error == Errors.CLUSTER_AUTHORIZATION_FAILED:
            self.log.error("Broker is not authorized to send AlterIsr to controller")
        elif error != Errors.NONE:
            self.log.warning(
                "Controller returned an unexpected top-level error when handling AlterIsr "
                "request: %s", Errors(error).name if error in Errors.__members__.values() else error,
            )  # fmt: skip
        if error != Errors.NONE:
            return error
        answers: dict[TopicPartition, AlterIsrResult] = {}
        for topic in response.get("topics") or []:
            for p in topic["partitions"]:
                tp = TopicPartition(topic["name"], p["partition_index"])
                code = int(p["error_code"])
                answers[tp] = code if code != Errors.NONE else LeaderAndIsr(
                    p["leader_id"], p["leader_epoch"], tuple(p["isr"]), p["current_isr_version"]
                )  # fmt: skip
        for item in items:
            tp = item.topic_partition
            if tp not in answers:
                self.log.warning("Partition %s was sent but not included in the response", tp)
                continue
            try:
                item.callback(answers[tp])
            except Exception:
                self.log.exception("Error handling the AlterIsr answer for %s", tp)
            finally:
                if self.unsent_isr_updates.get(tp) is item:
                    del self.unsent_isr_updates[tp]
        return error

    async def shutdown(self) -> None:
        """Stop sending; cancel the request in flight and close the controller channel."""
        self._closed = True
        for task in list(self._tasks):
            task.cancel()
            with contextlib.suppress(BaseException):
                await task
        close = getattr(self.channel, "close", None)
        if close is not None:
            await close()
