"""Tests of Progress: plain lines off a terminal, a tqdm bar on one."""

from __future__ import annotations

import io

from kafpy.cli.progress import Progress


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_plain_lines_every_interval_and_at_the_end() -> None:
    out = io.StringIO()
    p = Progress("Sent", 1000, stream=out, interval_s=0.0)
    p.update(250, 10)
    p.update(250, 10)
    p.close()
    assert out.getvalue().splitlines() == [
        "Sent: 10 records, 250 B of 1000 B (25%)",
        "Sent: 20 records, 500 B of 1000 B (50%)",
        "Sent: 20 records, 500 B of 1000 B (50%)",
    ]


def test_no_line_before_the_interval_and_an_unknown_total() -> None:
    out = io.StringIO()
    p = Progress("Produced", None, "records", stream=out, interval_s=3600)
    p.update(5)
    assert out.getvalue() == ""
    p.close()
    assert out.getvalue() == "Produced: 5 records\n"


def test_a_terminal_gets_a_bar_redrawn_in_place() -> None:
    out = Terminal()
    p = Progress("Sent", 1000, stream=out)
    p.update(500)
    p.close()
    text = out.getvalue()
    assert "\r" in text
    assert "Sent" in text and "500" in text
    assert "B of" not in text  # no plain line
