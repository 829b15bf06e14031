"""KIP-939's two-phase commit through a running broker: a transaction prepared by one process
(InitProducerId v6 with enable2Pc, AddPartitionsToTxn, Produce, then a "crash": the
connection closed with no EndTxn) is kept by a second process (keepPreparedTxn), which
commits or aborts it; confluent-kafka's read_committed consumer is the referee. Also: the
broker config refusing it, an authorizing broker wanting the TwoPhaseCommit ACL, a prepared
transaction outliving its transaction.timeout.ms and a broker kill, and
`kafpy transactions --find-hanging` / `--describe-producers` / `--abort` on one nobody
completes.

The two "processes" are kafpy's own BrokerConnection sending raw requests, since no client
library sends InitProducerId v6 yet."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from confluent_kafka import Consumer, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kafpy.client.connection import BrokerConnection
from kafpy.protocol.acl_operations import AclOperation as Op
from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.errors import Errors
from kafpy.records.builder import build_batch
from kafpy.security.authorizer import acl
from kafpy.testing.wait import wait_until
from tests.fixtures.broker import KafpyBroker, running_broker
from tests.fixtures.transactions import TWO_PC_OVERRIDES, unique_name

TXN_OVERRIDES = {
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "transaction.state.log.num.partitions": "2",
    "offsets.topic.num.partitions": "2",
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": "200",
}
WAIT_S = 30.0


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafpyBroker]:
    with running_broker(tmp_path_factory.mktemp("two-pc-broker"), TWO_PC_OVERRIDES) as b:
        yield b


_name = unique_name


def _create(broker: KafpyBroker, topic: str) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(WAIT_S)


class Process:
    """One process of a two-phase-commit application: its own connection to the broker (the
    transaction coordinator and the partition leader of a one-broker cluster)."""

    def __init__(self, broker: KafpyBroker, transactional_id: str) -> None:
        self.tid = transactional_id
        self.loop = asyncio.new_event_loop()
        self.conn = BrokerConnection(broker.host, broker.port, client_id=f"2pc-{transactional_id}")
        self.loop.run_until_complete(self.conn.connect())
        self.producer_id, self.producer_epoch = -1, -1

    def send(self, api: ApiKey, body: dict[str, Any], version: int) -> dict[str, Any]:
        return self.loop.run_until_complete(self.conn.send(api, body, version))

    def init(
        self, *, enable_2pc: bool = True, keep_prepared_txn: bool = False, timeout_ms: int = 60000
    ) -> dict[str, Any]:
        """InitProducerId v6, retried while the coordinator loads or aborts; the answer."""
        body = {"transactional_id": self.tid, "transaction_timeout_ms": timeout_ms,
                "enable2_pc": enable_2pc, "keep_prepared_txn": keep_prepared_txn}  # fmt: skip
        answer: dict[str, Any] = {}
        retriable = {Errors.COORDINATOR_LOAD_IN_PROGRESS, Errors.COORDINATOR_NOT_AVAILABLE,
                     Errors.NOT_COORDINATOR, Errors.CONCURRENT_TRANSACTIONS}  # fmt: skip

        def answered() -> bool:
            # as a client does: FindCoordinator first (it creates __transaction_state)
            found = self.send(ApiKey.FIND_COORDINATOR, {"key": self.tid, "key_type": 1}, 3)
            if found["error_code"] != Errors.NONE:
                return False
            answer.update(self.send(ApiKey.INIT_PRODUCER_ID, body, 6))
            return answer["error_code"] not in retriable

        wait_until(answered, WAIT_S, "InitProducerId to be answered", interval_s=0.1,
                   context=lambda: str(answer))  # fmt: skip
        if answer["error_code"] == Errors.NONE:
            self.producer_id, self.producer_epoch = answer["producer_id"], answer["producer_epoch"]
        return answer

    def add_partition(self, topic: str) -> int:
        body = {"v3_and_below_transactional_id": self.tid,
                "v3_and_below_producer_id": self.producer_id,
                "v3_and_below_producer_epoch": self.producer_epoch,
                "v3_and_below_topics": [{"name": topic, "partitions": [0]}]}  # fmt: skip
        r = self.send(ApiKey.ADD_PARTITIONS_TO_TXN, body, 3)
        return int(
            r["results_by_topic_v3_and_below"][0]["results_by_partition"][0]["partition_error_code"]
        )

    def produce(self, topic: str, values: list[bytes]) -> int:
        batch = build_batch(values, producer_id=self.producer_id, producer_epoch=self.producer_epoch,
                            base_sequence=0, is_transactional=True)  # fmt: skip
        body = {"transactional_id": self.tid, "acks": -1, "timeout_ms": 10000, "topic_data": [
            {"name": topic, "partition_data": [{"index": 0, "records": batch}]}]}  # fmt: skip
        answer = self.send(ApiKey.PRODUCE, body, 8)["responses"][0]["partition_responses"][0]
        assert answer["error_code"] == Errors.NONE, answer
        return int(answer["base_offset"])

    def end_txn(self, commit: bool, epoch: int | None = None) -> int:
        body = {"transactional_id": self.tid, "producer_id": self.producer_id,
                "producer_epoch": self.producer_epoch if epoch is None else epoch, "committed": commit}  # fmt: skip
        return int(self.send(ApiKey.END_TXN, body, 3)["error_code"])

    def close(self) -> None:
        async def close() -> None:
            await self.conn.close()

        self.loop.run_until_complete(close())
        self.loop.close()


def prepare(broker: KafpyBroker, tid: str, topic: str, values: list[bytes]) -> tuple[int, int, int]:
    """Process 1: a two-phase-commit transaction writing `values`, prepared, then a crash.
    Returns (producer id, epoch, offset of the first record)."""
    first = Process(broker, tid)
    try:
        init = first.init()
        assert init["error_code"] == Errors.NONE, init
        assert (init["ongoing_txn_producer_id"], init["ongoing_txn_producer_epoch"]) == (-1, -1)
        assert first.add_partition(topic) == Errors.NONE
        offset = first.produce(topic, values)
        return first.producer_id, first.producer_epoch, offset
    finally:
        first.close()  # no EndTxn: the external coordinator decides later


def read(broker: KafpyBroker, topic: str, isolation: str) -> list[bytes]:
    """Every value up to the partition's end (the LSO for read_committed)."""
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": _name("reader"),
                  "isolation.level": isolation, "enable.partition.eof": True,
                  "enable.auto.commit": False})  # fmt: skip
    try:
        c.assign([TopicPartition(topic, 0, 0)])
        values: list[bytes] = []
        done: list[bool] = []

        def to_the_end() -> bool:
            m = c.poll(0.5)
            if m is not None:
                err = m.error()
                if err is None:
                    values.append(m.value())
                elif err.code() == -191:  # _PARTITION_EOF
                    done.append(True)
                else:
                    raise KafkaException(err)
            return bool(done)

        wait_until(to_the_end, WAIT_S, f"the end of {topic}-0 ({isolation})", interval_s=0)
        return values
    finally:
        c.close()


