"""Java's regular-expression replacement syntax for Python's `re`, for the rule languages
Kafka borrows from Java (`ssl.principal.mapping.rules`,
`sasl.kerberos.principal.to.local.rules`): `$n` names a group and `\\x` is a literal x,
where Python's `re.sub` would read `\\1`."""

from __future__ import annotations

import re


def expand_java_replacement(replacement: str, match: re.Match[str]) -> str:
    """`replacement` for `match` as Java's Matcher.appendReplacement reads it: `$n` a group
    (as many digits as still name a group), `\\x` the literal x; a `$n` naming a group the
    pattern lacks is kept literally."""
    groups, out, i = match.re.groups, [], 0
    while i < len(replacement):
        c = replacement[i]
        if c == "\\" and i + 1 < len(replacement):
            out.append(replacement[i + 1])
            i += 2
            continue
        if c == "$" and i + 1 < len(replacement) and replacement[i + 1].isdigit():
            ref = int(replacement[i + 1])
            if ref <= groups:
                i += 2
                while (
                    i < len(replacement)
                    and replacement[i].isdigit()
                    and ref * 10 + int(replacement[i]) <= groups
                ):
                    ref = ref * 10 + int(replacement[i])
                    i += 1
                out.append(match.group(ref) or "")
                continue
        out.append(c)
        i += 1
    return "".join(out)


def java_replace(pattern: re.Pattern[str], base: str, replacement: str, *, every: bool) -> str:
    """Java's Matcher.replaceAll (`every`) or replaceFirst of `pattern` in `base`."""
    return pattern.sub(
        lambda m: expand_java_replacement(replacement, m), base, count=0 if every else 1
    )
