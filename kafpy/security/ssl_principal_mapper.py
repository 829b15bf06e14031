"""SslPrincipalMapper: `ssl.principal.mapping.rules`, turning a TLS client certificate's
distinguished name into a principal name, as Kafka's SslPrincipalMapper does.

Rules are comma separated; each is `DEFAULT` (the whole DN) or
`RULE:pattern/replacement/[L|U]`: the first rule whose Java-style regular expression
matches the whole DN gives the name (the replacement may use `$1`-style group references;
`L` and `U` lower- or upper-case the result). No matching rule fails authentication.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kafpy.common.errors import InvalidConfigurationError
from kafpy.common.java_regex import java_replace

DEFAULT_SSL_PRINCIPAL_MAPPING_RULES = "DEFAULT"

_RULE = r"(DEFAULT)|RULE:((\\.|[^\\/])*)/((\\.|[^\\/])*)/([LU]?).*?|(.*?)"
_RULE_SPLITTER = re.compile(r"\s*(" + _RULE + r")\s*(,\s*|$)")
_RULE_PARSER = re.compile(_RULE)


class NoMatchingRule(Exception):  # noqa: N818 - Kafka's name
    """No rule of `ssl.principal.mapping.rules` applies to a distinguished name."""


@dataclass(frozen=True)
class _Rule:
    pattern: re.Pattern[str] | None  # None: DEFAULT
    replacement: str = ""
    to_lower: bool = False
    to_upper: bool = False

    def apply(self, dn: str) -> str | None:
        if self.pattern is None:
            return dn
        if self.pattern.fullmatch(dn) is None:
            return None
        # Java's String.replaceAll: every match replaced (a pattern that can match the
        # empty string matches again at the end, as in Java)
        result = java_replace(self.pattern, dn, self.replacement, every=True)
        if self.to_lower:
            return result.lower()
        if self.to_upper:
            return result.upper()
        return result

    def __str__(self) -> str:
        if self.pattern is None:
            return "DEFAULT"
        case = "/L" if self.to_lower else "/U" if self.to_upper else ""
        return f"RULE:{self.pattern.pattern}/{self.replacement}{case}"


class SslPrincipalMapper:
    """Maps a distinguished name (RFC 2253, `CN=alice,OU=eng,O=corp`) to a principal name
    through the rules of `ssl.principal.mapping.rules`.

    Raises InvalidConfigurationError for a rule that does not parse (naming it);
    `get_name` raises NoMatchingRule when no rule applies.
    """

    def __init__(self, rules: str | None = DEFAULT_SSL_PRINCIPAL_MAPPING_RULES) -> None:
        self.rules: list[_Rule] = _parse_rules(
            _split_rules(DEFAULT_SSL_PRINCIPAL_MAPPING_RULES if rules is None else rules)
        )

    @classmethod
    def from_rules(cls, rules: str | None) -> SslPrincipalMapper:
        return cls(rules)

    def get_name(self, distinguished_name: str) -> str:
        for rule in self.rules:
            name = rule.apply(distinguished_name)
            if name is not None:
                return name
        raise NoMatchingRule(
            f"No rules apply to {distinguished_name}, rules [{', '.join(map(str, self.rules))}]"
        )

    def __str__(self) -> str:
        return f"SslPrincipalMapper(rules = [{', '.join(map(str, self.rules))}])"


def _split_rules(rules: str) -> list[str]:
    return [m.group(1) for m in _RULE_SPLITTER.finditer(rules.strip())]


def _parse_rules(rules: list[str]) -> list[_Rule]:
    parsed: list[_Rule] = []
    for rule in rules:
        m = _RULE_PARSER.match(rule)
        if m is None or m.end() != len(rule):
            rest = rule if m is None else rule[m.end() :]
            raise InvalidConfigurationError(
                f"Invalid rule `{rule}` in ssl.principal.mapping.rules (unmatched: `{rest}`): "
                "each rule is DEFAULT or RULE:pattern/replacement/ with an optional L or U"
            )
        if m.group(1) is not None:
            parsed.append(_Rule(None))
        elif m.group(2) is not None:
            try:
                pattern = re.compile(m.group(2))
            except re.error as e:
                raise InvalidConfigurationError(
                    f"Invalid rule `{rule}` in ssl.principal.mapping.rules: the pattern "
                    f"{m.group(2)!r} is not a regular expression ({e})"
                ) from None
            case = m.group(6)
            parsed.append(_Rule(pattern, m.group(4), case == "L", case == "U"))
        # an empty rule is ignored, as in Kafka
    return parsed
