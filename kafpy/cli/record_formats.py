"""`--key-format` and `--value-format` of `kafpy console-consumer` and
`kafpy console-producer`: keys and values in Confluent's framing, their schemas in a
schema registry (`--property schema.registry.url=URL`), as Confluent's
kafka-avro-console-consumer/-producer and kafka-json-schema-console-* read and write them.

`string` (the default) leaves the bytes as they are. `avro` and `json-schema` need the
extra `schema-registry`, refused by name when it is missing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from kafpy.cli.command_line_utils import OneLineError
from kafpy.common.extras import MissingExtraError, require_extra

if TYPE_CHECKING:
    from kafpy.client.schema_registry_client import SchemaRegistryClient
    from kafpy.client.schema_serde import SchemaFormat

FORMATS = ("string", "avro", "json-schema")
SCHEMA_REGISTRY_URL = "schema.registry.url"


def schema_format(name: str | None) -> SchemaFormat | None:
    """The format named on the command line; None for `string` (plain bytes)."""
    if name is None or name == "string":
        return None
    try:
        require_extra("schema-registry", f"--key-format/--value-format {name}")
    except MissingExtraError as e:
        raise OneLineError(str(e)) from None
    from kafpy.client.schema_serde import SchemaFormat

    return SchemaFormat(name)


def registry_client(props: Mapping[str, str], help_hint: str) -> SchemaRegistryClient:
    """The schema registry client at `--property schema.registry.url=URL` (required)."""
    from kafpy.client.schema_registry_client import (
        SchemaRegistryClient,
        SchemaRegistryClientError,
    )

    url = props.get(SCHEMA_REGISTRY_URL)
    if not url:
        raise OneLineError(
            "--key-format/--value-format avro or json-schema needs "
            f"--property {SCHEMA_REGISTRY_URL}=http://host:port {help_hint}"
        )
    try:
        return SchemaRegistryClient(url)
    except SchemaRegistryClientError as e:
        raise OneLineError(f"{e} {help_hint}") from None
