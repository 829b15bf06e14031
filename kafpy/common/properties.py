"""Reading Java `.properties` files (server.properties), as java.util.Properties does.

Supports `key=value`, `key: value` and `key value`, `#`/`!` comments, line
continuations with a trailing backslash, and the usual escapes.
"""

from __future__ import annotations

from pathlib import Path

_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


class PropertiesError(ValueError):
    """A properties file could not be read; the message names the file and line."""


def _unescape(text: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text):
            n = text[i + 1]
            if n == "u" and i + 6 <= len(text):
                out.append(chr(int(text[i + 2 : i + 6], 16)))
                i += 6
                continue
            out.append(_ESCAPES.get(n, n))
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


def _split(line: str) -> tuple[str, str]:
    i = 0
    while i < len(line):
        c = line[i]
        if c == "\\":
            i += 2
            continue
        if c in "=: \t\f":
            break
        i += 1
    key = line[:i]
    rest = line[i:].lstrip(" \t\f")
    if rest[:1] in ("=", ":"):
        rest = rest[1:].lstrip(" \t\f")
    return _unescape(key), _unescape(rest)


def parse_properties(text: str, source: str = "<string>") -> dict[str, str]:
    """Parse the text of a properties file into an ordered dict of strings."""
    props: dict[str, str] = {}
    logical = ""
    start_line = 0
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.lstrip(" \t\f")
        if not logical and (not line or line[0] in "#!"):
            continue
        if not logical:
            start_line = lineno
        # an odd number of trailing backslashes continues the line
        stripped = line.rstrip("\r\n")
        trailing = len(stripped) - len(stripped.rstrip("\\"))
        if trailing % 2 == 1:
            logical += stripped[:-1]
            continue
        logical += stripped
        try:
            key, value = _split(logical)
        except ValueError as e:
            raise PropertiesError(f"{source}:{start_line}: cannot parse line: {e}") from e
        props[key] = value
        logical = ""
    if logical:
        key, value = _split(logical)
        props[key] = value
    return props


def load_properties(path: str | Path) -> dict[str, str]:
    """Read a properties file; a missing or unreadable file raises PropertiesError."""
    p = Path(path)
    try:
        text = p.read_text(encoding="latin-1")
    except OSError as e:
        raise PropertiesError(f"Cannot read properties file {p}: {e.strerror}") from e
    return parse_properties(text, str(p))
