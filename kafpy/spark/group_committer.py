"""Committing a streaming query's progress to a consumer group (option commitOffsetsToGroup).

Spark's own Kafka connector never commits, so tools that watch consumer groups cannot see
a pipeline's lag. After each completed micro-batch kafpy commits its end offsets for the
group, as a standalone consumer (no generation, no member id) would, so
`kafpy consumer-groups --describe --group <group>` shows the pipeline's position and lag.
The checkpoint stays the source of truth: a failed commit is logged, never fatal.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any

from kafpy.client.find_coordinator import find_coordinator
from kafpy.client.kafka_client import KafkaClient
from kafpy.client.response_errors import error_for_code
from kafpy.common.errors import KafkaError
from kafpy.protocol.api_keys import ApiKey
from kafpy.spark.offset_reader import KafkaOffsetReader
from kafpy.spark.offsets import TP

_log = logging.getLogger(__name__)


def commit_offsets(reader: KafkaOffsetReader, group: str, offsets: Mapping[TP, int]) -> bool:
    """Commit `offsets` for `group`; True on success, False (logged) otherwise."""
    try:
        reader.run(_commit(reader, group, offsets))
        return True
    except (KafkaError, OSError) as e:
        _log.warning("Could not commit offsets of consumer group %s: %s", group, e)
        return False


async def _commit(reader: KafkaOffsetReader, group: str, offsets: Mapping[TP, int]) -> None:
    client = reader.client
    await client.start()
    topics: dict[str, list[dict[str, Any]]] = {}
    for (topic, partition), offset in sorted(offsets.items()):
        topics.setdefault(topic, []).append(
            {
                "partition_index": partition,
                "committed_offset": offset,
                "committed_leader_epoch": -1,
                "commit_timestamp": -1,
                "committed_metadata": "",
            }
        )
    body = {
        "group_id": group,
        "generation_id_or_member_epoch": -1,
        "member_id": "",
        "group_instance_id": None,
        "retention_time_ms": -1,
        "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()],
    }
    # The coordinator may still be loading (or creating __consumer_offsets on first use):
    # retriable errors are retried until the request timeout has passed.
    loop = asyncio.get_running_loop()
    deadline = loop.time() + client.request_timeout_ms / 1000
    while True:
        try:
            left_ms = max(0, int((deadline - loop.time()) * 1000))
            await _commit_once(client, group, body, left_ms)
            return
        except KafkaError as e:
            if not e.retriable or loop.time() > deadline:
                raise
        await client.backoff()


async def _commit_once(
    client: KafkaClient, group: str, body: dict[str, Any], timeout_ms: int
) -> None:
    node = await find_coordinator(
        client, group, timeout_ms=timeout_ms, context=f"Finding the coordinator of {group}"
    )
    response = await client.send_to_node(node, ApiKey.OFFSET_COMMIT, body)
    for topic in response["topics"]:
        for p in topic["partitions"]:
            if p["error_code"]:
                raise error_for_code(
                    p["error_code"],
                    None,
                    f"Committing offsets of group {group} for {topic['name']}-"
                    f"{p['partition_index']}",
                )