def stable_offsets(broker: KafpyBroker, topic: str) -> tuple[int, int]:
    """(last stable offset, high watermark) of `topic`-0, from a read_committed Fetch."""
    p = Process(broker, "fetcher")
    try:
        body = {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1 << 20,
                "isolation_level": 1, "session_id": 0, "session_epoch": -1,
                "topics": [{"topic": topic, "partitions": [{"partition": 0, "fetch_offset": 0,
                            "log_start_offset": -1, "partition_max_bytes": 1 << 20}]}],
                "forgotten_topics_data": [], "rack_id": ""}  # fmt: skip
        part = p.send(ApiKey.FETCH, body, 11)["responses"][0]["partitions"][0]
        return int(part["last_stable_offset"]), int(part["high_watermark"])
    finally:
        p.close()


def test_a_second_process_commits_the_prepared_transaction_exactly_once(
    broker: KafpyBroker,
) -> None:
    topic, tid = _name("2pc-commit"), _name("sink")
    _create(broker, topic)
    pid, epoch, _ = prepare(broker, tid, topic, [b"a", b"b", b"c"])
    assert read(broker, topic, "read_committed") == []  # prepared, not committed
    second = Process(broker, tid)
    try:
        kept = second.init(keep_prepared_txn=True)
        assert kept["error_code"] == Errors.NONE, kept
        assert (kept["producer_id"], kept["producer_epoch"]) == (pid, epoch + 1)
        assert (kept["ongoing_txn_producer_id"], kept["ongoing_txn_producer_epoch"]) == (pid, epoch)
        assert second.end_txn(True, epoch=epoch) == Errors.PRODUCER_FENCED  # the preparer's epoch
        assert second.end_txn(True) == Errors.NONE
    finally:
        second.close()
    assert read(broker, topic, "read_committed") == [b"a", b"b", b"c"]
    assert read(broker, topic, "read_uncommitted") == [b"a", b"b", b"c"]


