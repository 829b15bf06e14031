"""ConfigCommand: describe and alter entity configs, as kafka-configs does with --zookeeper.

After Kafka's `kafka.admin.ConfigCommand`. kafpy supports the `topics` entity type: an
alter rewrites /config/topics/<t> with the final set of overrides and records a change
notification under /config/changes, which the brokers apply.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from kafpy.admin.admin_zk_client import AdminZkClient
from kafpy.common.errors import InvalidConfigurationError
from kafpy.metadata.kafka_zk_client import KafkaZkClient
from kafpy.metadata.zk_data import ConfigType

Out = Callable[[str], None]

SUPPORTED_ENTITY_TYPES = (ConfigType.TOPIC,)


class ConfigCommandError(Exception):
    """A command line that Kafka's ConfigCommand would refuse; the message says why."""


@dataclass
class ConfigCommandOptions:
    """The parsed options of `kafpy configs`."""

    zookeeper: str | None = None
    actions: Sequence[str] = ()
    entity_type: str | None = None
    entity_name: str | None = None
    add_config: str | None = None
    delete_config: Sequence[str] = field(default_factory=list)

    @property
    def action(self) -> str:
        return self.actions[0]

    def check_args(self) -> None:
        if len(self.actions) != 1:
            raise ConfigCommandError("Command must include exactly one action: --describe, --alter")
        if not self.zookeeper:
            raise ConfigCommandError('Missing required argument "[zookeeper]"')
        if not self.entity_type:
            raise ConfigCommandError('Missing required argument "[entity-type]"')
        if self.entity_type not in ConfigType.ALL:
            raise ConfigCommandError(
                f"Invalid entity type {self.entity_type}; --entity-type must be one of "
                f"{', '.join(ConfigType.ALL)}"
            )
        if self.entity_type not in SUPPORTED_ENTITY_TYPES:
            raise ConfigCommandError(
                f"Entity type '{self.entity_type}' is not supported by kafpy; use "
                f"--entity-type {ConfigType.TOPIC}"
            )
        if self.action == "describe" and (self.add_config or self.delete_config):
            option = "add-config" if self.add_config else "delete-config"
            raise ConfigCommandError(f'Option "[describe]" can\'t be used with option "[{option}]"')
        if self.action == "alter":
            if not self.entity_name:
                raise ConfigCommandError(
                    f"An entity name must be specified with --alter of {self.entity_type}"
                )
            if not self.add_config and not self.delete_config:
                raise ConfigCommandError(
                    "At least one of --add-config or --delete-config must be specified with --alter"
                )


def entity_description(entity_type: str, entity_name: str) -> str:
    """Kafka's way of naming an entity in messages: topic 't'."""
    type_name = {ConfigType.TOPIC: "topic", ConfigType.CLIENT: "client-id"}.get(
        entity_type, entity_type
    )
    if entity_type == ConfigType.USER:
        type_name = "user-principal"
    return f"{type_name} '{entity_name}'"


# commas and '=' inside [...] belong to a value: k1=v1,k2=[v1,v2,v2],k3=v3
_OUTSIDE_BRACKETS = r"(?=[^\]]*(?:\[|$))"


def parse_configs_to_be_added(add_config: str | None) -> dict[str, str]:
    props: dict[str, str] = {}
    if not add_config:
        return props
    for entry in re.split("," + _OUTSIDE_BRACKETS, add_config):
        parts = re.split(r"\s*=\s*" + _OUTSIDE_BRACKETS, entry)
        if len(parts) != 2 or not parts[0].strip():
            raise ConfigCommandError(
                f'Invalid entity config "{entry}": all configs to be added must be in the '
                'format "key=val".'
            )
        props[parts[0].strip()] = re.sub(r"\[?\]?", "", parts[1]).strip()
    return props


def parse_configs_to_be_deleted(delete_config: Sequence[str]) -> list[str]:
    names: list[str] = []
    for value in delete_config:
        names.extend(name.strip() for name in value.split(",") if name.strip())
    return names


async def alter_config(zk: KafkaZkClient, opts: ConfigCommandOptions, out: Out) -> None:
    assert opts.entity_type is not None and opts.entity_name is not None
    to_add = parse_configs_to_be_added(opts.add_config)
    to_delete = parse_configs_to_be_deleted(opts.delete_config)
    admin = AdminZkClient(zk)
    configs = await admin.fetch_entity_config(opts.entity_type, opts.entity_name)
    missing = [name for name in to_delete if name not in configs]
    if missing:
        raise InvalidConfigurationError(f"Invalid config(s): {','.join(missing)}")
    configs.update(to_add)
    for name in to_delete:
        configs.pop(name, None)
    await admin.change_configs(opts.entity_type, opts.entity_name, configs)
    entity = entity_description(opts.entity_type, opts.entity_name)
    out(f"Completed Updating config for entity: {entity}.")


async def describe_config(zk: KafkaZkClient, opts: ConfigCommandOptions, out: Out) -> None:
    assert opts.entity_type is not None
    if opts.entity_name:
        names = [opts.entity_name]
    else:
        names = sorted(await zk.get_all_entities_with_config(opts.entity_type))
    for name in names:
        configs = await zk.get_entity_configs(opts.entity_type, name)
        text = ",".join(f"{k}={v}" for k, v in configs.items())
        out(f"Configs for {entity_description(opts.entity_type, name)} are {text}")


async def run_config_command(zk: KafkaZkClient, opts: ConfigCommandOptions, out: Out) -> None:
    """Run the action of `opts` (check_args() first)."""
    if opts.action == "alter":
        await alter_config(zk, opts, out)
    else:
        await describe_config(zk, opts, out)
