"""How the message browser shows keys, values and headers: text, pretty JSON, or hex.

Bytes are never put into a page as they are: they become a str (UTF-8 text with any
control character written as an escape, JSON re-indented, or hex) that the templates
then HTML-escape, so a binary or hostile value cannot break or script the page.
"""

from __future__ import annotations

import enum
import json
from dataclasses import dataclass

# Shown bytes per field, so one large value does not make a page of megabytes.
MAX_SHOWN_BYTES = 64 * 1024


class MessageFormat(enum.Enum):
    """How to show a key or value; AUTO picks JSON, then text, then hex."""

    AUTO = "auto"
    TEXT = "text"
    JSON = "json"
    HEX = "hex"

    @classmethod
    def parse(cls, value: str | None) -> MessageFormat:
        """The format named by a `format=` query parameter (AUTO when absent)."""
        if not value:
            return cls.AUTO
        try:
            return cls(value.lower())
        except ValueError:
            names = ", ".join(f.value for f in cls)
            raise ValueError(f"Unknown format {value!r}: use one of {names}.") from None


@dataclass(frozen=True)
class ShownBytes:
    """A key, value or header value as shown: `format` is the one actually used (a value
    asked for as JSON that is not JSON falls back to text or hex, and says so)."""

    text: str | None
    format: str
    size: int
    truncated: bool = False
    note: str | None = None

    def as_json(self) -> dict[str, object]:
        return {
            "text": self.text,
            "format": self.format,
            "size": self.size,
            "truncated": self.truncated,
            "note": self.note,
        }


def to_hex(data: bytes) -> str:
    """Bytes as hex pairs, 16 to a line, with the offset of each line."""
    lines = []
    for start in range(0, len(data), 16):
        chunk = data[start : start + 16]
        lines.append(f"{start:08x}  {chunk.hex(' ')}")
    return "\n".join(lines)


_CONTROL = {c: f"\\x{c:02x}" for c in range(32) if c not in (9, 10, 13)}
_CONTROL[0x7F] = "\\x7f"


def to_text(data: bytes) -> str | None:
    """The bytes as UTF-8 text with control characters escaped; None if not UTF-8."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return text.translate(_CONTROL)


def pretty_json(data: bytes) -> str | None:
    """The bytes re-indented if they are one JSON document (object or array); else None."""
    stripped = data.strip()
    if not stripped or stripped[:1] not in (b"{", b"["):
        return None
    try:
        parsed = json.loads(stripped)
    except ValueError:  # also UnicodeDecodeError
        return None
    return json.dumps(parsed, indent=2, ensure_ascii=False)


def show_bytes(data: bytes | None, fmt: MessageFormat = MessageFormat.AUTO) -> ShownBytes:
    """`data` as the browser shows it in format `fmt`."""
    if data is None:
        return ShownBytes(None, "null", 0)
    size = len(data)
    truncated = size > MAX_SHOWN_BYTES
    shown = data[:MAX_SHOWN_BYTES]
    if fmt is MessageFormat.HEX:
        return ShownBytes(to_hex(shown), "hex", size, truncated)
    note = None
    if fmt in (MessageFormat.AUTO, MessageFormat.JSON) and not truncated:
        pretty = pretty_json(shown)
        if pretty is not None:
            return ShownBytes(pretty, "json", size)
        if fmt is MessageFormat.JSON:
            note = "not JSON"
    text = to_text(shown)
    if text is not None:
        return ShownBytes(text, "text", size, truncated, note)
    note = "not UTF-8 text" if fmt is MessageFormat.TEXT else note
    return ShownBytes(to_hex(shown), "hex", size, truncated, note)
