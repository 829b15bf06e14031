"""FetchSessionHandler: a fetcher's side of one incremental fetch session with one broker
(Kafka's clients FetchSessionHandler, KIP-227).

Each round the fetcher names every partition it wants (`new_builder()`, `add`, `build`).
The first request is a full fetch with epoch 0; once the broker answers it with a session
id, later requests carry only the partitions whose fetch parameters changed, plus the
partitions dropped since (`forgotten_topics_data`), and the broker answers only the
partitions with something new. Any doubt — a session error, a response naming
partitions it should not, a lost connection — sends the next request as a full fetch.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kafpy.common.logger import component_logger
from kafpy.common.topic_partition import TopicPartition
from kafpy.protocol.errors import Errors
from kafpy.protocol.messages.fetch import (
    INITIAL_FETCH_METADATA,
    INVALID_SESSION_ID,
    FetchMetadata,
)

PartitionData = Mapping[str, int]
"""One partition's fetch parameters as the request carries them (`fetch_offset`,
`partition_max_bytes`, `log_start_offset`, `current_leader_epoch`, ...), without its index."""


@dataclass(frozen=True, slots=True)
class FetchRequestData:
    """What the next Fetch carries: the partitions to send, those to forget, every
    partition of the session, and the session id and epoch."""

    to_send: dict[TopicPartition, PartitionData]
    to_forget: list[TopicPartition]
    session_partitions: dict[TopicPartition, PartitionData]
    metadata: FetchMetadata

    def request_fields(self) -> dict[str, Any]:
        """The Fetch request body's `session_id`, `session_epoch`, `topics` and
        `forgotten_topics_data`."""
        topics: dict[str, list[dict[str, int]]] = {}
        for tp, data in self.to_send.items():
            topics.setdefault(tp.topic, []).append({"partition": tp.partition, **data})
        forgotten: dict[str, list[int]] = {}
        for tp in self.to_forget:
            forgotten.setdefault(tp.topic, []).append(tp.partition)
        return {
            "session_id": self.metadata.session_id,
            "session_epoch": self.metadata.epoch,
            "topics": [{"topic": t, "partitions": ps} for t, ps in topics.items()],
            "forgotten_topics_data": [
                {"topic": t, "partitions": ps} for t, ps in forgotten.items()
            ],
        }


class FetchSessionHandler:
    """The session of one fetcher with broker `node` (one per connection's fetcher)."""

    def __init__(self, node: int, log_prefix: str = "") -> None:
        self.node = node
        self.next_metadata = INITIAL_FETCH_METADATA
        # every partition of the session with its last sent parameters, in order
        self.session_partitions: dict[TopicPartition, PartitionData] = {}
        self.log = component_logger("kafpy.client.FetchSessionHandler", log_prefix or None)

    @property
    def session_id(self) -> int:
        return self.next_metadata.session_id

    def new_builder(self) -> FetchRequestBuilder:
        return FetchRequestBuilder(self)

    def handle_response(self, response: Mapping[str, Any]) -> bool:
        """Take a Fetch response; False when it cannot be used (a session error, or
        partitions it should not name): the next request is then a full fetch."""
        error = response.get("error_code", Errors.NONE)
        if error != Errors.NONE:
            self.log.info("Node %d was unable to process the fetch request with %s: %s.",
                          self.node, self.next_metadata, Errors(error).name)  # fmt: skip
            if error == Errors.FETCH_SESSION_ID_NOT_FOUND:
                self.next_metadata = INITIAL_FETCH_METADATA
            else:
                self.next_metadata = self.next_metadata.next_close_existing()
            return False
        session_id = response.get("session_id", INVALID_SESSION_ID)
        answered = {
            TopicPartition(t["topic"], p["partition_index"])
            for t in response.get("responses", ())
            for p in t["partitions"]
        }
        if self.next_metadata.is_full:
            if not answered and response.get("throttle_time_ms", 0) > 0:
                # KIP-219: a throttled full fetch is answered empty; not an error
                self.next_metadata = INITIAL_FETCH_METADATA
                return False
            problem = self._verify_full(answered)
            if problem is not None:
                self.log.info("%s", problem)
                self.next_metadata = INITIAL_FETCH_METADATA
                return False
            if session_id == INVALID_SESSION_ID:
                self.next_metadata = INITIAL_FETCH_METADATA
            else:
                self.log.debug("Node %d sent a full fetch response that created a new incremental "
                               "fetch session %d", self.node, session_id)  # fmt: skip
                self.next_metadata = FetchMetadata.new_incremental(session_id)
            return True
        extra = answered - self.session_partitions.keys()
        if extra:
            self.log.info("Node %d sent an invalid incremental fetch response with extra "
                          "partitions %s", self.node, sorted(map(str, extra)))  # fmt: skip
            self.next_metadata = self.next_metadata.next_close_existing()
            return False
        if session_id == INVALID_SESSION_ID:
            # the broker closed the session (it has no partitions left)
            self.next_metadata = INITIAL_FETCH_METADATA
        else:
            self.next_metadata = self.next_metadata.next_incremental()
        return True

    def handle_error(self, error: BaseException) -> None:
        """The request failed (connection lost, timeout): the next fetch is full and
        closes the session, which the broker may have moved on."""
        self.log.info("Error sending fetch request %s to node %d: %s", self.next_metadata,
                      self.node, error)  # fmt: skip
        self.next_metadata = self.next_metadata.next_close_existing()

    def _verify_full(self, answered: set[TopicPartition]) -> str | None:
        omitted = self.session_partitions.keys() - answered
        extra = answered - self.session_partitions.keys()
        if not omitted and not extra:
            return None
        return (f"Node {self.node} sent an invalid full fetch response with "
                f"{len(extra)} extra partition(s) and {len(omitted)} omitted partition(s)")  # fmt: skip


class FetchRequestBuilder:
    """The partitions a fetcher wants this round, turned into the next request's data."""

    def __init__(self, handler: FetchSessionHandler) -> None:
        self.handler = handler
        self.next: dict[TopicPartition, PartitionData] = {}

    def add(self, tp: TopicPartition, data: PartitionData) -> None:
        self.next[tp] = data

    def build(self) -> FetchRequestData:
        handler = self.handler
        metadata = handler.next_metadata
        if metadata.is_full:
            handler.session_partitions = self.next
            self.next = {}
            return FetchRequestData(dict(handler.session_partitions), [],
                                    handler.session_partitions, metadata)  # fmt: skip
        session = handler.session_partitions
        wanted = self.next
        to_send: dict[TopicPartition, PartitionData] = {}
        to_forget: list[TopicPartition] = []
        for tp in list(session):
            data = wanted.pop(tp, None)
            if data is None:
                del session[tp]
                to_forget.append(tp)
            elif data != session[tp]:
                session[tp] = data
                to_send[tp] = data
        for tp, data in wanted.items():  # added
            session[tp] = data
            to_send[tp] = data
        self.next = {}
        return FetchRequestData(to_send, to_forget, session, metadata)
