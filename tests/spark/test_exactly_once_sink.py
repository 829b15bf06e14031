"""The exactly-once kafpy sink (`exactlyOnce=true`) with real Spark against a `kafpy server`
with `transaction.two.phase.commit.enable=true`; confluent-kafka's read_committed consumer
is the referee: the sink topic holds every input record exactly once.

- a batch `.write`: committed by the driver when the job succeeds, aborted (nothing
  visible, no transaction left open) when a task fails;
- a streaming query whose last micro-batch is replayed after its transactions committed
  (Spark's commit log entry removed, as when the driver dies between the sink's commit and
  the log): the replay skips what is committed;
- the query of tests.spark.eos_query: in a process of its own, (a) every task failing on
  its first attempt, (b) the driver SIGKILLed mid-batch, then the query restarted from its
  checkpoint; on the shared session, (c) the broker SIGKILLed mid-batch and restarted;
- refusals: a broker without two-phase commit, and options that contradict exactlyOnce.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from kafpy.client.find_coordinator import CoordinatorType, find_coordinator
from kafpy.client.kafka_client import KafkaClient
from kafpy.client.transaction_admin import TransactionAdmin
from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.errors import Errors
from kafpy.testing.wait import wait_until
from tests.fixtures.broker import KafpyBroker, running_broker
from tests.fixtures.transactions import TWO_PC_OVERRIDES, TXN_OVERRIDES, read_values
from tests.spark.eos_query import start_query
from tests.spark.fixtures import create_topic, module_root, produce, topic_name

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafpyBroker]:
    with running_broker(tmp_path_factory.mktemp("eos-broker"), TWO_PC_OVERRIDES) as b:
        yield b


def transaction_states(bootstrap: str, prefix: str) -> dict[str, str]:
    """The state of each of the sink's transactional ids (of `prefix`)."""

    async def run() -> dict[str, str]:
        async with KafkaClient(bootstrap) as client:
            listed = await TransactionAdmin(client).list_transactions()
        return {
            t.transactional_id: t.state for t in listed if t.transactional_id.startswith(prefix)
        }

    return asyncio.run(run())


def open_transactions(bootstrap: str, prefix: str) -> list[str]:
    """The sink's transactional ids (of `prefix`) with a transaction not yet complete."""
    states = transaction_states(bootstrap, prefix)
    return sorted(
        t
        for t, state in states.items()
        if state not in ("Empty", "CompleteCommit", "CompleteAbort")
    )


def offset_pending(bootstrap: str, group: str, topic: str) -> bool:
    """Whether `group` holds a transactional offset for partition 0 of `topic` that is not
    yet committed or aborted (OffsetFetch v7 with require_stable answers
    UNSTABLE_OFFSET_COMMIT): a sink task has written its rows and its micro-batch's offset,
    and has nothing left to send before it prepares."""

    async def run() -> bool:
        async with KafkaClient(bootstrap) as client:
            node = await find_coordinator(client, group, CoordinatorType.GROUP)
            body = await client.send_to_node(node, ApiKey.OFFSET_FETCH, {
                "group_id": group, "require_stable": True,
                "topics": [{"name": topic, "partition_indexes": [0]}],
            }, 7)  # fmt: skip
        code = body["topics"][0]["partitions"][0]["error_code"]
        return bool(code == Errors.UNSTABLE_OFFSET_COMMIT)

    return asyncio.run(run())


def numbered(bootstrap: str, topic: str, count: int, tag: bytes = b"") -> list[bytes]:
    """`count` records with keys spread over the topic's partitions; their values."""
    values = [tag + b"%03d" % i for i in range(count)]
    produce(bootstrap, topic, [{"key": b"k%d" % i, "value": v} for i, v in enumerate(values)])
    return values


def batch_writer(df: Any, bootstrap: str, topic: str, **options: str) -> Any:
    w = (
        df.write.format("kafpy")
        .mode("append")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("topic", topic)
        .option("exactlyOnce", "true")
    )
    for k, v in options.items():
        w = w.option(k, v)
    return w


