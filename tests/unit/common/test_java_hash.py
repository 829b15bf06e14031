from __future__ import annotations

import pytest

from kafpy.common.java_hash import java_string_hash


# Expected values printed by Java 17's String.hashCode.
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", 0),
        ("a", 97),
        ("hello", 99162322),
        ("Aa", 2112),
        ("BB", 2112),
        ("Hello, World!", 1498789909),
        # int32 overflow: the sum wraps past 2**31 (to Integer.MIN_VALUE for the last)
        ("__consumer_offsets", -970371369),
        ("the quick brown fox jumps over the lazy dog", -2082818701),
        ("polygenelubricants", -(2**31)),
        # non-ASCII: one UTF-16 code unit a character, a surrogate pair above U+FFFF
        ("\u00e9t\u00e9", 227742),
        ("caf\u00e9", 3045921),
        ("\u00fcber-topic-\u6f22\u5b57", 418383949),
        ("\U0001f600", 1772899),
    ],
)
def test_java_string_hash_matches_java(text: str, expected: int) -> None:
    assert java_string_hash(text) == expected
