"""CleanedTransactionMetadata: what the cleaner knows of transactions while it walks a log
(Kafka's class of that name in LogCleaner.scala).

Fed the aborted transactions of the range being cleaned (from the `.txnindex` files), it
follows the batches in offset order and says which may go:

- a data batch of an aborted transaction goes (its records are never to be read);
- an ABORT marker stays while any batch of its transaction was seen in this pass (and
  its `.txnindex` entry is written to the cleaned segment); once a later pass finds
  none left, it may go;
- a COMMIT marker may go once no batch of its transaction was seen in this pass;
- an empty control batch (its transaction already cleaned away) may go.

The caller keeps markers that may go while they are within delete.retention.ms, as
tombstones are kept.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Sequence

from kafpy.records.control_record import ControlRecordType
from kafpy.records.record_batch import (
    H_ATTRIBUTES,
    H_BASE_OFFSET,
    H_LAST_OFFSET_DELTA,
    H_PRODUCER_ID,
    H_RECORD_COUNT,
    TRANSACTIONAL_MASK,
    RecordBatch,
)
from kafpy.storage.transaction_index import AbortedTxn, TransactionIndex


class _AbortedTransactionMetadata:
    __slots__ = ("aborted_txn", "last_observed_batch_offset")

    def __init__(self, aborted_txn: AbortedTxn) -> None:
        self.aborted_txn = aborted_txn
        self.last_observed_batch_offset: int | None = None


class CleanedTransactionMetadata:
    """The transactions the cleaner is inside of, as it reads batches in offset order.

    `aborted` are the aborted transactions overlapping the range read; `cleaned_index`
    is the cleaned segment's `.txnindex`, which gets the entries of the aborted
    transactions whose marker is kept (None while building the offset map).
    """

    def __init__(
        self, aborted: Iterable[AbortedTxn] = (), cleaned_index: TransactionIndex | None = None
    ) -> None:
        self._aborted: list[tuple[int, int, AbortedTxn]] = []
        self._seq = 0
        self.add_aborted_transactions(aborted)
        self.cleaned_index = cleaned_index
        self._ongoing_committed: set[int] = set()
        self._ongoing_aborted: dict[int, _AbortedTransactionMetadata] = {}

    def add_aborted_transactions(self, aborted: Iterable[AbortedTxn]) -> None:
        for txn in aborted:
            heapq.heappush(self._aborted, (txn.first_offset, self._seq, txn))
            self._seq += 1

    def _consume_aborted_txns_up_to(self, offset: int) -> None:
        while self._aborted and self._aborted[0][0] <= offset:
            txn = heapq.heappop(self._aborted)[2]
            if txn.producer_id not in self._ongoing_aborted:
                self._ongoing_aborted[txn.producer_id] = _AbortedTransactionMetadata(txn)

    def on_control_batch_read(self, header: Sequence[int], data: memoryview | bytes) -> bool:
        """A marker was read; True if it may be discarded."""
        self._consume_aborted_txns_up_to(header[H_BASE_OFFSET] + header[H_LAST_OFFSET_DELTA])
        if header[H_RECORD_COUNT] == 0:
            return True  # an empty control batch: its transaction was cleaned already
        producer_id = header[H_PRODUCER_ID]
        for record in RecordBatch(data, 0).records():
            control_type = ControlRecordType.parse(record.key)
            if control_type is ControlRecordType.ABORT:
                ongoing = self._ongoing_aborted.pop(producer_id, None)
                if ongoing is not None and ongoing.last_observed_batch_offset is not None:
                    # data of the transaction is still in the log: keep marker and entry
                    if self.cleaned_index is not None:
                        self.cleaned_index.append(ongoing.aborted_txn)
                    return False
                return True
            if control_type is ControlRecordType.COMMIT:
                seen = producer_id in self._ongoing_committed
                self._ongoing_committed.discard(producer_id)
                return not seen
            return False
        return True

    def on_batch_read(self, header: Sequence[int]) -> bool:
        """A data batch was read; True if it belongs to an aborted transaction."""
        last_offset = header[H_BASE_OFFSET] + header[H_LAST_OFFSET_DELTA]
        self._consume_aborted_txns_up_to(last_offset)
        if not header[H_ATTRIBUTES] & TRANSACTIONAL_MASK:
            return False
        producer_id = header[H_PRODUCER_ID]
        ongoing = self._ongoing_aborted.get(producer_id)
        if ongoing is not None:
            ongoing.last_observed_batch_offset = last_offset
            return True
        self._ongoing_committed.add(producer_id)
        return False
