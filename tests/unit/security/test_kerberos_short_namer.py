"""KerberosShortNamer on Kafka's own examples (KerberosNameTest and the security docs)."""

from __future__ import annotations

import pytest

from kafpy.common.errors import InvalidConfigurationError
from kafpy.security.kerberos_short_namer import (
    BadFormatString,
    KerberosName,
    KerberosShortNamer,
    NoMatchingRule,
)


def short(rules: list[str], principal: str, realm: str = "REALM.COM") -> str:
    return KerberosShortNamer.from_rules(realm, rules).short_name(KerberosName.parse(principal))


def test_parse() -> None:
    name = KerberosName.parse("App.service-name/example.com@REALM.COM")
    assert (name.service_name, name.host_name, name.realm) == (
        "App.service-name", "example.com", "REALM.COM",
    )  # fmt: skip
    assert KerberosName.parse("alice@REALM.COM") == KerberosName("alice", None, "REALM.COM")
    assert KerberosName.parse("alice") == KerberosName("alice")
    assert str(KerberosName.parse("user/host@REALM.COM")) == "user/host@REALM.COM"
    with pytest.raises(ValueError, match="Malformed Kerberos name: a/b/c@R"):
        KerberosName.parse("a/b/c@R")


def test_rules_with_substitution() -> None:
    rules = ["RULE:[1:$1](App\\..*)s/App\\.(.*)/$1/g", "RULE:[2:$1](App\\..*)s/App\\.(.*)/$1/g",
             "DEFAULT"]  # fmt: skip
    assert short(rules, "App.service-name/example.com@REALM.COM") == "service-name"
    assert short(rules, "App.service-name@REALM.COM") == "service-name"
    assert short(rules, "user/host@REALM.COM") == "user"


@pytest.mark.parametrize(
    ("case", "expected"),
    [("L", ["user", "test", "xyz_user_xyz", "service-name", "user"]),
     ("U", ["USER", "TEST", "XYZ_USER_XYZ", "SERVICE-NAME", "USER"])],
)  # fmt: skip
def test_lower_and_upper_case(case: str, expected: list[str]) -> None:
    rules = [f"RULE:[1:$1]/{case}", f"RULE:[2:$1](Test.*)s/ABC///{case}",
             f"RULE:[2:$1](ABC.*)s/ABC/XYZ/g/{case}", f"RULE:[2:$1](App\\..*)s/App\\.(.*)/$1/g/{case}",
             f"RULE:[2:$1]/{case}", "DEFAULT"]  # fmt: skip
    names = ["User@REALM.COM", "TestABC/host@FOO.COM", "ABC_User_ABC/host@FOO.COM",
             "App.SERVICE-name/example.com@REALM.COM", "User/root@REALM.COM"]  # fmt: skip
    assert [short(rules, n) for n in names] == expected


def test_the_documented_example_strips_the_realm() -> None:
    rules = ["RULE:[1:$1@$0](.*@MYDOMAIN.COM)s/@.*//", "DEFAULT"]
    assert short(rules, "user@MYDOMAIN.COM", realm="OTHER.COM") == "user"
    assert short(rules, "user@OTHER.COM", realm="OTHER.COM") == "user"


def test_default_maps_only_the_default_realm() -> None:
    assert short(["DEFAULT"], "kafka/broker1@REALM.COM") == "kafka"
    assert short(["DEFAULT"], "plain") == "plain"  # already simple
    with pytest.raises(
        NoMatchingRule, match=r"No rules apply to alice@FOREIGN.COM, rules \[DEFAULT\]"
    ):
        short(["DEFAULT"], "alice@FOREIGN.COM")


def test_a_non_simple_result_and_a_bad_format_fail() -> None:
    with pytest.raises(NoMatchingRule, match="Non-simple name alice@REALM.COM after auth_to_local"):
        short(["RULE:[1:$1@$0]"], "alice@REALM.COM")
    with pytest.raises(
        BadFormatString, match="index 2 from \\$2 is outside of the valid range 0 to 1"
    ):
        short(["RULE:[1:$2]"], "alice@REALM.COM")


@pytest.mark.parametrize(
    "rule",
    ["default", "DEFAUL", "DEFAULT/L", "DEFAULT/g", "rule:[1:$1]", "rule:[1:$1]/L/U",
     "rule:[1:$1]/U/L", "rule:[1:$1]/LU", "RULE:[1:$1/L", "RULE:[1:$1]/l",
     "RULE:[2:$1](ABC.*)s/ABC/XYZ/L/g", "RULE:[1:$1](a[)"],
)  # fmt: skip
def test_invalid_rules_are_refused_naming_the_rule(rule: str) -> None:
    with pytest.raises(InvalidConfigurationError, match="sasl.kerberos.principal.to.local.rules"):
        KerberosShortNamer.from_rules("REALM.COM", [rule])


def test_str_shows_the_rules() -> None:
    namer = KerberosShortNamer.from_rules(
        "R", ["RULE:[2:$1](App\\..*)s/App\\.(.*)/$1/g/L", "DEFAULT"]
    )
    assert str(namer) == (
        "KerberosShortNamer(principalToLocalRules = [RULE:[2:$1](App\\..*)s/App\\.(.*)/$1/g/L, DEFAULT])"
    )
