"""Java's replacement syntax: `$n` groups, `\\x` literals, replaceAll and replaceFirst."""

from __future__ import annotations

import re

from kafpy.common.java_regex import java_replace


def test_groups_and_escapes() -> None:
    pattern = re.compile(r"(\w+)@(\w+)")
    assert java_replace(pattern, "a@b c@d", "$2.$1", every=True) == "b.a d.c"
    assert java_replace(pattern, "a@b c@d", "$2.$1", every=False) == "b.a c@d"
    assert java_replace(pattern, "a@b", r"\$1", every=True) == "$1"
    # $3 names no group of this pattern: kept literally
    assert java_replace(pattern, "a@b", "$3", every=True) == "$3"


def test_multi_digit_group_numbers_take_as_many_digits_as_name_a_group() -> None:
    pattern = re.compile("(a)" * 11)
    assert java_replace(pattern, "a" * 11, "$11", every=True) == "a"
    assert java_replace(re.compile("(x)"), "x", "$10", every=True) == "x0"
