"""The file through which a broker tells the process that started it which ports it bound.

A broker may listen on port 0 (`listeners=PLAINTEXT://127.0.0.1:0`, as Kafka allows): the
system picks a free port when the listener binds, so no two processes can race for one.
The broker registers and advertises the port it got; the process that started it learns
the port from this file, named by `kafpy server --bound-ports-file PATH` (KafkaServer's
`bound_ports_file`). The broker writes it as soon as its listeners are bound, before it
registers or accepts connections (the parent then waits for those as for any broker): one
JSON object of listener name to port, `{"PLAINTEXT": 40123}`, written to a temporary file
and renamed, so a reader sees all of it or nothing. A parent removes a stale file before
it starts the broker.

A broker restarted on the port it had before binds that port again; another process may
hold it meanwhile (a port in TIME_WAIT is reused). `address_in_use` tells the parent that
this is why the broker exited, so it can try again for `BIND_RETRY_S` and then fail with a
message naming the port.
"""

from __future__ import annotations

import errno
import json
import os
from collections.abc import Mapping
from pathlib import Path

BIND_RETRY_S = 10.0
# what `kafpy server` prints when a listener's port is taken (SocketServer.bind)
_IN_USE = os.strerror(errno.EADDRINUSE).lower()


def write_bound_ports(path: Path, ports: Mapping[str, int]) -> None:
    """Write listener name -> bound port to `path`, atomically."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(dict(ports), sort_keys=True) + "\n", "utf-8")
    os.replace(tmp, path)


def read_bound_ports(path: Path) -> dict[str, int] | None:
    """The ports the broker wrote to `path`; None while it has not written them."""
    try:
        text = path.read_text("utf-8")
    except FileNotFoundError:
        return None
    return {str(name): int(port) for name, port in json.loads(text).items()}


def address_in_use(output: str) -> bool:
    """Whether a broker's output says a listener could not bind because its port is taken."""
    return _IN_USE in output.lower()
