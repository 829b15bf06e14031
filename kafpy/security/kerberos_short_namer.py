"""KerberosShortNamer: `sasl.kerberos.principal.to.local.rules`, turning the Kerberos
principal a GSSAPI client authenticated as into the short name of its KafkaPrincipal, as
Kafka's KerberosShortNamer, KerberosRule and KerberosName do.

A principal is `primary[/instance]@REALM`. Rules are tried in order; the first that gives
a name wins:
- `DEFAULT`: the primary, when the realm is the default realm (krb5.conf's
  `default_realm`); `alice@EXAMPLE.COM` -> `alice`, `kafka/host@EXAMPLE.COM` -> `kafka`.
- `RULE:[n:format](regexp)s/pattern/replacement/g/L`: for a principal of n components,
  `format` builds a string from `$0` (the realm), `$1` and `$2` (the components); when it
  fully matches `regexp` (if given), the sed-like substitution (every match with `g`)
  gives the name, lower-cased with `/L` or upper-cased with `/U`. Patterns are Java
  regular expressions, replacements use `$1` for groups.

No matching rule, or a rule giving a name with `/` or `@`, fails authentication.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from kafpy.common.errors import InvalidConfigurationError
from kafpy.common.java_regex import java_replace

PRINCIPAL_TO_LOCAL_RULES_CONFIG = "sasl.kerberos.principal.to.local.rules"

_NAME_PARSER = re.compile(r"([^/@]*)(/([^/@]*))?@([^/@]*)")
_RULE_PARSER = re.compile(
    r"((DEFAULT)|((RULE:\[(\d*):([^\]]*)](\(([^)]*)\))?(s/([^/]*)/([^/]*)/(g)?)?/?(L|U)?)))"
)
_PARAMETER = re.compile(r"([^$]*)(\$(\d*))?")
_NON_SIMPLE = re.compile(r"[/@]")


class NoMatchingRule(Exception):  # noqa: N818 - Kafka's name
    """No rule of `sasl.kerberos.principal.to.local.rules` gives a short name for a
    principal (or a rule gives one with `/` or `@`)."""


class BadFormatString(Exception):  # noqa: N818 - Kafka's name
    """A rule's `[n:format]` refers to a component the principal does not have."""


@dataclass(frozen=True)
class KerberosName:
    """A Kerberos principal's parts: `service_name[/host_name]@realm`."""

    service_name: str
    host_name: str | None = None
    realm: str | None = None

    @classmethod
    def parse(cls, principal_name: str) -> KerberosName:
        """The parts of a principal of at most two components; a name without `@` is
        simple (no realm). ValueError for a malformed name with `@`."""
        m = _NAME_PARSER.fullmatch(principal_name)
        if m is None:
            if "@" in principal_name:
                raise ValueError(f"Malformed Kerberos name: {principal_name}")
            return cls(principal_name)
        return cls(m.group(1), m.group(3), m.group(4))

    def __str__(self) -> str:
        host = f"/{self.host_name}" if self.host_name is not None else ""
        realm = f"@{self.realm}" if self.realm is not None else ""
        return f"{self.service_name}{host}{realm}"


@dataclass(frozen=True)
class KerberosRule:
    """One rule: DEFAULT (`components` 0) or `RULE:[components:format](match)s/from/to/`."""

    default_realm: str
    is_default: bool = False
    components: int = 0
    format: str = ""
    match: re.Pattern[str] | None = None
    from_pattern: re.Pattern[str] | None = None
    to_pattern: str = ""
    repeat: bool = False
    to_lower: bool = False
    to_upper: bool = False

    def apply(self, params: list[str]) -> str | None:
        """The short name for `params` ([realm, component, ...]), or None when the rule
        does not apply. NoMatchingRule for a non-simple result, BadFormatString for a
        format naming a missing component."""
        result: str | None = None
        if self.is_default:
            if self.default_realm == params[0]:
                result = params[1]
        elif len(params) - 1 == self.components:
            base = _replace_parameters(self.format, params)
            if self.match is None or self.match.fullmatch(base):
                if self.from_pattern is None:
                    result = base
                else:
                    result = java_replace(
                        self.from_pattern, base, self.to_pattern, every=self.repeat
                    )
        if result is not None and _NON_SIMPLE.search(result):
            raise NoMatchingRule(f"Non-simple name {result} after auth_to_local rule {self}")
        if result is not None and self.to_lower:
            return result.lower()
        if result is not None and self.to_upper:
            return result.upper()
        return result

    def __str__(self) -> str:
        if self.is_default:
            return "DEFAULT"
        out = f"RULE:[{self.components}:{self.format}]"
        if self.match is not None:
            out += f"({self.match.pattern})"
        if self.from_pattern is not None:
            out += f"s/{self.from_pattern.pattern}/{self.to_pattern}/" + (
                "g" if self.repeat else ""
            )
        return out + ("/L" if self.to_lower else "/U" if self.to_upper else "")


