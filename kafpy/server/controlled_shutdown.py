"""Controlled shutdown, the broker's side: ask the controller to move leadership away first.

On a clean stop (SIGTERM) with controlled.shutdown.enable, the broker sends
ControlledShutdown to the controller (found through /controller) before it stops
serving, and retries up to controlled.shutdown.max.retries times, waiting
controlled.shutdown.retry.backoff.ms between tries, while the controller answers with an
error or partitions the broker still leads. Producers then see NOT_LEADER errors
(retriable) instead of partitions going offline. Each try carries the broker's epoch as it
is then: a broker registered again after a ZooKeeper session expiry has a new one, and the
controller refuses an older one (STALE_BROKER_EPOCH).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from kafpy.client.client_security import ClientSecurity
from kafpy.client.connection import BrokerConnection
from kafpy.metadata.kafka_zk_client import KafkaZkClient
from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.errors import Errors
from kafpy.server.kafka_config import KAFKA_CONFIG_DEF


async def controlled_shutdown(
    zk_client: KafkaZkClient,
    broker_id: int,
    broker_epoch: Callable[[], int],
    listener_name: str,
    max_retries: int,
    retry_backoff_ms: int,
    log: logging.LoggerAdapter[logging.Logger] | logging.Logger,
    request_timeout_ms: int = KAFKA_CONFIG_DEF.default("controller.socket.timeout.ms"),
    security: ClientSecurity | None = None,
) -> bool:
    """True once the controller moved every partition this broker led (or there were none)."""
    for attempt in range(max_retries + 1):
        if attempt:
            await asyncio.sleep(retry_backoff_ms / 1000)
        try:
            if set(await zk_client.get_all_broker_ids()) <= {broker_id}:
                log.info(
                    "No other live broker to take over leadership; skipping controlled shutdown"
                )
                return True
            controller_id = await zk_client.get_controller_id()
            if controller_id is None:
                log.info("No controller registered; retrying controlled shutdown")
                continue
            broker = await zk_client.get_broker(controller_id)
            endpoint = None if broker is None else next(
                (e for e in broker.endpoints if e.listener_name == listener_name), None
            )  # fmt: skip
            if endpoint is None:
                log.info(
                    "Controller %d has no %s endpoint registered; retrying",
                    controller_id,
                    listener_name,
                )
                continue
            conn = BrokerConnection(endpoint.host or "localhost", endpoint.port, node_id=controller_id,
                                    client_id=f"broker-{broker_id}-controlled-shutdown",
                                    request_timeout_ms=request_timeout_ms, security=security)  # fmt: skip
            await conn.connect()
            try:
                response = await conn.send(
                    ApiKey.CONTROLLED_SHUTDOWN,
                    {"broker_id": broker_id, "broker_epoch": broker_epoch()},
                )
            finally:
                await conn.close()
        except Exception as e:
            log.warning("Error during controlled shutdown, possibly because leader movement took longer than "
                        "the configured controller.socket.timeout.ms: %s", e)  # fmt: skip
            continue
        remaining = response.get("remaining_partitions") or []
        if response["error_code"] == Errors.NONE and not remaining:
            log.info("Controlled shutdown succeeded")
            return True
        log.info(
            "Remaining partitions to move: %s; controller error code %d",
            ",".join(f"{p['topic_name']}-{p['partition_index']}" for p in remaining),
            response["error_code"],
        )
    log.warning(
        "Proceeding to do an unclean shutdown as all the controlled shutdown attempts failed"
    )
    return False
