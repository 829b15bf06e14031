"""KerberosLogin: the Krb5LoginModule options a broker and a client need, refused by name
when missing (no KDC needed: only the JAAS text and the key table's readability)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafpy.common.errors import InvalidConfigurationError
from kafpy.security.jaas_config import parse_jaas_config
from kafpy.security.kerberos_login import KRB5_LOGIN_MODULE, KerberosLogin


def login(jaas: str, *, acceptor: bool, service: str | None = "kafka") -> KerberosLogin:
    return KerberosLogin.from_jaas(
        parse_jaas_config(jaas), key="k", configured_service_name=service, acceptor=acceptor
    )


@pytest.fixture
def keytab(tmp_path: Path) -> Path:
    path = tmp_path / "kafka.keytab"
    path.write_bytes(b"\x05\x02")
    return path


def test_a_broker_login(keytab: Path) -> None:
    jaas = (f'{KRB5_LOGIN_MODULE} required useKeyTab=true storeKey=true keyTab="{keytab}" '
            'principal="kafka/h@R";')  # fmt: skip
    assert login(jaas, acceptor=True) == KerberosLogin("kafka/h@R", keytab, "kafka")


def test_a_broker_needs_its_keys(keytab: Path) -> None:
    with pytest.raises(InvalidConfigurationError, match='needs storeKey=true, principal="..."'):
        login(f'{KRB5_LOGIN_MODULE} required useKeyTab=true keyTab="{keytab}";', acceptor=True)
    with pytest.raises(InvalidConfigurationError, match="The keyTab /no/such.keytab of k does not"):
        login(f'{KRB5_LOGIN_MODULE} required useKeyTab=true storeKey=true keyTab="/no/such.keytab" '
              'principal="kafka/h@R";', acceptor=True)  # fmt: skip
    with pytest.raises(InvalidConfigurationError, match=f"k has no {KRB5_LOGIN_MODULE} entry"):
        login('org.apache.kafka.common.security.plain.PlainLoginModule required username="a";',
              acceptor=True)  # fmt: skip


def test_the_service_name_comes_from_jaas_or_the_config() -> None:
    cache = f"{KRB5_LOGIN_MODULE} required useTicketCache=true"
    assert login(f"{cache};", acceptor=False).service_name == "kafka"
    assert login(f'{cache} serviceName="kafka";', acceptor=False, service=None).keytab is None
    with pytest.raises(InvalidConfigurationError, match="No serviceName defined in either JAAS"):
        login(f"{cache};", acceptor=False, service=None)
    with pytest.raises(InvalidConfigurationError, match="Conflicting serviceName values"):
        login(f'{cache} serviceName="other";', acceptor=False)


def test_a_client_keytab_login_needs_the_principal(keytab: Path) -> None:
    with pytest.raises(InvalidConfigurationError, match="useKeyTab=true but not both keyTab"):
        login(f'{KRB5_LOGIN_MODULE} required useKeyTab=true keyTab="{keytab}";', acceptor=False)
