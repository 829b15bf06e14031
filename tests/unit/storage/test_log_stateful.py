"""A hypothesis state machine driving a Log against an in-memory model.

Operations: leader appends, reads from any offset, truncation, rolls, flushes and
restarts (a clean close + reopen, or a crash: files left untrimmed and a reopen that
recovers from a recovery point at or before the last flush). After every step the
log must hold exactly the model's records.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from kafpy.storage.log import Log
from kafpy.storage.log_config import LogConfig

from .segment_fixtures import T0, Clock, batch, records

CONFIG = LogConfig(
    segment_bytes=700, index_interval_bytes=60, segment_index_bytes=64, file_delete_delay_ms=10
)


class LogMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.tmp = Path(tempfile.mkdtemp(prefix="kafpy-logsm-"))
        self.clock = Clock()
        self.log = self.open(recovery_point=0, clean=True)
        # the model: batches as (base offset, values), in offset order
        self.batches: list[tuple[int, list[bytes]]] = []
        self.next_offset = 0
        self.ts = T0

    def open(self, recovery_point: int, clean: bool) -> Log:
        return Log(
            self.tmp / "t-0",
            CONFIG,
            0,
            recovery_point,
            self.clock.scheduler,
            self.clock.time,
            clean,
        )

    def teardown(self) -> None:
        self.log.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    @rule(values=st.lists(st.binary(min_size=0, max_size=60), min_size=1, max_size=5))
    def append(self, values: list[bytes]) -> None:
        self.ts += 1
        info = self.log.append_as_leader(records(batch(values, timestamp=self.ts)), leader_epoch=1)
        assert info.first_offset == self.next_offset
        self.batches.append((self.next_offset, values))
        self.next_offset += len(values)

    @rule(data=st.data())
    def read(self, data: st.DataObject) -> None:
        start = data.draw(st.integers(0, self.next_offset))
        max_length = data.draw(st.sampled_from([1, 100, 1 << 20]))
        got = self.log.read(start, max_length).records
        batches = list(got.batches_allow_partial())
        if start == self.next_offset:
            assert batches == []
            return
        assert batches, "a read below the log end must return at least one batch"
        expected = {o: v for base, vals in self.batches for o, v in enumerate(vals, base)}
        first = batches[0]
        assert first.base_offset <= start <= first.last_offset
        for b in batches:
            for r in b.records():
                assert expected[r.offset] == r.value

    @precondition(lambda self: self.next_offset > 0)
    @rule(data=st.data())
    def truncate(self, data: st.DataObject) -> None:
        target = data.draw(st.integers(0, self.next_offset))
        self.log.truncate_to(target)
        kept = [(b, v) for b, v in self.batches if b + len(v) - 1 < target]
        self.batches = kept
        self.next_offset = kept[-1][0] + len(kept[-1][1]) if kept else 0

    @rule()
    def roll(self) -> None:
        self.log.roll()

    @rule()
    def flush(self) -> None:
        self.log.flush()

    @rule(clean=st.booleans(), data=st.data())
    def restart(self, clean: bool, data: st.DataObject) -> None:
        recovery_point = data.draw(st.integers(0, self.log.recovery_point))
        if clean:
            self.log.close()
        else:
            for segment in self.log.log_segments():
                segment.close_handlers()  # a crash: indexes stay preallocated, nothing trimmed
        self.clock.time.advance(10)  # lets pending segment deletions run
        self.log = self.open(recovery_point, clean)

    @invariant()
    def matches_model(self) -> None:
        assert self.log.log_end_offset == self.next_offset
        offset = self.log.log_start_offset
        seen: list[tuple[int, bytes | None]] = []
        while offset < self.log.log_end_offset:
            got = self.log.read(offset, 1 << 20).records
            recs = [r for r in got.records() if r.offset >= offset]
            assert recs
            seen.extend((r.offset, r.value) for r in recs)
            offset = recs[-1].offset + 1
        assert seen == [(o, v) for base, vals in self.batches for o, v in enumerate(vals, base)]


LogMachine.TestCase.settings = settings(max_examples=40, stateful_step_count=25, deadline=None)
TestLogMachine = LogMachine.TestCase
