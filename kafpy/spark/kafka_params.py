"""The `kafka.*` options of the kafpy data source: settings for the Kafka client.

Spark's Kafka connector hands every `kafka.*` option (prefix removed) to its Java consumer
or producer. kafpy's own client honours only some of them, so this module sorts every
`kafka.*` option a read or a write is given into one of four kinds:

- used: a setting kafpy's client honours (the `_USED_*` sets below);
- refused as Spark's KafkaSourceProvider refuses it, because the connector manages it
  itself (`auto.offset.reset`, the key and value (de)serializers, `enable.auto.commit`,
  `interceptor.classes`);
- refused because kafpy's client cannot honour it and going on without it would be wrong:
  `transactional.id` (the exactly-once sink derives one per task), interceptors on writes,
  `sasl.*` without a SASL protocol, a SASL mechanism other than GSSAPI, PLAIN and SCRAM;
  `security.protocol` (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL) with Kafka's `ssl.*` and
  `sasl.*` client keys is passed to kafpy's client;
- anything else is ignored with a warning naming it, as Kafka's client warns that a
  configuration "was supplied but isn't a known config". `kafka.group.id` on reads gets
  its own warning (Spark 3+ accepts it with one too): kafpy joins no group.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Literal

from kafpy.client.client_security import CLIENT_SECURITY_PROTOCOLS, SaslCredentials
from kafpy.common.errors import InvalidConfigurationError
from kafpy.security.ssl_configs import SSL_CONFIG_DEF
from kafpy.spark.errors import OptionError

Role = Literal["read", "write"]

_log = logging.getLogger(__name__)

_USED_BY_BOTH = frozenset(
    {
        "bootstrap.servers",
        "client.id",
        "request.timeout.ms",
        "retries",
        "retry.backoff.ms",
        "security.protocol",  # checked below
    }
)
_USED: dict[Role, frozenset[str]] = {
    "read": _USED_BY_BOTH
    | {"fetch.max.wait.ms", "fetch.max.bytes", "max.partition.fetch.bytes", "isolation.level"},
    "write": _USED_BY_BOTH
    | {"acks", "enable.idempotence", "compression.type", "delivery.timeout.ms"},
}

_SASL_KEYS = frozenset({
    "sasl.mechanism", "sasl.jaas.config", "sasl.username", "sasl.password",
    "sasl.kerberos.service.name", "sasl.kerberos.keytab", "sasl.kerberos.principal",
})  # fmt: skip
_NO_SASL = (
    "kafpy's client reads kafka.sasl.* only with kafka.security.protocol SASL_PLAINTEXT or "
    "SASL_SSL; set it, or leave out the kafka.sasl.* options"
)

_REFUSED: dict[Role, dict[str, str]] = {
    "read": {
        "auto.offset.reset": (
            "set the source option 'startingOffsets' to 'earliest' or 'latest' (or offsets) "
            "to say where a new query starts; the query itself tracks which offsets it has "
            "read, and a restarted streaming query resumes from its checkpoint"
        ),
        "key.deserializer": (
            "keys are always read as bytes; turn them into what you need with DataFrame "
            "operations, e.g. col('key').cast('string')"
        ),
        "value.deserializer": (
            "values are always read as bytes; turn them into what you need with DataFrame "
            "operations, e.g. col('value').cast('string') or from_json(...)"
        ),
        "enable.auto.commit": (
            "the query tracks its offsets itself and never commits them through a consumer; "
            "to show its progress in a consumer group, use the option 'commitOffsetsToGroup'"
        ),
        "interceptor.classes": (
            "interceptors could change the records the query reads, so Spark's connector "
            "refuses them, and kafpy's client cannot run Java classes anyway"
        ),
    },
    "write": {
        "key.serializer": (
            "keys are written as the bytes of the 'key' column (string or binary); "
            "serialize them with DataFrame operations first, e.g. to_json(...) or cast"
        ),
        "value.serializer": (
            "values are written as the bytes of the 'value' column (string or binary); "
            "serialize them with DataFrame operations first, e.g. to_json(struct(*))"
        ),
        "interceptor.classes": (
            "kafpy's client cannot run Java interceptor classes; change the DataFrame "
            "before writing it instead"
        ),
        "transactional.id": (
            "each task of the sink needs a transactional id of its own; for transactions "
            "set .option('exactlyOnce', 'true'), and .option('transactionalIdPrefix', ...) "
            "to choose the ids' prefix"
        ),
    },
}

_GROUP_ID_UNUSED = (
    "Option 'kafka.group.id' is set but not used: kafpy reads the partitions it is given "
    "directly and never joins or commits to a consumer group, so two queries with the same "
    "group do not interfere. To record a streaming query's progress in a consumer group, "
    "use the option 'commitOffsetsToGroup'."
)


def check_kafka_params(opts: Mapping[str, str], role: Role) -> None:
    """Refuse the `kafka.*` options in `opts` (keys lower-cased) that a read or a write
    cannot take, and log a warning for each one it would silently ignore."""
    params = {k[len("kafka.") :]: v for k, v in opts.items() if k.startswith("kafka.")}
    protocol = params.get("security.protocol", "PLAINTEXT").strip().upper()
    if protocol not in CLIENT_SECURITY_PROTOCOLS:
        raise OptionError(
            f"Option 'kafka.security.protocol' = {params['security.protocol']!r} is not "
            f"supported: it must be one of {', '.join(CLIENT_SECURITY_PROTOCOLS)}."
        )
    uses_sasl = protocol.startswith("SASL_")
    if uses_sasl:
        try:
            SaslCredentials.from_config(params, source="the kafka.* options")
        except InvalidConfigurationError as e:
            raise OptionError(f"{e}".replace("sasl.", "kafka.sasl.")) from None
    sasl = sorted(k for k in params if k.startswith("sasl.") and not uses_sasl)
    if sasl:
        named = ", ".join(f"'kafka.{k}'" for k in sasl)
        raise OptionError(
            f"Option{'s' if len(sasl) > 1 else ''} {named} "
            f"{'are' if len(sasl) > 1 else 'is'} not supported: {_NO_SASL}."
        )
    refused = _REFUSED[role]
    for key in sorted(params):
        if key in refused:
            raise OptionError(f"Option 'kafka.{key}' is not supported: {refused[key]}.")
    used = (
        _USED[role]
        | (frozenset(SSL_CONFIG_DEF.names()) if protocol in ("SSL", "SASL_SSL") else frozenset())
        | (_SASL_KEYS if uses_sasl else frozenset())
    )
    for key in sorted(params):
        if key in used:
            continue
        if key == "group.id" and role == "read":
            _log.warning(_GROUP_ID_UNUSED)
            continue
        _log.warning(
            "Option 'kafka.%s' was supplied but is not used: kafpy's client does not know the "
            "Kafka setting '%s' for %ss and ignores it. The settings it honours for %ss are: "
            "%s.",
            key,
            key,
            role,
            role,
            ", ".join(sorted(used)),
        )


def security_params(opts: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    """`kafka.security.protocol` and the `kafka.ssl.*` and `kafka.sasl.*` options, prefix
    removed, for ClientSecurity.from_config on whichever process connects (a context does not
    pickle)."""
    return tuple(
        sorted(
            (k[len("kafka.") :], v)
            for k, v in opts.items()
            if k == "kafka.security.protocol"
            or (k.startswith("kafka.") and k[len("kafka.") :] in SSL_CONFIG_DEF)
            or (k.startswith("kafka.") and k[len("kafka.") :] in _SASL_KEYS)
        )
    )