def test_batch_write_commits_when_the_job_succeeds(spark: Any, broker: KafpyBroker) -> None:
    boot = broker.bootstrap
    topic = create_topic(boot, topic_name("eos-batch"), 3)
    prefix = topic_name("eos-batch-tx")
    df = spark.createDataFrame([(f"k{i}", f"v{i}") for i in range(300)], "key string, value string")
    batch_writer(df.repartition(3), boot, topic, transactionalIdPrefix=prefix).save()
    got = read_values(boot, [(topic, p) for p in range(3)], "read_committed")
    assert got == sorted(f"v{i}".encode() for i in range(300))
    assert open_transactions(boot, prefix) == []


def test_batch_write_aborts_every_task_when_one_fails(spark: Any, broker: KafpyBroker) -> None:
    boot = broker.bootstrap
    topic = create_topic(boot, topic_name("eos-fail"), 2)
    prefix = topic_name("eos-fail-tx")
    # partition 3 does not exist: the task holding that row fails, the others prepared
    rows = [(f"v{i}", 3 if i == 199 else i % 2) for i in range(200)]
    df = spark.createDataFrame(rows, "value string, partition int").coalesce(2)
    with pytest.raises(Exception, match="asks for partition 3"):
        batch_writer(df, boot, topic, transactionalIdPrefix=prefix).save()
    assert read_values(boot, [(topic, 0), (topic, 1)], "read_committed") == []
    assert open_transactions(boot, prefix) == []


def stream(spark: Any, boot: str, source: str, sink: str, checkpoint: Path, **options: str) -> Any:
    w = (
        spark.readStream.format("kafpy")
        .option("kafka.bootstrap.servers", boot)
        .option("subscribe", source)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", "25")
        .option("kafka.isolation.level", "read_committed")
        .load()
        .selectExpr("key", "concat(CAST(value AS STRING), '!') AS value")
        .writeStream.format("kafpy")
        .option("kafka.bootstrap.servers", boot)
        .option("topic", sink)
        .option("exactlyOnce", "true")
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
    )
    for k, v in options.items():
        w = w.option(k, v)
    return w.start()


def finished(query: Any) -> Any:
    assert query.awaitTermination(120)
    assert query.exception() is None
    return query


def test_a_replayed_micro_batch_that_committed_is_not_written_again(
    spark: Any, broker: KafpyBroker, tmp_path: Path
) -> None:
    boot = broker.bootstrap
    source = create_topic(boot, topic_name("eos-src"), 2)
    sink = create_topic(boot, topic_name("eos-dst"), 2)
    values = numbered(boot, source, 60)
    expected = sorted(v + b"!" for v in values)
    checkpoint = tmp_path / "cp"
    query = stream(spark, boot, source, sink, checkpoint)
    assert query.awaitTermination(120)
    assert query.exception() is None
    assert read_values(boot, [(sink, 0), (sink, 1)], "read_committed") == expected
    # the default prefix is the query's id, the same after a restart
    assert open_transactions(boot, f"kafpy-sink-{query.id}") == []
    # as if the driver died after the sink's commit, before Spark's commit log entry
    last = max(int(f.name) for f in (checkpoint / "commits").iterdir() if f.name.isdigit())
    (checkpoint / "commits" / str(last)).unlink()
    (checkpoint / "commits" / f".{last}.crc").unlink(missing_ok=True)
    replay = stream(spark, boot, source, sink, checkpoint)
    assert replay.awaitTermination(120)
    assert replay.exception() is None
    assert replay.id == query.id
    assert (checkpoint / "commits" / str(last)).exists()
    assert read_values(boot, [(sink, 0), (sink, 1)], "read_committed") == expected


