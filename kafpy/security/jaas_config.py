"""JaasConfig: the `sasl.jaas.config` value as Kafka reads it.

`<LoginModule class> <required|requisite|sufficient|optional> key="value" key2=value;`,
one or more entries each ended by `;`, values quoted or bare. PLAIN's broker users are the
`user_<name>="<password>"` options of PlainLoginModule; `username`/`password` are the
credentials this side logs in with (the broker's own, for inter-broker connections).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from kafpy.common.errors import InvalidConfigurationError

PLAIN_LOGIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM_LOGIN_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"

_FLAGS = ("required", "requisite", "sufficient", "optional")
_TOKEN = re.compile(r'\s*(?:"((?:[^"\\]|\\.)*)"|([^\s=;"]+)|(=)|(;))', re.S)


@dataclass(frozen=True)
class LoginModuleEntry:
    """One login module of a JAAS configuration and its options."""

    login_module: str
    control_flag: str
    options: dict[str, str] = field(default_factory=dict)


def parse_jaas_config(text: str, *, key: str = "sasl.jaas.config") -> list[LoginModuleEntry]:
    """The entries of a JAAS configuration; InvalidConfigurationError naming `key` and what
    is wrong."""

    def bad(why: str) -> InvalidConfigurationError:
        return InvalidConfigurationError(
            f"Invalid value for configuration {key}: {why} (expected e.g. "
            f'{PLAIN_LOGIN_MODULE} required username="admin" password="admin-secret";)'
        )

    tokens: list[tuple[str, str]] = []
    pos = 0
    text = text.strip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            raise bad(f"unexpected character at position {pos}")
        pos = m.end()
        if m.group(1) is not None:
            tokens.append(("quoted", re.sub(r"\\(.)", r"\1", m.group(1))))
        elif m.group(2) is not None:
            tokens.append(("word", m.group(2)))
        elif m.group(3) is not None:
            tokens.append(("=", "="))
        elif m.group(4) is not None:
            tokens.append((";", ";"))
        if text[pos:].strip() == "":
            break
    entries: list[LoginModuleEntry] = []
    i = 0
    while i < len(tokens):
        if i + 1 >= len(tokens) or tokens[i][0] != "word":
            raise bad("a login module class name must start each entry")
        module, flag = tokens[i][1], tokens[i + 1][1].lower()
        if flag not in _FLAGS:
            raise bad(f"'{tokens[i + 1][1]}' is not a control flag ({', '.join(_FLAGS)})")
        i += 2
        options: dict[str, str] = {}
        while i < len(tokens) and tokens[i][0] != ";":
            if i + 2 >= len(tokens) or tokens[i][0] != "word" or tokens[i + 1][0] != "=":
                raise bad(f"expected key=value after {module}")
            options[tokens[i][1]] = tokens[i + 2][1]
            i += 3
        if i >= len(tokens):
            raise bad("the entry must end with ';'")
        i += 1
        entries.append(LoginModuleEntry(module, flag, options))
    if not entries:
        raise bad("it holds no login module")
    return entries


def plain_users(entries: list[LoginModuleEntry]) -> dict[str, str]:
    """PlainLoginModule's `user_<name>` options: user name -> password."""
    users: dict[str, str] = {}
    for entry in entries:
        if entry.login_module == PLAIN_LOGIN_MODULE:
            for key, value in entry.options.items():
                if key.startswith("user_"):
                    users[key[len("user_") :]] = value
    return users


def login_credentials(entries: list[LoginModuleEntry]) -> tuple[str, str] | None:
    """The `username` and `password` options of the first entry that has both."""
    for entry in entries:
        if "username" in entry.options and "password" in entry.options:
            return entry.options["username"], entry.options["password"]
    return None
