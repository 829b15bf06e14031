"""sasl.jaas.config parsed as Kafka reads it."""

from __future__ import annotations

import pytest

from kafpy.common.errors import InvalidConfigurationError
from kafpy.security.jaas_config import (
    PLAIN_LOGIN_MODULE,
    login_credentials,
    parse_jaas_config,
    plain_users,
)


def test_plain_login_module_with_users() -> None:
    entries = parse_jaas_config(
        f'{PLAIN_LOGIN_MODULE} required username="admin" password="admin-secret" '
        'user_admin="admin-secret" user_alice="a;l=i ce";'
    )
    assert [e.login_module for e in entries] == [PLAIN_LOGIN_MODULE]
    assert entries[0].control_flag == "required"
    assert plain_users(entries) == {"admin": "admin-secret", "alice": "a;l=i ce"}
    assert login_credentials(entries) == ("admin", "admin-secret")


def test_bare_values_escapes_and_several_entries() -> None:
    entries = parse_jaas_config(
        'a.B optional k=v q="say \\"hi\\"";\n  c.D Sufficient username=u password=p ;'
    )
    assert entries[0].options == {"k": "v", "q": 'say "hi"'}
    assert entries[1].control_flag == "sufficient"
    assert login_credentials(entries) == ("u", "p")


@pytest.mark.parametrize(
    ("text", "why"),
    [
        (f"{PLAIN_LOGIN_MODULE} required username=admin", "must end with ';'"),
        (f"{PLAIN_LOGIN_MODULE} mandatory;", "'mandatory' is not a control flag"),
        (f"{PLAIN_LOGIN_MODULE} required username;", "expected key=value"),
        ("", "it holds no login module"),
    ],
)
def test_bad_config_names_the_key(text: str, why: str) -> None:
    with pytest.raises(InvalidConfigurationError) as e:
        parse_jaas_config(text, key="listener.name.sasl_plaintext.plain.sasl.jaas.config")
    assert "listener.name.sasl_plaintext.plain.sasl.jaas.config" in str(e.value)
    assert why in str(e.value)
