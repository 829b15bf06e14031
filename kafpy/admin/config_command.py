"""ConfigCommand: describe and alter entity configs, as kafka-configs does.

After Kafka 2.8's `kafka.admin.ConfigCommand`, with its two backends:

- `--zookeeper`: the `topics` and `users` entity types, on the metadata store (users hold
  SCRAM credentials: `SCRAM-SHA-256=[iterations=8192,password=...]` is salted and stored
  as Kafka stores it). An alter rewrites
  /config/topics/<t> with the final set of overrides and records a change notification
  under /config/changes, which the brokers apply.
- `--bootstrap-server`: `topics` and `brokers` (a broker id, or `--entity-default` for the
  cluster-wide defaults) through DescribeConfigs and IncrementalAlterConfigs, and `users`
  through Describe/AlterUserScramCredentials; the brokers
  validate, store and apply the change. Output lines as kafka-configs.sh 2.8 prints them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from kafpy.admin.admin_zk_client import AdminZkClient
from kafpy.admin.scram_credentials import (
    credential_from_config_command,
    user_configs,
    write_user_configs,
)
from kafpy.client.admin_client import (
    AdminClient,
    ConfigEntry,
    ConfigResource,
)
from kafpy.common.client_quota_config import (
    CLIENT_ID_ENTITY_TYPE,
    IP_ENTITY_TYPE,
    IP_QUOTA_CONFIG_NAMES,
    QUOTA_CONFIG_NAMES,
    USER_ENTITY_TYPE,
    desanitize,
    is_valid_ip_entity,
    sanitize,
    validate_quota_configs,
)
from kafpy.common.errors import InvalidConfigurationError
from kafpy.metadata.kafka_zk_client import KafkaZkClient
from kafpy.metadata.zk_data import ConfigEntityName, ConfigType
from kafpy.protocol.config_resource import ConfigResourceType, ConfigSource
from kafpy.security.scram import MIN_ITERATIONS, ScramMechanism

Out = Callable[[str], None]

SUPPORTED_ENTITY_TYPES = (ConfigType.TOPIC, ConfigType.CLIENT, ConfigType.USER, ConfigType.IP)
SUPPORTED_BOOTSTRAP_ENTITY_TYPES = (
    ConfigType.TOPIC,
    ConfigType.BROKER,
    ConfigType.CLIENT,
    ConfigType.USER,
    ConfigType.IP,
)
BROKER_DEFAULT_ENTITY_NAME = ""  # Kafka's ConfigCommand.BrokerDefaultEntityName


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
    bootstrap_server: str | None = None
    entity_default: bool = False
    describe_all: bool = False

    @property
    def action(self) -> str:
        return self.actions[0]

    def check_args(self) -> None:
        if len(self.actions) != 1:
            raise ConfigCommandError("Command must include exactly one action: --describe, --alter")
        if bool(self.zookeeper) == bool(self.bootstrap_server):
            raise ConfigCommandError(
                "Only one of --bootstrap-server or --zookeeper must be specified"
            )
        if not self.entity_type:
            raise ConfigCommandError('Missing required argument "[entity-type]"')
        if self.entity_type not in ConfigType.ALL:
            raise ConfigCommandError(
                f"Invalid entity type {self.entity_type}; --entity-type must be one of "
                f"{', '.join(ConfigType.ALL)}"
            )
        supported = (
            SUPPORTED_BOOTSTRAP_ENTITY_TYPES if self.bootstrap_server else SUPPORTED_ENTITY_TYPES
        )
        if self.entity_type not in supported:
            raise ConfigCommandError(
                f"Entity type '{self.entity_type}' is not supported by kafpy with "
                f"--{'bootstrap-server' if self.bootstrap_server else 'zookeeper'}; use "
                f"--entity-type {' or '.join(supported)}"
            )
        if self.entity_default and self.entity_type == ConfigType.TOPIC:
            raise ConfigCommandError(
                "--entity-default is only valid with --entity-type brokers, users, clients or ips"
            )
        if self.entity_default and self.entity_name:
            raise ConfigCommandError("Only one of --entity-name or --entity-default may be given")
        if self.describe_all and self.action != "describe":
            raise ConfigCommandError('Option "[all]" can only be used with option "[describe]"')
        if (
            self.bootstrap_server
            and self.entity_type == ConfigType.BROKER
            and self.entity_name
            and not self.entity_name.isdigit()
        ):
            raise ConfigCommandError(
                "The entity name for brokers must be a valid integer broker id, but it is: "
                f"{self.entity_name}"
            )
        if (
            self.entity_type == ConfigType.IP
            and self.entity_name
            and self.entity_name != ConfigEntityName.DEFAULT
            and not is_valid_ip_entity(self.entity_name)
        ):
            raise ConfigCommandError(
                "The entity name for ips must be a valid IP or resolvable host, but it is: "
                f"{self.entity_name}"
            )
        if self.action == "describe" and (self.add_config or self.delete_config):
            option = "add-config" if self.add_config else "delete-config"
            raise ConfigCommandError(f'Option "[describe]" can\'t be used with option "[{option}]"')
        if self.action == "alter":
            if not self.entity_name and not self.entity_default:
                raise ConfigCommandError(
                    f"An entity name must be specified with --alter of {self.entity_type}"
                    if self.entity_type != ConfigType.BROKER
                    else "--entity-name or --entity-default must be specified with --alter of brokers"
                )
            if not self.add_config and not self.delete_config:
                raise ConfigCommandError(
                    "At least one of --add-config or --delete-config must be specified with --alter"
                )


def entity_description(entity_type: str, entity_name: str) -> str:
    """Kafka's way of naming an entity in messages: topic 't', user-principal 'alice',
    user-principal 'alice', client-id 'c1' (a user's client id: users/alice/clients/c1),
    default client-id (the <default> entity)."""
    if entity_type == ConfigType.USER and "/clients/" in entity_name:
        user, _, client = entity_name.partition("/clients/")
        return (
            f"{entity_description(ConfigType.USER, user)}, "
            f"{entity_description(ConfigType.CLIENT, client)}"
        )
    type_name = {ConfigType.TOPIC: "topic", ConfigType.CLIENT: "client-id"}.get(
        entity_type, entity_type
    )
    if entity_type == ConfigType.USER:
        type_name = "user-principal"
    if entity_name == ConfigEntityName.DEFAULT and entity_type in (
        ConfigType.USER,
        ConfigType.CLIENT,
        ConfigType.IP,
    ):
        return f"default {type_name}"
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


def _check_user_configs(names: Sequence[str], *, credentials: bool = True) -> None:
    """A user holds SCRAM credentials and client quotas; a user's client id quotas only."""
    known = [*QUOTA_CONFIG_NAMES, *(ScramMechanism.names() if credentials else ())]
    others = [n for n in names if n not in known]
    if others:
        raise InvalidConfigurationError(
            f"Invalid user config(s): {','.join(others)}; kafpy stores "
            + (
                f"SCRAM credentials for users ({', '.join(ScramMechanism.names())}), as "
                "SCRAM-SHA-256=[iterations=8192,password=<password>], and "
                if credentials
                else ""
            )
            + f"the quotas {', '.join(QUOTA_CONFIG_NAMES)}"
        )


def _split_user_configs(names: Sequence[str]) -> tuple[list[str], list[str]]:
    """(SCRAM mechanism names, quota names) of a user's config names."""
    scram = [n for n in names if n in ScramMechanism.names()]
    return scram, [n for n in names if n not in scram]


async def alter_user_config(zk: KafkaZkClient, opts: ConfigCommandOptions, out: Out) -> None:
    """Kafka's SCRAM preprocessing for users: each mechanism's [iterations=,password=]
    becomes a salted credential; then the user's node and a change notification."""
    assert opts.entity_name is not None
    to_add = parse_configs_to_be_added(opts.add_config)
    to_delete = parse_configs_to_be_deleted(opts.delete_config)
    user, sep, client = opts.entity_name.partition("/clients/")
    _check_user_configs([*to_add, *to_delete], credentials=not sep)
    if sep:  # a user's client id: quotas only, at users/<user>/clients/<client-id>
        node = f"{sanitize(user)}/clients/{sanitize(client)}"
        configs = await zk.get_entity_configs(ConfigType.USER, node)
    else:
        configs = await user_configs(zk, opts.entity_name)
    missing = [name for name in to_delete if name not in configs]
    if missing:
        raise InvalidConfigurationError(f"Invalid config(s): {','.join(missing)}")
    for name, value in to_add.items():
        if name in QUOTA_CONFIG_NAMES:
            configs[name] = value
        else:
            configs[name] = credential_from_config_command(name, value)
    for name in to_delete:
        configs.pop(name, None)
    try:
        validate_quota_configs(configs)
    except ValueError as e:
        raise InvalidConfigurationError(str(e)) from None
    if sep:
        await AdminZkClient(zk).change_quota_config(ConfigType.USER, node, configs)
    else:
        await write_user_configs(zk, opts.entity_name, configs)
    entity = entity_description(ConfigType.USER, opts.entity_name)
    out(f"Completed Updating config for entity: {entity}.")


async def alter_config(zk: KafkaZkClient, opts: ConfigCommandOptions, out: Out) -> None:
    assert opts.entity_type is not None and opts.entity_name is not None
    if opts.entity_type == ConfigType.USER:
        await alter_user_config(zk, opts, out)
        return
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
        if opts.entity_type == ConfigType.USER:
            names = [desanitize(n) for n in names]
    for name in names:
        node = sanitize(name) if opts.entity_type == ConfigType.USER else name
        configs = await zk.get_entity_configs(opts.entity_type, node)
        text = ",".join(f"{k}={v}" for k, v in configs.items())
        out(f"Configs for {entity_description(opts.entity_type, name)} are {text}")


async def run_config_command(zk: KafkaZkClient, opts: ConfigCommandOptions, out: Out) -> None:
    """Run the action of `opts` (check_args() first)."""
    if opts.action == "alter":
        await alter_config(zk, opts, out)
    else:
        await describe_config(zk, opts, out)


# -- the --bootstrap-server backend (Kafka's alterConfig / describeConfig over an Admin) ---------


def _resource(entity_type: str, entity_name: str) -> ConfigResource:
    if entity_type == ConfigType.TOPIC:
        return ConfigResource.topic(entity_name)
    return ConfigResource(ConfigResourceType.BROKER, entity_name)


_DYNAMIC_SOURCE = {
    ConfigType.TOPIC: ConfigSource.DYNAMIC_TOPIC_CONFIG,
    ConfigType.BROKER: ConfigSource.DYNAMIC_BROKER_CONFIG,
}


async def get_resource_config(
    admin: AdminClient, entity_type: str, entity_name: str, describe_all: bool
) -> list[ConfigEntry]:
    """Kafka's getResourceConfig: the entity's configs with synonyms, only those set on
    the entity itself (its dynamic source) unless `describe_all`."""
    resource = _resource(entity_type, entity_name)
    entries = (await admin.describe_configs([resource], include_synonyms=True))[resource]
    if describe_all:
        return entries
    if entity_type == ConfigType.BROKER and entity_name == BROKER_DEFAULT_ENTITY_NAME:
        source = ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG
    else:
        source = _DYNAMIC_SOURCE[entity_type]
    return [e for e in entries if e.source is source]


def _value(value: str | None) -> str:
    return "null" if value is None else value


async def describe_config_via_admin(
    admin: AdminClient, opts: ConfigCommandOptions, out: Out
) -> None:
    """Kafka's describeResourceConfig: a header line per entity, then
    `  key=value sensitive=false synonyms={SOURCE:key=value, ...}` per config."""
    assert opts.entity_type is not None
    entity_type = opts.entity_type
    if entity_type == ConfigType.USER:
        await describe_user_config_via_admin(admin, opts, out)
        return
    if opts.entity_default:
        entities = [BROKER_DEFAULT_ENTITY_NAME]
    elif opts.entity_name:
        entities = [opts.entity_name]
    elif entity_type == ConfigType.TOPIC:
        entities = await admin.list_topics(include_internal=True)
    else:
        nodes, _ = await admin.describe_cluster()
        entities = [str(n.node_id) for n in nodes] + [BROKER_DEFAULT_ENTITY_NAME]
    for entity in entities:
        if entity == BROKER_DEFAULT_ENTITY_NAME and entity_type == ConfigType.BROKER:
            out(f"Default configs for {entity_type} in the cluster are:")
        else:
            source = "All" if opts.describe_all else "Dynamic"
            out(f"{source} configs for {entity_type[:-1]} {entity} are:")
        for e in await get_resource_config(admin, entity_type, entity, opts.describe_all):
            synonyms = ", ".join(f"{s.source.name}:{s.name}={_value(s.value)}" for s in e.synonyms)
            sensitive = "true" if e.is_sensitive else "false"
            out(f"  {e.name}={_value(e.value)} sensitive={sensitive} synonyms={{{synonyms}}}")


async def alter_config_via_admin(admin: AdminClient, opts: ConfigCommandOptions, out: Out) -> None:
    """Kafka's alterConfig: deleting a key not set on the entity is refused; then one
    IncrementalAlterConfigs of SETs and DELETEs."""
    assert opts.entity_type is not None
    entity_type = opts.entity_type
    if entity_type == ConfigType.USER:
        await alter_user_config_via_admin(admin, opts, out)
        return
    entity = BROKER_DEFAULT_ENTITY_NAME if opts.entity_default else str(opts.entity_name)
    to_add = parse_configs_to_be_added(opts.add_config)
    to_delete = parse_configs_to_be_deleted(opts.delete_config)
    old = {e.name for e in await get_resource_config(admin, entity_type, entity, False)}
    missing = [name for name in to_delete if name not in old]
    if missing:
        raise InvalidConfigurationError(f"Invalid config(s): {','.join(missing)}")
    await admin.alter_configs(_resource(entity_type, entity), to_add, to_delete)
    if entity:
        out(f"Completed updating config for {entity_type[:-1]} {entity}.")
    else:
        out(f"Completed updating default config for {entity_type} in the cluster.")


async def describe_user_config_via_admin(
    admin: AdminClient, opts: ConfigCommandOptions, out: Out
) -> None:
    """DescribeUserScramCredentials: one line per user with its mechanisms and iterations."""
    users = [opts.entity_name] if opts.entity_name else None
    for user, infos in (await admin.describe_user_scram_credentials(users)).items():
        text = ", ".join(f"{m}=iterations={i}" for m, i in infos)
        out(f"SCRAM credential configs for {entity_description(ConfigType.USER, user)} are {text}")


async def alter_user_config_via_admin(
    admin: AdminClient, opts: ConfigCommandOptions, out: Out
) -> None:
    """AlterUserScramCredentials: the password is salted and hashed by the client."""
    user = str(opts.entity_name)
    to_add = parse_configs_to_be_added(opts.add_config)
    to_delete = parse_configs_to_be_deleted(opts.delete_config)
    _check_user_configs([*to_add, *to_delete])
    upsertions = []
    for mechanism, value in to_add.items():
        options = dict(
            (k.strip(), v.strip()) for k, _, v in (p.partition("=") for p in value.split(","))
        )
        if not options.get("password"):
            raise InvalidConfigurationError(
                f"Invalid credential property {mechanism}: password is required, as "
                f"{mechanism}=[iterations=8192,password=<password>]"
            )
        iterations = options.get("iterations", str(MIN_ITERATIONS))
        if not iterations.isdigit():
            raise InvalidConfigurationError(
                f"Invalid credential property {mechanism}: iterations={iterations} is not a number"
            )
        upsertions.append((user, mechanism, int(iterations), options["password"]))
    await admin.alter_user_scram_credentials(upsertions, [(user, m) for m in to_delete])
    out(f"Completed updating config for user {user}.")


async def run_config_command_via_admin(
    admin: AdminClient, opts: ConfigCommandOptions, out: Out
) -> None:
    """Run the action of `opts` over --bootstrap-server (check_args() first)."""
    if opts.entity_type == ConfigType.CLIENT or (
        opts.entity_type == ConfigType.USER and "/clients/" in (opts.entity_name or "")
    ):
        await run_quota_command_via_admin(admin, opts, out)
        return
    if opts.entity_type == ConfigType.IP:
        await run_ip_command_via_admin(admin, opts, out)
        return
    if opts.entity_type == ConfigType.USER:
        await run_user_command_via_admin(admin, opts, out)
        return
    if opts.action == "alter":
        await alter_config_via_admin(admin, opts, out)
    else:
        await describe_config_via_admin(admin, opts, out)


# -- client quotas over --bootstrap-server (Kafka's alterQuotaConfigs / describeQuotaConfigs) ---


def _quota_entity(entity_type: str, entity_name: str | None) -> dict[str, str | None]:
    """The client quota API's entity for a --entity-type/--entity-name: `users` with
    `alice/clients/c1` is a user's client id; `<default>` is the default (None)."""

    def name(text: str) -> str | None:
        return None if text == ConfigEntityName.DEFAULT else text

    if entity_name is None:
        return {}
    if entity_type == ConfigType.CLIENT:
        return {CLIENT_ID_ENTITY_TYPE: name(entity_name)}
    if entity_type == ConfigType.IP:
        return {IP_ENTITY_TYPE: name(entity_name)}
    user, sep, client = entity_name.partition("/clients/")
    entity: dict[str, str | None] = {USER_ENTITY_TYPE: name(user)}
    if sep:
        entity[CLIENT_ID_ENTITY_TYPE] = name(client)
    return entity


def _quota_entity_description(entity: Mapping[str, str | None]) -> str:
    parts = []
    for kind, label in (
        (USER_ENTITY_TYPE, "user-principal"),
        (CLIENT_ID_ENTITY_TYPE, "client-id"),
        (IP_ENTITY_TYPE, "ip"),
    ):
        if kind in entity:
            value = entity[kind]
            parts.append(f"the default {label}" if value is None else f"{label} '{value}'")
    return ", ".join(parts)


async def run_user_command_via_admin(
    admin: AdminClient, opts: ConfigCommandOptions, out: Out
) -> None:
    """A user over --bootstrap-server, as Kafka 2.8's ConfigCommand: its quota configs
    through the client quota APIs, its SCRAM credentials through the SCRAM APIs."""
    if opts.action == "describe":
        await run_quota_command_via_admin(admin, opts, out)
        await describe_user_config_via_admin(admin, opts, out)
        return
    to_add = parse_configs_to_be_added(opts.add_config)
    to_delete = parse_configs_to_be_deleted(opts.delete_config)
    _check_user_configs([*to_add, *to_delete])
    scram_add, quota_add = _split_user_configs(list(to_add))
    scram_delete, quota_delete = _split_user_configs(to_delete)
    if quota_add or quota_delete:
        quota_opts = replace(
            opts,
            add_config=",".join(f"{k}={to_add[k]}" for k in quota_add) or None,
            delete_config=quota_delete,
        )
        await run_quota_command_via_admin(admin, quota_opts, lambda _line: None)
    if scram_add or scram_delete:
        scram_opts = replace(
            opts,
            add_config=",".join(f"{k}=[{to_add[k]}]" for k in scram_add) or None,
            delete_config=scram_delete,
        )
        await alter_user_config_via_admin(admin, scram_opts, lambda _line: None)
    out(f"Completed updating config for user {opts.entity_name}.")


async def run_quota_command_via_admin(
    admin: AdminClient, opts: ConfigCommandOptions, out: Out
) -> None:
    assert opts.entity_type is not None
    entity = _quota_entity(opts.entity_type, opts.entity_name)
    if opts.action == "alter":
        ops: dict[str, float | None] = {}
        for key, text in parse_configs_to_be_added(opts.add_config).items():
            try:
                ops[key] = float(text)
            except ValueError:
                raise ConfigCommandError(
                    f"Cannot parse quota configuration value for {key}: {text}"
                ) from None
        for key in parse_configs_to_be_deleted(opts.delete_config):
            ops[key] = None
        await admin.alter_client_quotas(entity, ops)
        out(f"Completed updating config for entity: {_quota_entity_description(entity)}.")
        return
    if entity:
        components = [(k, 0 if v is not None else 1, v) for k, v in entity.items()]
        strict = True
    else:  # every entity of the type
        kind = {ConfigType.CLIENT: CLIENT_ID_ENTITY_TYPE, ConfigType.IP: IP_ENTITY_TYPE}.get(
            opts.entity_type, USER_ENTITY_TYPE
        )
        components, strict = [(kind, 2, None)], False
    for found, values in await admin.describe_client_quotas(components, strict=strict):
        text = ", ".join(f"{k}={v}" for k, v in sorted(values.items()))
        out(f"Quota configs for {_quota_entity_description(found)} are {text}")


async def run_ip_command_via_admin(
    admin: AdminClient, opts: ConfigCommandOptions, out: Out
) -> None:
    """An IP's connection-rate quota over --bootstrap-server (Kafka 2.8's ConfigCommand:
    the client quota APIs with the `ip` entity)."""
    if opts.action == "alter":
        names = [
            *parse_configs_to_be_added(opts.add_config),
            *parse_configs_to_be_deleted(opts.delete_config),
        ]
        unknown = [name for name in names if name not in IP_QUOTA_CONFIG_NAMES]
        if unknown:
            raise ConfigCommandError(
                f"Only connection quota configs can be added for '{ConfigType.IP}' using "
                f"--bootstrap-server. Unexpected config names: {','.join(unknown)}"
            )
        await run_quota_command_via_admin(admin, opts, lambda _line: None)
        if opts.entity_name and opts.entity_name != ConfigEntityName.DEFAULT:
            out(f"Completed updating config for ip {opts.entity_name}.")
        else:
            out(f"Completed updating default config for {ConfigType.IP} in the cluster.")
        return
    await run_quota_command_via_admin(admin, opts, out)
