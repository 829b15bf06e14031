"""Every API's request and response schema, by API key.

`REQUESTS[ApiKey.X]` and `RESPONSES[ApiKey.X]` are the `Message`s for API X.
"""

from __future__ import annotations

from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.messages import (
    api_versions,
    create_topics,
    delete_topics,
    fetch,
    leader_and_isr,
    list_offsets,
    metadata,
    produce,
    stop_replica,
    update_metadata,
)
from kafpy.protocol.schema import Message

_MODULES = [
    produce,
    fetch,
    list_offsets,
    metadata,
    leader_and_isr,
    stop_replica,
    update_metadata,
    api_versions,
    create_topics,
    delete_topics,
]


def _collect(kind: str) -> dict[ApiKey, Message]:
    found: dict[ApiKey, Message] = {}
    for module in _MODULES:
        for value in vars(module).values():
            if isinstance(value, Message) and value.kind == kind:
                found[ApiKey(value.api_key)] = value
    return dict(sorted(found.items()))


REQUESTS: dict[ApiKey, Message] = _collect("request")
RESPONSES: dict[ApiKey, Message] = _collect("response")
