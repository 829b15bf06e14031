"""Optional parts refuse at once, naming the extra that installs them."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from kafpy.cli import main as cli_main
from kafpy.common import extras
from kafpy.common.errors import InvalidConfigurationError
from kafpy.common.extras import MissingExtraError, missing_modules, require_extra
from kafpy.server.kafka_config import KafkaConfig


@pytest.fixture
def console_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(extras.EXTRAS, "console", ("aiohttp", "kafpy_no_such_module"))
    monkeypatch.setitem(extras.EXTRAS, "metrics", ("kafpy_no_such_module",))


def test_every_extra_is_installed_in_the_development_venv() -> None:
    assert {extra: missing_modules(extra) for extra in extras.EXTRAS} == {
        extra: [] for extra in extras.EXTRAS
    }


def test_a_missing_module_names_the_extra(console_missing: None) -> None:
    assert missing_modules("console") == ["kafpy_no_such_module"]
    with pytest.raises(MissingExtraError) as missing:
        require_extra("console", "kafpy console")
    assert str(missing.value) == (
        "kafpy console needs `pip install 'kafpy[console]'` (not installed: kafpy_no_such_module)"
    )
    assert isinstance(missing.value, ImportError)


def test_the_cli_refuses_a_command_without_its_extra_in_one_line(console_missing: None) -> None:
    result = CliRunner().invoke(cli_main.main, ["console", "--bootstrap-server", "x:9092"])
    assert result.exit_code == 1
    assert "Error: kafpy console needs `pip install 'kafpy[console]'`" in result.output
    assert "Traceback" not in result.output
    listed = CliRunner().invoke(cli_main.main, ["--help"])
    assert listed.exit_code == 0 and "console" in listed.output


def test_a_broker_serving_metrics_without_the_extra_is_refused(console_missing: None) -> None:
    with pytest.raises(InvalidConfigurationError, match=r"kafpy\[metrics\]"):
        KafkaConfig({"kafpy.metrics.listener": "http://127.0.0.1:0"})
    KafkaConfig({"kafpy.metrics.listener": ""})  # no endpoint: no extra needed


def test_gssapi_without_the_kerberos_extra_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(extras.EXTRAS, "kerberos", ("kafpy_no_such_module",))
    with pytest.raises(InvalidConfigurationError, match=r"kafpy\[kerberos\]") as refused:
        KafkaConfig({
            "listeners": "PLAINTEXT://127.0.0.1:9092,SASL_PLAINTEXT://127.0.0.1:9093",
            "sasl.enabled.mechanisms": "GSSAPI",
        })  # fmt: skip
    assert str(refused.value).startswith(
        "SASL mechanism GSSAPI (sasl.enabled.mechanisms) needs `pip install 'kafpy[kerberos]'`"
    )


def test_the_schema_registry_without_its_extra_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(extras.EXTRAS, "schema-registry", ("aiohttp", "kafpy_no_such_module"))
    result = CliRunner().invoke(cli_main.main, ["schema-registry", "sr.properties"])
    assert result.exit_code == 1
    assert (
        "Error: kafpy schema-registry needs `pip install 'kafpy[schema-registry]'` "
        "(not installed: kafpy_no_such_module)"
    ) in result.output