class KerberosShortNamer:
    """Maps Kerberos principals to short names through `sasl.kerberos.principal.to.local.rules`.

    `from_rules` raises InvalidConfigurationError naming a rule that does not parse;
    `short_name` raises NoMatchingRule or BadFormatString when no name can be given.
    """

    def __init__(self, rules: list[KerberosRule]) -> None:
        self.rules = rules

    @classmethod
    def from_rules(cls, default_realm: str, rules: Iterable[str] | None) -> KerberosShortNamer:
        return cls(
            [_parse_rule(default_realm, r) for r in (["DEFAULT"] if rules is None else rules)]
        )

    def short_name(self, name: KerberosName) -> str:
        if name.host_name is None:
            if name.realm is None:
                return name.service_name  # already simple
            params = [name.realm, name.service_name]
        else:
            params = [name.realm or "", name.service_name, name.host_name]
        for rule in self.rules:
            result = rule.apply(params)
            if result is not None:
                return result
        raise NoMatchingRule(f"No rules apply to {name}, rules [{', '.join(map(str, self.rules))}]")

    def __str__(self) -> str:
        return f"KerberosShortNamer(principalToLocalRules = [{', '.join(map(str, self.rules))}])"


def _parse_rule(default_realm: str, rule: str) -> KerberosRule:
    def bad(why: str) -> InvalidConfigurationError:
        return InvalidConfigurationError(
            f"Invalid rule `{rule}` in {PRINCIPAL_TO_LOCAL_RULES_CONFIG}: {why}. Each rule is "
            "DEFAULT or RULE:[n:format](regexp)s/pattern/replacement/ with an optional g, "
            "then an optional /L or /U"
        )

    m = _RULE_PARSER.match(rule)
    if m is None:
        raise bad("it is neither DEFAULT nor RULE:[...]")
    if m.end() != len(rule):
        raise bad(f"unmatched substring `{rule[m.end() :]}`")
    if m.group(2) is not None:
        return KerberosRule(default_realm, is_default=True)
    if not m.group(5):
        raise bad("the number of components in [n:format] is missing")

    def compiled(pattern: str | None) -> re.Pattern[str] | None:
        try:
            return None if pattern is None else re.compile(pattern)
        except re.error as e:
            raise bad(f"{pattern!r} is not a regular expression ({e})") from None

    return KerberosRule(
        default_realm,
        components=int(m.group(5)),
        format=m.group(6),
        match=compiled(m.group(8)),
        from_pattern=compiled(m.group(10)),
        to_pattern=m.group(11) or "",
        repeat=m.group(12) == "g",
        to_lower=m.group(13) == "L",
        to_upper=m.group(13) == "U",
    )


def _replace_parameters(format: str, params: list[str]) -> str:
    """`format` with each `$n` replaced by params[n] (Kafka's replaceParameters)."""
    out: list[str] = []
    start = 0
    while start < len(format):
        m = _PARAMETER.match(format, start)
        assert m is not None  # the pattern matches the empty string
        out.append(m.group(1))
        number = m.group(3)
        if number is not None:
            if not number:
                raise BadFormatString(f"bad format in username mapping in {format}")
            n = int(number)
            if n >= len(params):
                raise BadFormatString(
                    f"index {n} from {format} is outside of the valid range 0 to {len(params) - 1}"
                )
            out.append(params[n])
        if m.end() == start:
            break
        start = m.end()
    return "".join(out)