def test_a_second_process_aborts_the_prepared_transaction(broker: KafpyBroker) -> None:
    topic, tid = _name("2pc-abort"), _name("sink")
    _create(broker, topic)
    pid, epoch, _ = prepare(broker, tid, topic, [b"x", b"y"])
    second = Process(broker, tid)
    try:
        kept = second.init(keep_prepared_txn=True)
        assert (kept["ongoing_txn_producer_id"], kept["ongoing_txn_producer_epoch"]) == (pid, epoch)
        assert second.end_txn(False) == Errors.NONE
    finally:
        second.close()
    wait_until(lambda: stable_offsets(broker, topic)[0] == stable_offsets(broker, topic)[1],
               WAIT_S, "the abort marker")  # fmt: skip
    assert read(broker, topic, "read_committed") == []
    assert read(broker, topic, "read_uncommitted") == [b"x", b"y"]


def test_two_phase_commit_is_refused_while_the_broker_config_is_off(
    kafpy_broker_factory: Any,
) -> None:
    b: KafpyBroker = kafpy_broker_factory(TXN_OVERRIDES, name="two-pc-off")
    p = Process(b, _name("sink"))
    try:
        refused = p.init()
        assert refused["error_code"] == Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        assert (refused["producer_id"], refused["producer_epoch"]) == (-1, -1)
        assert (
            p.init(enable_2pc=False)["error_code"] == Errors.NONE
        )  # plain transactions still work
    finally:
        p.close()


def test_a_prepared_transaction_outlives_its_timeout_and_a_broker_kill(
    kafpy_broker_factory: Any,
) -> None:
    b: KafpyBroker = kafpy_broker_factory(TWO_PC_OVERRIDES, name="two-pc-kill")
    topic, tid = _name("2pc-kill"), _name("sink")
    _create(b, topic)
    first = Process(b, tid)
    try:
        assert first.init(timeout_ms=1000)["error_code"] == Errors.NONE
        assert first.add_partition(topic) == Errors.NONE
        offset = first.produce(topic, [b"kept"])
        pid, epoch = first.producer_id, first.producer_epoch
    finally:
        first.close()
    # an ordinary transaction would be aborted 1 s in, at the next 200 ms check
    time.sleep(2.0)
    assert stable_offsets(b, topic) == (offset, offset + 1)
    second = Process(b, tid)
    try:
        kept = second.init(keep_prepared_txn=True)
        assert (kept["producer_epoch"], kept["ongoing_txn_producer_epoch"]) == (epoch + 1, epoch)
    finally:
        second.close()
    b.kill()
    b.start()
    time.sleep(2.0)  # reloaded from __transaction_state: still not timed out
    assert stable_offsets(b, topic) == (offset, offset + 1)
    third = Process(b, tid)
    try:
        again = third.init(keep_prepared_txn=True)
        assert again["error_code"] == Errors.NONE, again
        assert (again["producer_id"], again["producer_epoch"]) == (pid, epoch + 2)
        assert (again["ongoing_txn_producer_id"], again["ongoing_txn_producer_epoch"]) == (
            pid,
            epoch,
        )
        assert third.end_txn(True) == Errors.NONE
    finally:
        third.close()
    assert read(b, topic, "read_committed") == [b"kept"]


