"""Every API's wire declaration, by API key, collected from the message modules.

Each module of this package declares its API's request and response schemas and one
`ApiSchema` (kafpy/protocol/api_schema.py): the versions the broker advertises and the
error response builder. They are collected once, here: adding a module is all it takes.
`API_SCHEMAS[ApiKey.X]` is API X's declaration; `REQUESTS[ApiKey.X]` and
`RESPONSES[ApiKey.X]` its request and response `Message`s.
"""

from __future__ import annotations

import importlib
import pkgutil

from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.api_schema import ApiSchema
from kafpy.protocol.schema import Message


def _collect() -> dict[ApiKey, ApiSchema]:
    found: dict[ApiKey, ApiSchema] = {}
    for info in pkgutil.iter_modules(__path__):
        module = importlib.import_module(f"{__name__}.{info.name}")
        for value in vars(module).values():
            if isinstance(value, ApiSchema):
                if value.api_key in found:
                    raise RuntimeError(f"{value.api_key.api_name} is declared twice")
                found[value.api_key] = value
    return dict(sorted(found.items()))


API_SCHEMAS: dict[ApiKey, ApiSchema] = _collect()
REQUESTS: dict[ApiKey, Message] = {k: s.request for k, s in API_SCHEMAS.items()}
RESPONSES: dict[ApiKey, Message] = {k: s.response for k, s in API_SCHEMAS.items()}
