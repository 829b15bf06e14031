"""Acceptor: takes the new connections of one listener (Kafka's `kafka.network.Acceptor`).

It owns the listener's server sockets and accepts one connection at a time, as Kafka's
acceptor thread does: each is counted against the ConnectionQuotas first, which may make
it wait (a full `max.connections`, a creation rate over its limit: nothing else is
accepted meanwhile, new connections queue in the kernel's backlog), close it at once
(`max.connections.per.ip`) or close it after a delay (the IP's connection-rate quota).
Only then does the connection get its protocol (the socket server's KafkaConnection).
"""

from __future__ import annotations

import asyncio
import errno
import os
import socket
from collections.abc import Callable
from typing import Protocol, cast

from kafpy.common.logger import PrefixAdapter
from kafpy.network.connection_quotas import (
    ConnectionQuotas,
    ConnectionThrottled,
    TooManyConnections,
)

__all__ = ["Acceptor", "open_server_sockets"]

# asyncio's own server backlog (Java's ServerSocket: 50)
BACKLOG = 100
# out of file descriptors or memory: accepting again at once would spin
_RESOURCE_ERRORS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})


class _Connection(Protocol):
    """What the acceptor needs of a connection's protocol: closing it gives its count back."""

    def close(self, reason: str | None = None) -> None: ...


ConnectionFactory = Callable[[str], asyncio.BaseProtocol]
"""Makes the protocol of an accepted connection, given the client's address (which the
protocol gives back to the quotas, `dec`, when it closes)."""


def open_server_sockets(host: str, port: int, backlog: int = BACKLOG) -> list[socket.socket]:
    """Listening, non-blocking sockets for `host:port` (an empty host: every interface, one
    socket per address family, as asyncio's create_server binds them). OSError as the
    bind raised it."""
    sockets: list[socket.socket] = []
    seen: set[tuple[int, object]] = set()
    try:
        infos = socket.getaddrinfo(
            host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )
        for family, kind, proto, _, address in infos:
            if (family, address) in seen:
                continue
            seen.add((family, address))
            sock = socket.socket(family, kind, proto)
            sockets.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6 and hasattr(socket, "IPPROTO_IPV6"):
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            sock.bind(address)
            sock.listen(backlog)
            sock.setblocking(False)
    except BaseException:
        for sock in sockets:
            sock.close()
        raise
    return sockets


class Acceptor:
    """Accepts the connections of one listener and holds them to the connection quotas.

    Parameters:
        listener_name: the listener whose connections these are.
        sockets: its listening sockets (`open_server_sockets`).
        quotas: the broker's ConnectionQuotas.
        connection_factory: the protocol of a counted connection.
        log: the socket server's logger.
        on_accepted: called after each connection is handed over (the socket server closes
            connections of other listeners when the inter-broker listener went over
            max.connections).
    """

    def __init__(
        self,
        listener_name: str,
        sockets: list[socket.socket],
        quotas: ConnectionQuotas,
        connection_factory: ConnectionFactory,
        log: PrefixAdapter,
        on_accepted: Callable[[], None] = lambda: None,
    ) -> None:
        self.listener_name = listener_name
        self.sockets = sockets
        self.quotas = quotas
        self.connection_factory = connection_factory
        self.log = log
        self.on_accepted = on_accepted
        self._tasks: list[asyncio.Task[None]] = []
        # connections over their IP's rate quota, each closed when its delay ends
        self._throttled: dict[socket.socket, asyncio.TimerHandle] = {}

    @property
    def port(self) -> int:
        return int(self.sockets[0].getsockname()[1])

    def start(self) -> None:
        """Start accepting (once)."""
        if self._tasks:
            return
        loop = asyncio.get_running_loop()
        for sock in self.sockets:
            self._tasks.append(
                loop.create_task(
                    self._accept_loop(sock),
                    name=f"kafka-socket-acceptor-{self.listener_name}-{self.port}",
                )
            )

    def close(self) -> None:
        """Stop accepting: close the listening sockets and the throttled connections."""
        for task in self._tasks:
            task.cancel()
        for sock in self.sockets:
            sock.close()
        for conn, handle in self._throttled.items():
            handle.cancel()
            conn.close()
        self._throttled.clear()

    async def wait_closed(self) -> None:
        tasks, self._tasks = self._tasks, []
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)

    @property
    def throttled_count(self) -> int:
        """Connections held until their IP's throttle delay ends."""
        return len(self._throttled)

    async def _accept_loop(self, sock: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        while True:
            try:
                conn, address = await loop.sock_accept(sock)
            except OSError as e:
                if sock.fileno() == -1:
                    return  # closed
                self.log.error("Error while accepting connection: %s", e)
                if e.errno in _RESOURCE_ERRORS:
                    await asyncio.sleep(1)
                continue
            try:
                await self._accept(conn, str(address[0]))
            except asyncio.CancelledError:
                conn.close()
                raise
            except Exception:
                self.log.exception("Error while accepting connection")
                conn.close()

    async def _accept(self, conn: socket.socket, ip: str) -> None:
        loop = asyncio.get_running_loop()
        try:
            await self.quotas.inc(self.listener_name, ip)
        except TooManyConnections as e:
            self.log.info(
                "Rejected connection from /%s, address already has the configured maximum "
                "of %d connections.", e.ip, e.count,
            )  # fmt: skip
            self.quotas.dec(self.listener_name, ip)
            conn.close()
            return
        except ConnectionThrottled as e:
            self.log.debug(
                "Delaying closing of connection from /%s for %d ms", e.ip, e.throttle_time_ms
            )
            self._throttled[conn] = loop.call_later(
                e.throttle_time_ms / 1000, self._close_throttled, conn
            )
            return
        conn.setblocking(False)
        try:
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
        except OSError:
            pass  # the client is gone already: the transport finds out
        created: list[asyncio.BaseProtocol] = []

        def factory() -> asyncio.BaseProtocol:
            created.append(self.connection_factory(ip))
            return created[0]

        try:
            await loop.connect_accepted_socket(factory, conn)
        except BaseException as e:
            if created:
                cast(_Connection, created[0]).close()  # gives its count back
            else:
                self.quotas.dec(self.listener_name, ip)
            conn.close()
            if not isinstance(e, OSError):
                raise
            self.log.debug("Connection from /%s lost before it was set up: %s", ip, e)
            return
        self.on_accepted()

    def _close_throttled(self, conn: socket.socket) -> None:
        self._throttled.pop(conn, None)
        self.log.debug("Closing socket from ip /%s", _peer(conn))
        conn.close()


def _peer(conn: socket.socket) -> str:
    try:
        return str(conn.getpeername()[0])
    except OSError as e:
        return os.strerror(e.errno) if e.errno else "?"
