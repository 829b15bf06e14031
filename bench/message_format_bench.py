"""Appends to logs of message format v0/v1: what the conversion costs, and how much of it
stays on the event loop.

    python bench/message_format_bench.py [--reps 5]

For a produce request of one v2 batch (1,000 records of 1 KiB; 10,000 of 100 bytes,
uncompressed and gzip) it times, in milliseconds (best of --reps):
- convert: `to_message_set`, the LogValidator's conversion to message format v1, which
  the broker runs in a thread for appends over 64 KiB;
- move: `ConvertedMessageSet.moved_to`, what the append then does under the log's lock
  on the event loop (the offsets of the messages, or of the wrappers, rewritten);
- append v1 / append v2: `Log.append_as_leader` of the batch to a v1 log with the
  conversion done ahead, and to a v2 log, for comparison.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import timeit
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kafpy.common.scheduler import MockScheduler  # noqa: E402
from kafpy.common.time import MockTime  # noqa: E402
from kafpy.records import CompressionType, MemoryRecords, build_batch  # noqa: E402
from kafpy.records.legacy_record import to_message_set  # noqa: E402
from kafpy.storage.log import Log  # noqa: E402
from kafpy.storage.log_config import LogConfig  # noqa: E402

CASES = [(1000, 1024, CompressionType.NONE), (10_000, 100, CompressionType.NONE),
         (10_000, 100, CompressionType.GZIP)]  # fmt: skip


def best_ms(fn: object, reps: int) -> float:
    return min(timeit.repeat(fn, number=1, repeat=reps)) * 1000  # type: ignore[arg-type]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args()
    time = MockTime(1_700_000_000_000)
    print(f"{'records':>8} {'bytes':>6} {'codec':>5} {'convert ms':>11} {'move ms':>8} "
          f"{'append v1 ms':>13} {'append v2 ms':>13}")  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        for n, size, codec in CASES:
            data = build_batch([(b"key", b"v" * size)] * n, timestamp=time.milliseconds(),
                               compression=codec)  # fmt: skip
            # compression.type=producer: the batch's own codec (None)
            converted = to_message_set(data, 1, None, None)
            convert = best_ms(lambda: to_message_set(data, 1, None, None), args.reps)  # noqa: B023
            move = best_ms(lambda: converted.moved_to(1_000_000), args.reps)  # noqa: B023
            appends = []
            for version in ("0.10.0", "2.8"):
                props = {"message.format.version": version, "segment.bytes": str(1 << 30),
                         "compression.type": "producer", "max.message.bytes": str(1 << 24)}  # fmt: skip
                log = Log(Path(tmp) / f"{version}-{n}-{codec.name}-0",
                          LogConfig.from_props(None, props), 0, 0, MockScheduler(time), time)  # fmt: skip

                ahead = converted if version == "0.10.0" else None

                def append(log: Log = log, data: bytes = data, ahead: object = ahead) -> None:
                    log.append_as_leader(MemoryRecords(bytearray(data), True, ahead), 0)  # type: ignore[arg-type]

                appends.append(best_ms(append, args.reps))
                log.close()
            print(f"{n:>8} {size:>6} {codec.name:>5} {convert:>11.1f} {move:>8.2f} "
                  f"{appends[0]:>13.2f} {appends[1]:>13.2f}")  # fmt: skip


if __name__ == "__main__":
    main()
