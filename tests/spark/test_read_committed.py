"""The kafpy data source with kafka.isolation.level=read_committed against real
transactions on a `kafpy server`: committed records are read, aborted ones and those of a
still-open transaction are not, in batch and in streaming mode (the transactions are
ended with WriteTxnMarkers, as a transaction coordinator ends them)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.broker import KafpyBroker
from tests.fixtures.transactions import TxnDriver
from tests.spark.fixtures import create_topic, topic_name
from tests.spark.test_stream_reader import run_available_now


@pytest.fixture(scope="module")
def transactions(kafpy_module_broker: KafpyBroker) -> Iterator[dict[str, Any]]:
    """A 2-partition topic: per partition a committed and an aborted transaction
    interleaved, then a committed one, then one left open."""
    boot = kafpy_module_broker.bootstrap
    topic = create_topic(boot, topic_name("txn"), 2)
    driver = TxnDriver(kafpy_module_broker)
    try:
        for p in (0, 1):
            (c, ce), (a, ae), (o, oe) = (
                driver.producer_id(),
                driver.producer_id(),
                driver.producer_id(),
            )
            driver.produce(topic, [b"c%d-0" % p, b"c%d-1" % p], c, ce, 0, partition=p)
            driver.produce(topic, [b"a%d-0" % p], a, ae, 0, partition=p)
            driver.produce(topic, [b"c%d-2" % p], c, ce, 2, partition=p)
            driver.produce(topic, [b"a%d-1" % p, b"a%d-2" % p], a, ae, 1, partition=p)
            assert driver.end_txn(a, ae, False, {topic: [p]}) == {(topic, p): 0}
            assert driver.end_txn(c, ce, True, {topic: [p]}) == {(topic, p): 0}
            driver.produce(topic, [b"c%d-3" % p], c, ce, 3, partition=p)
            assert driver.end_txn(c, ce, True, {topic: [p]}) == {(topic, p): 0}
            driver.produce(topic, [b"open%d" % p], o, oe, 0, partition=p)
        yield {"bootstrap": boot, "topic": topic}
    finally:
        driver.close()


COMMITTED = sorted(b"c%d-%d" % (p, i) for p in (0, 1) for i in range(4))
EVERYTHING = sorted(COMMITTED + [b"a%d-%d" % (p, i) for p in (0, 1) for i in range(3)]
                    + [b"open0", b"open1"])  # fmt: skip


def batch_values(spark: Any, t: dict[str, Any], isolation: str) -> list[bytes]:
    df = (
        spark.read.format("kafpy")
        .option("kafka.bootstrap.servers", t["bootstrap"])
        .option("subscribe", t["topic"])
        .option("kafka.isolation.level", isolation)
        .load()
    )
    return sorted(bytes(r.value) for r in df.select("value").collect())


def test_batch_read_committed_reads_only_committed_records(
    spark: Any, transactions: dict[str, Any]
) -> None:
    assert batch_values(spark, transactions, "read_committed") == COMMITTED
    assert batch_values(spark, transactions, "read_uncommitted") == EVERYTHING


def test_streaming_read_committed_reads_only_committed_records(
    spark: Any, transactions: dict[str, Any], tmp_path: Path
) -> None:
    got = run_available_now(spark, transactions["bootstrap"], tmp_path / "checkpoint",
                            subscribe=transactions["topic"],
                            **{"kafka.isolation.level": "read_committed"})  # fmt: skip
    rows = [row for batch in got for row in batch]
    # the committed records' offsets: per partition 0, 1, 3 and 8 (markers at 6, 7, 9; the
    # open transaction at 10 holds the last stable offset back, so nothing after it is read)
    assert sorted((p, o) for _, p, o in rows) == [(p, o) for p in (0, 1) for o in (0, 1, 3, 8)]
