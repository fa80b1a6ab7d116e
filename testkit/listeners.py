"""Private servers that count what reaches them: the proof, in tests of the URL policy, that nothing did."""

from __future__ import annotations

import socket
import threading
from dataclasses import dataclass, field


@dataclass
class PrivateListeners:
    """A TCP and a UDP listener on 127.0.0.1 that count connections, bytes and packets."""

    tcp_port: int = 0
    udp_port: int = 0
    connections: int = 0
    received: int = 0
    packets: int = 0
    _sockets: list[socket.socket] = field(default_factory=list)

    def start(self) -> None:
        tcp = socket.create_server(("127.0.0.1", 0))
        udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        udp.bind(("127.0.0.1", 0))
        self.tcp_port, self.udp_port = tcp.getsockname()[1], udp.getsockname()[1]
        self._sockets = [tcp, udp]
        threading.Thread(target=self._accept, args=(tcp,), daemon=True).start()
        threading.Thread(target=self._receive, args=(udp,), daemon=True).start()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                connection, _ = listener.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._read, args=(connection,), daemon=True).start()

    def _read(self, connection: socket.socket) -> None:
        with connection:
            while data := connection.recv(65536):
                self.received += len(data)

    def _receive(self, udp: socket.socket) -> None:
        while True:
            try:
                data = udp.recv(65536)
            except OSError:
                return
            self.packets += 1
            self.received += len(data)

    def close(self) -> None:
        for sock in self._sockets:
            sock.close()