def test_two_concurrent_queries_are_each_exactly_once(
    spark: Any, broker: KafpyBroker, tmp_path: Path
) -> None:
    boot = broker.bootstrap
    topics = [
        (create_topic(boot, topic_name(f"eos-cc{i}-in"), 2),
         create_topic(boot, topic_name(f"eos-cc{i}-out"), 2))
        for i in range(2)
    ]  # fmt: skip
    inputs = [numbered(boot, source, 50, b"q%d-" % i) for i, (source, _) in enumerate(topics)]
    queries = [
        stream(spark, boot, source, sink, tmp_path / f"cp{i}")
        for i, (source, sink) in enumerate(topics)
    ]
    for q in queries:
        finished(q)
    # each query's default prefix is its own query id: no transactional id in common
    ids = [set(transaction_states(boot, f"kafpy-sink-{q.id}")) for q in queries]
    assert ids[0] == {f"kafpy-sink-{queries[0].id}-0", f"kafpy-sink-{queries[0].id}-1"}
    assert ids[1] == {f"kafpy-sink-{queries[1].id}-0", f"kafpy-sink-{queries[1].id}-1"}
    for (_, sink), values in zip(topics, inputs, strict=True):
        got = read_values(boot, [(sink, 0), (sink, 1)], "read_committed")
        assert got == sorted(v + b"!" for v in values)


@pytest.mark.parametrize("fixed_prefix", [False, True], ids=["query-id-prefix", "fixed-prefix"])
def test_a_query_started_again_without_its_checkpoint_is_a_new_query(
    spark: Any, broker: KafpyBroker, tmp_path: Path, fixed_prefix: bool
) -> None:
    """A deleted checkpoint makes a new query (new query id, batch ids from 0): it reads its
    input again from startingOffsets and writes all of it again. With a fixed
    transactionalIdPrefix the sink's groups still hold the old query's batch ids; they
    must not make the new query skip its batches."""
    boot = broker.bootstrap
    source = create_topic(boot, topic_name("eos-fresh-in"), 2)
    sink = create_topic(boot, topic_name("eos-fresh-out"), 2)
    values = numbered(boot, source, 50)
    options = {"transactionalIdPrefix": topic_name("eos-fresh-tx")} if fixed_prefix else {}
    checkpoint = tmp_path / "cp"
    first = finished(stream(spark, boot, source, sink, checkpoint, **options))
    shutil.rmtree(checkpoint)
    again = finished(stream(spark, boot, source, sink, checkpoint, **options))
    assert again.id != first.id
    got = read_values(boot, [(sink, 0), (sink, 1)], "read_committed")
    assert got == sorted(2 * [v + b"!" for v in values])


class QueryProcess:
    """tests.spark.eos_query in a process group of its own (the driver, its JVM and its
    Python workers), so that the test can SIGKILL all of it."""

    def __init__(self, tmp: Path, config: dict[str, Any]) -> None:
        self.config = {**config, "checkpoint": str(tmp / "cp"), "markers": str(tmp)}
        self.log = tmp / "query.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, mode: str) -> QueryProcess:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), module_root()])}
        with self.log.open("ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "tests.spark.eos_query",
                 json.dumps({**self.config, "mode": mode})],
                cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True,
            )  # fmt: skip
        return self

    def wait(self, timeout_s: float = 180) -> int:
        assert self.proc is not None
        try:
            return self.proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.kill()
            raise

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(30)

    def tail(self) -> str:
        return self.log.read_text(errors="replace")[-3000:]


@pytest.fixture
def query_process(
    broker: KafpyBroker, tmp_path: Path
) -> Iterator[tuple[QueryProcess, list[bytes], str, str]]:
    boot = broker.bootstrap
    source = create_topic(boot, topic_name("eos-in"), 2)
    sink = create_topic(boot, topic_name("eos-out"), 2)
    prefix = topic_name("eos-q")
    values = numbered(boot, source, 60)
    q = QueryProcess(tmp_path, {"bootstrap": boot, "source": source, "sink": sink,
                                "prefix": prefix})  # fmt: skip
    try:
        yield q, sorted(v + b"!" for v in values), sink, prefix
    finally:
        q.kill()


