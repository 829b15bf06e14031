"""SchemaRegistryClient's own checks; its requests are tested against a real
`kafpy schema-registry` in tests/integration/test_console_tools_schema_registry.py."""

from __future__ import annotations

import pytest

from kafpy.client.schema_registry_client import SchemaRegistryClient, SchemaRegistryClientError


@pytest.mark.parametrize("url", ["", "localhost:8081", "ftp://x"])
def test_a_url_that_is_not_http_is_refused(url: str) -> None:
    with pytest.raises(SchemaRegistryClientError, match="is not a registry URL"):
        SchemaRegistryClient(url)


def test_every_url_is_tried_and_named_when_none_answers() -> None:
    client = SchemaRegistryClient("http://127.0.0.1:1, http://127.0.0.1:2/", timeout_s=2)
    assert client.urls == ["http://127.0.0.1:1", "http://127.0.0.1:2"]
    with pytest.raises(SchemaRegistryClientError) as error:
        client.schema_by_id(1)
    assert error.value.error_code is None
    assert "http://127.0.0.1:1 (" in str(error.value) and "http://127.0.0.1:2 (" in str(error.value)
