"""Progress of long command-line work: a tqdm bar on a terminal, plain lines otherwise.

On a terminal the bar redraws itself in place on stderr; in a log or a pipe, where a bar
would be a mess of carriage returns, a plain line says how far the work has got every
few seconds and once at the end.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

from tqdm import tqdm

PLAIN_INTERVAL_S = 5.0


class Progress:
    """How far a piece of work of `total` units (bytes, records) has got.

    Parameters:
        description: what is being done, first on each line ("Sent").
        total: the units of the whole work, or None when unknown.
        unit: the unit's name ("B" scales to kB/MB on the bar).
        stream: where to write (stderr); a bar only when it is a terminal.
        interval_s: seconds between plain lines.
    """

    def __init__(
        self,
        description: str,
        total: int | None,
        unit: str = "B",
        *,
        stream: TextIO | None = None,
        interval_s: float = PLAIN_INTERVAL_S,
    ) -> None:
        self.description = description
        self.total = total
        self.unit = unit
        self.stream = stream if stream is not None else sys.stderr
        self.interval_s = interval_s
        self.done = 0
        self.items = 0
        self._last_line = time.monotonic()
        self._bar: tqdm[None] | None = None
        if self.stream.isatty():
            self._bar = tqdm(
                total=total, desc=description, unit=unit, unit_scale=unit == "B",
                file=self.stream, leave=True,
            )  # fmt: skip

    def update(self, units: int, items: int = 0) -> None:
        """`units` more of the work done (and `items` more records, shown on plain lines)."""
        self.done += units
        self.items += items
        if self._bar is not None:
            self._bar.update(units)
            return
        now = time.monotonic()
        if now - self._last_line >= self.interval_s:
            self._last_line = now
            self._line()

    def close(self) -> None:
        """The work is over: the bar's last state, or a last plain line."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None
            return
        self._line()

    def _line(self) -> None:
        done = f"{self.done} {self.unit}"
        if self.total:
            done += f" of {self.total} {self.unit} ({self.done * 100 // self.total}%)"
        records = f"{self.items} records, " if self.items else ""
        print(f"{self.description}: {records}{done}", file=self.stream, flush=True)