def test_tasks_failing_then_the_driver_killed_mid_batch_and_restarted(
    spark: Any, broker: KafpyBroker, query_process: tuple[QueryProcess, list[bytes], str, str],
    tmp_path: Path,
) -> None:  # fmt: skip
    """(a) and (b) in one query process (one JVM): every task's first attempt fails; in
    micro-batch 1 the retried task of partition 1 hangs and the driver is SIGKILLed; the
    query restarted from its checkpoint (on the shared session) finishes the input."""
    q, expected, sink, prefix = query_process
    q.start("fail_once+hang")
    wait_until(
        lambda: (tmp_path / "hanging").exists(),
        150,
        "micro-batch 1's hanging task",
        context=q.tail,
    )
    # partition 0's task of micro-batch 1 has prepared its transaction (Ongoing until the
    # driver completes it, which it will not: it waits for partition 1)
    wait_until(
        lambda: open_transactions(broker.bootstrap, prefix) == [f"{prefix}-0"],
        60, "the transactions of micro-batch 1",
        context=lambda: f"{transaction_states(broker.bootstrap, prefix)}\n{q.tail()}",
    )  # fmt: skip
    q.kill()
    assert {f.name for f in tmp_path.glob("failed-*")} == {
        "failed-0-0", "failed-0-1", "failed-1-0", "failed-1-1"
    }  # fmt: skip
    assert "failing the first attempt of batch 0 task 1" in q.log.read_text(errors="replace")
    # restarted from its checkpoint on the shared session (no second JVM to start)
    restarted = start_query(spark, {**q.config, "mode": "plain"})
    assert restarted.awaitTermination(120)
    assert restarted.exception() is None
    assert read_values(broker.bootstrap, [(sink, 0), (sink, 1)], "read_committed") == expected
    assert open_transactions(broker.bootstrap, prefix) == []


def test_the_broker_killed_mid_batch(
    spark: Any, broker: KafpyBroker,
    query_process: tuple[QueryProcess, list[bytes], str, str], tmp_path: Path,
) -> None:  # fmt: skip
    """(c) on the shared session (no JVM to start): in micro-batch 2 the broker is
    SIGKILLed and restarted while partition 1's transaction is prepared and partition 0's
    task waits; the driver then commits both."""
    q, expected, sink, prefix = query_process
    config = {**q.config, "mode": "pause"}
    query = start_query(spark, config)
    try:
        wait_until(lambda: (tmp_path / "paused").exists(), 120, "micro-batch 2")
        # open from partition 1's first record on; prepared once its offset is written
        wait_until(
            lambda: open_transactions(broker.bootstrap, prefix) == [f"{prefix}-1"]
            and offset_pending(broker.bootstrap, f"{prefix}-1", sink),
            60, "partition 1's transaction of micro-batch 2 to be prepared",
            context=lambda: str(transaction_states(broker.bootstrap, prefix)),
        )  # fmt: skip
        broker.kill()
        broker.restart()
        (tmp_path / "resume").touch()
        assert query.awaitTermination(120)
    finally:
        query.stop()
    # the tasks' and the source's clients reconnect to the restarted broker
    assert query.exception() is None
    assert (Path(config["checkpoint"]) / "commits" / "2").exists()
    assert read_values(broker.bootstrap, [(sink, 0), (sink, 1)], "read_committed") == expected
    assert open_transactions(broker.bootstrap, prefix) == []


def test_refusals(
    spark: Any, kafpy_broker_factory: Callable[..., KafpyBroker], broker: KafpyBroker
) -> None:
    df = spark.createDataFrame([("x",)], "value string")
    plain = kafpy_broker_factory(TXN_OVERRIDES).bootstrap  # no two-phase commit
    topic = create_topic(plain, topic_name("eos-no2pc"), 1)
    with pytest.raises(
        Exception, match="enable transaction.two.phase.commit.enable on the brokers"
    ):
        batch_writer(df, plain, topic).save()
    boot = broker.bootstrap
    with pytest.raises(Exception, match="Option 'kafka.acks' = '1' is not supported: exactlyOnce"):
        batch_writer(df, boot, "t", **{"kafka.acks": "1"}).save()
    with pytest.raises(Exception, match="'transactionalIdPrefix' is only used with exactlyOnce"):
        df.write.format("kafpy").mode("append").option("kafka.bootstrap.servers", boot).option(
            "topic", "t"
        ).option("transactionalIdPrefix", "p").save()