def test_the_transactions_tool_finds_and_aborts_a_prepared_transaction_nobody_completes(
    broker: KafpyBroker,
) -> None:
    from kafpy.cli.transactions import command

    topic, tid = _name("2pc-hanging"), _name("sink")
    _create(broker, topic)
    pid, epoch, offset = prepare(broker, tid, topic, [b"stuck"])
    time.sleep(0.01)
    runner = CliRunner()
    hanging = ["--bootstrap-server", broker.bootstrap, "--find-hanging", "--broker-id", "0",
               "--topic", topic, "--max-transaction-timeout", "0"]  # fmt: skip
    found = runner.invoke(command, hanging)
    assert found.exit_code == 0, found.output
    header, *rows = found.output.splitlines()
    assert header.split()[:3] == ["Topic", "Partition", "ProducerId"]
    assert [r.split()[:6] for r in rows] == [[topic, "0", str(pid), str(epoch), "-1", str(offset)]]
    described = runner.invoke(command, ["--bootstrap-server", broker.bootstrap, "--describe-producers",
                                        "--topic", topic, "--partition", "0"])  # fmt: skip
    assert described.exit_code == 0, described.output
    header, *rows = described.output.splitlines()
    assert header.split() == ["ProducerId", "ProducerEpoch", "LatestCoordinatorEpoch", "LastSequence",
                              "LastTimestamp", "CurrentTransactionStartOffset"]  # fmt: skip
    assert [(r.split()[:4], r.split()[5]) for r in rows] == [
        ([str(pid), str(epoch), "-1", "0"], str(offset))
    ]
    wrong = runner.invoke(command, ["--bootstrap-server", broker.bootstrap, "--abort", "--topic", topic,
                                    "--partition", "0", "--start-offset", str(offset + 5)])  # fmt: skip
    assert wrong.exit_code == 1
    assert (
        f"Could not find any open transactions starting at offset {offset + 5} on partition {topic}-0"
        in wrong.output
    )
    aborted = runner.invoke(command, ["--bootstrap-server", broker.bootstrap, "--abort", "--topic", topic,
                                      "--partition", "0", "--start-offset", str(offset)])  # fmt: skip
    assert aborted.exit_code == 0, aborted.output
    assert aborted.output == ""
    assert stable_offsets(broker, topic) == (offset + 2, offset + 2)  # the record and the marker
    assert read(broker, topic, "read_committed") == []
    again = runner.invoke(command, hanging)
    assert again.exit_code == 0 and again.output.splitlines()[1:] == []


def test_a_secured_broker_wants_the_two_phase_commit_acl_too(tmp_path: Path) -> None:
    from tests.integration.test_acls import ANONYMOUS, initial_acls, write_acls

    def allow(tid: str, op: Op) -> acl.AclBinding:
        return acl.AclBinding(
            acl.ResourcePattern(acl.ResourceType.TRANSACTIONAL_ID, tid, acl.PatternType.LITERAL),
            acl.AccessControlEntry(ANONYMOUS, "*", op, acl.AclPermissionType.ALLOW),
        )

    b = KafpyBroker(tmp_path / "secured", {**TWO_PC_OVERRIDES, "allow.everyone.if.no.acl.found": "false",
                    "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer"})  # fmt: skip
    write_acls(b.log_dir, [*initial_acls(), allow("writer", Op.WRITE),
                           allow("sink", Op.WRITE), allow("sink", Op.TWO_PHASE_COMMIT)])  # fmt: skip
    b.start()
    try:
        writer, sink = Process(b, "writer"), Process(b, "sink")
        try:
            refused = writer.init()
            assert refused["error_code"] == Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
            assert writer.init(enable_2pc=False)["error_code"] == Errors.NONE
            assert sink.init()["error_code"] == Errors.NONE
        finally:
            writer.close()
            sink.close()
    finally:
        b.stop()
