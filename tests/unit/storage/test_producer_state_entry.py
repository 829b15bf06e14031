"""ProducerStateEntry's sequence arithmetic: producers' sequences wrap at Int32.MAX."""

from __future__ import annotations

from kafpy.storage.producer_state_entry import INT32_MAX, decrement_sequence, increment_sequence


def test_sequences_wrap_at_int32_max() -> None:
    assert increment_sequence(5, 3) == 8
    assert increment_sequence(INT32_MAX, 1) == 0
    assert increment_sequence(INT32_MAX - 1, 3) == 1
    assert decrement_sequence(1, 3) == INT32_MAX - 1
    assert decrement_sequence(8, 3) == 5
