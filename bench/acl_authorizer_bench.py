"""AclAuthorizer decision speed (in the spirit of Kafka's AclAuthorizerBenchmark).

    python bench/acl_authorizer_bench.py [--resources 2000] [--acls-per-resource 5]

In-process, over an in-memory embedded store: `--resources` topics with literal ACLs and
as many prefixed patterns, each with `--acls-per-resource` entries for other principals
plus one for the principal asked about. Prints authorize() calls per second for a topic
matched literally, one matched by a prefix, one no ACL names (allow.everyone false), a
super user, and authorized_operations() (Metadata's bitfield) per second.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Callable

from kafpy.metadata.embedded_store import EmbeddedStore
from kafpy.protocol.acl_operations import AclOperation as Op
from kafpy.security.authorizer.acl import (
    AccessControlEntry,
    AclBinding,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from kafpy.security.authorizer.acl_authorizer import AclAuthorizer
from kafpy.security.kafka_principal import KafkaPrincipal

TOPIC = ResourceType.TOPIC
ALICE = KafkaPrincipal("User", "alice")
ADMIN = KafkaPrincipal("User", "admin")


def rate(call: Callable[[], object], seconds: float = 0.5) -> float:
    n, start = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - start) < seconds:
        for _ in range(1000):
            call()
        n += 1000
    return n / elapsed


async def main(resources: int, per_resource: int) -> None:
    store = EmbeddedStore(None)
    await store.start()
    authorizer = AclAuthorizer(store, {ADMIN})
    await authorizer.start()
    bindings = []
    for i in range(resources):
        for pattern in (ResourcePattern(TOPIC, f"topic-{i}", PatternType.LITERAL),
                        ResourcePattern(TOPIC, f"pre-{i}-", PatternType.PREFIXED)):  # fmt: skip
            for j in range(per_resource):
                bindings.append(AclBinding(pattern, AccessControlEntry(
                    f"User:user-{j}", "*", Op.WRITE, AclPermissionType.ALLOW)))  # fmt: skip
            bindings.append(AclBinding(pattern, AccessControlEntry(
                "User:alice", "*", Op.READ, AclPermissionType.ALLOW)))  # fmt: skip
    start = time.perf_counter()
    await authorizer.create_acls(bindings)
    print(
        f"{len(bindings)} ACLs on {2 * resources} patterns stored in {time.perf_counter() - start:.1f} s"
    )
    host = "127.0.0.1"
    mid = resources // 2
    cases = {
        "literal match": lambda: authorizer.authorize(ALICE, host, Op.READ, TOPIC, f"topic-{mid}"),
        "prefix match": lambda: authorizer.authorize(ALICE, host, Op.READ, TOPIC, f"pre-{mid}-orders"),
        "no ACL (denied)": lambda: authorizer.authorize(ALICE, host, Op.READ, TOPIC, "unnamed-topic"),
        "super user": lambda: authorizer.authorize(ADMIN, host, Op.ALTER, TOPIC, f"topic-{mid}"),
        "authorized_operations": lambda: authorizer.authorized_operations(ALICE, host, TOPIC, f"topic-{mid}"),
    }  # fmt: skip
    for name, call in cases.items():
        print(f"{name:24s} {rate(call):>12,.0f} calls/s")
    await authorizer.close()
    await store.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--resources", type=int, default=2000)
    parser.add_argument("--acls-per-resource", type=int, default=5)
    args = parser.parse_args()
    asyncio.run(main(args.resources, args.acls_per_resource))
