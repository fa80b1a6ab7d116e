"""A small D-Bus client over a Unix socket, for the AT-SPI reader (standard library only: the helper loads it by path).

Why not libatspi for the walk: it makes one blocking round trip per property (measured on the Python docs page in
Chromium: about 9.5 calls a node at 150-240 us each, 576 nodes in 0.7-1 s), and PyGObject's asynchronous Gio
calls cost about 80 us of Python a message. Here the calls of a whole tree level are written at once and the
replies read as they come (`Connection.calls`): 2000 calls in about 85 ms wall and 30 ms of our CPU, over the
application's own peer-to-peer socket (AT-SPI's `GetApplicationBusAddress`), which skips the bus daemon.

Only what AT-SPI needs is spoken: method calls with basic arguments, replies of any type, little-endian out.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import selectors
import socket
import struct
import time
from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import unquote

METHOD_CALL, METHOD_RETURN, ERROR = 1, 2, 3
FIELD_PATH, FIELD_INTERFACE, FIELD_MEMBER, FIELD_ERROR_NAME, FIELD_REPLY_SERIAL = 1, 2, 3, 4, 5
FIELD_DESTINATION, FIELD_SIGNATURE = 6, 8
ALIGNMENT = {"y": 1, "g": 1, "v": 1, "n": 2, "q": 2, "b": 4, "i": 4, "u": 4, "h": 4, "s": 4, "o": 4, "a": 4}
FIXED = {"n": "h", "q": "H", "b": "I", "i": "i", "u": "I", "h": "I", "x": "q", "t": "Q", "d": "d"}
DBUS = ("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus")


class CallError(Exception):
    """The application answered a call with a D-Bus error (e.g. the object is gone, or lacks that interface)."""


class Call:
    """One method call: where it goes, what it carries."""

    __slots__ = ("args", "destination", "interface", "member", "path", "signature")

    def __init__(
        self,
        path: str,
        interface: str,
        member: str,
        signature: str = "",
        args: Sequence[Any] = (),
        destination: str = "",
    ) -> None:
        self.destination, self.path, self.interface, self.member = destination, path, interface, member
        self.signature, self.args = signature, args


class Connection:
    """One connection, to the bus (`message_bus`: says Hello, calls need a destination) or to an application."""

    def __init__(self, address: str, message_bus: bool, timeout: float = 5.0) -> None:
        self.sock = _connect(address, timeout)
        self.serial = 0
        self.incoming = bytearray()
        self._made: dict[tuple[Any, ...], tuple[bytes, bytes]] = {}
        if message_bus:
            self.call(Call(*DBUS[1:], "Hello", destination=DBUS[0]), timeout)

    def call(self, call: Call, timeout: float = 5.0) -> list[Any]:
        """One call's reply values; CallError when the other side answers with an error, TimeoutError when not."""
        (answer,) = self.calls([call], time.monotonic() + timeout)
        if answer is None:
            raise TimeoutError(f"no answer to {call.member} within {timeout:g} s")
        if isinstance(answer, CallError):
            raise answer
        return answer

    def calls(self, calls: Sequence[Call], deadline: float) -> list[list[Any] | CallError | None]:
        """Every call's reply, in order: written as the socket takes them, replies read as they come (a peer may stop
        reading until we read its replies). None for a call not answered by the deadline."""
        answers: list[list[Any] | CallError | None] = [None] * len(calls)
        waiting: dict[int, int] = {}
        outgoing = bytearray()
        for index, call in enumerate(calls):
            serial, message = self._message(call)
            waiting[serial] = index
            outgoing += message
        sent = 0
        self.sock.setblocking(False)
        try:
            with selectors.DefaultSelector() as selector:
                selector.register(self.sock, selectors.EVENT_READ | selectors.EVENT_WRITE)
                while waiting:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        break
                    for _, events in selector.select(left):
                        if events & selectors.EVENT_WRITE:
                            sent += self.sock.send(outgoing[sent : sent + (1 << 16)])
                            if sent == len(outgoing):
                                selector.modify(self.sock, selectors.EVENT_READ)
                        if events & selectors.EVENT_READ:
                            chunk = self.sock.recv(1 << 20)
                            if not chunk:
                                raise ConnectionError("the application closed its accessibility connection")
                            self.incoming += chunk
                            self._take_replies(waiting, answers)
        finally:
            self.sock.setblocking(True)
        if 0 < sent < len(outgoing):  # a partly written message would garble the stream
            self.close()
            raise TimeoutError("the application stopped reading its accessibility connection")
        return answers

    def _take_replies(self, waiting: dict[int, int], answers: list[list[Any] | CallError | None]) -> None:
        buffer = self.incoming
        position = 0
        while len(buffer) - position >= 16:
            if buffer[position] != ord("l") and buffer[position] != ord("B"):
                raise ConnectionError("garbled D-Bus stream")
            order = "<" if buffer[position] == ord("l") else ">"
            body_length, _, fields_length = struct.unpack_from(order + "III", buffer, position + 4)
            header_length = 16 + fields_length
            end = position + header_length + -header_length % 8 + body_length
            if len(buffer) < end:
                break
            message = Reader(bytes(buffer[position:end]), order)
            kind = buffer[position + 1]
            position = end
            fields = message.header_fields(16 + fields_length)
            index = waiting.pop(fields.get(FIELD_REPLY_SERIAL, -1), None)
            if index is None or kind not in (METHOD_RETURN, ERROR):
                continue  # a signal, or the late answer to a call whose deadline passed
            values = message.values(fields.get(FIELD_SIGNATURE, ""), message.data_start(fields_length))
            if kind == ERROR:
                detail = values[0] if values and isinstance(values[0], str) else ""
                answers[index] = CallError(f"{fields.get(FIELD_ERROR_NAME, 'error')}: {detail}")
            else:
                answers[index] = values
        del buffer[:position]

    def _message(self, call: Call) -> tuple[int, bytes]:
        """A call's message. All but the path and the serial is the same for every node a walk asks the same thing
        (header fields after the path, the body): that part is marshalled once per connection."""
        self.serial += 1
        key = (call.interface, call.member, call.destination, call.signature, tuple(call.args))
        made = self._made.get(key)
        if made is None:
            made = self._made[key] = _fixed_part(call)
        rest, body = made
        path = call.path.encode()
        fields = bytes([FIELD_PATH]) + b"\x01o\x00" + struct.pack("<I", len(path)) + path + b"\0"  # signature 'o'
        fields += b"\0" * (-len(fields) % 8) + rest
        header = struct.pack("<cBBBIII", b"l", METHOD_CALL, 0, 1, len(body), self.serial, len(fields)) + fields
        return self.serial, header + b"\0" * (-len(header) % 8) + body

    def close(self) -> None:
        self.sock.close()


def _fixed_part(call: Call) -> tuple[bytes, bytes]:
    """A call's header fields after the path (each field starts 8-aligned, so they marshal the same wherever they
    begin) and its body."""
    body = Writer()
    for code, value in zip(_types(call.signature), call.args, strict=True):
        body.put(code, value)
    fields: list[tuple[int, str, str]] = [(FIELD_INTERFACE, "s", call.interface), (FIELD_MEMBER, "s", call.member)]
    if call.destination:
        fields.append((FIELD_DESTINATION, "s", call.destination))
    if call.signature:
        fields.append((FIELD_SIGNATURE, "g", call.signature))
    rest = Writer()
    for field, kind, value in fields:
        rest.align(8)
        rest.data.append(field)
        rest.put("g", kind)
        rest.put(kind, value)
    return bytes(rest.data), bytes(body.data)


class Writer:
    """Marshals the basic types a call's arguments need (little-endian)."""

    def __init__(self) -> None:
        self.data = bytearray()

    def align(self, size: int) -> None:
        self.data += b"\0" * (-len(self.data) % size)

    def put(self, code: str, value: Any) -> None:
        if code in ("s", "o"):
            self.align(4)
            encoded = str(value).encode()
            self.data += struct.pack("<I", len(encoded)) + encoded + b"\0"
        elif code == "g":
            encoded = str(value).encode()
            self.data += bytes([len(encoded)]) + encoded + b"\0"
        elif code == "y":
            self.data.append(int(value))
        elif code in FIXED:
            size = struct.calcsize(FIXED[code])
            self.align(size)
            self.data += struct.pack("<" + FIXED[code], value)
        else:
            raise ValueError(f"cannot send D-Bus type {code!r}")


class Reader:
    """Unmarshals any D-Bus value: arrays as lists, structs as tuples, dicts as dicts, variants as their value."""

    def __init__(self, data: bytes, order: str) -> None:
        self.data, self.order = data, order

    def data_start(self, fields_length: int) -> int:
        start = 16 + fields_length
        return start + -start % 8

    def header_fields(self, end: int) -> dict[int, Any]:
        """The header's fields (`a(yv)` from byte 12, each a code and a variant) by code."""
        variant, position, fields = _parser("v", self.order), 16, {}
        while position < end:
            position += -position % 8
            fields[self.data[position]], position = variant(self.data, position + 1)
        return fields

    def values(self, signature: str, position: int) -> list[Any]:
        """The body's values; the body starts 8-aligned, as a struct of them does."""
        if not signature:
            return []
        return list(_parser(f"({signature})", self.order)(self.data, position)[0])


# A parser reads one complete type at a position and answers the value and the position after it. Each type is
# compiled once into nested closures (fixed-size runs unpacked by one struct call): a walk reads the same few types
# tens of thousands of times, and reading them letter by letter was the helper's largest own cost after a scroll.
Parser = Callable[[bytes, int], tuple[Any, int]]
_PARSERS: dict[tuple[str, str], Parser] = {}


def _parser(code: str, order: str) -> Parser:
    parser = _PARSERS.get((code, order))
    if parser is None:
        parser = _PARSERS[(code, order)] = _compile(code, order)
    return parser


def _compile(code: str, order: str) -> Parser:
    first = code[0]
    if first in FIXED:
        return _fixed(first, order)
    if first == "y":
        return lambda data, position: (data[position], position + 1)
    if first in ("s", "o"):
        length = struct.Struct(order + "I").unpack_from

        def text(data: bytes, position: int) -> tuple[Any, int]:
            position += -position % 4
            (size,) = length(data, position)
            position += 4
            return data[position : position + size].decode("utf-8", "replace"), position + size + 1

        return text
    if first == "g":
        return _signature
    if first == "v":

        def variant(data: bytes, position: int) -> tuple[Any, int]:
            signature, position = _signature(data, position)
            return _parser(signature, order)(data, position)

        return variant
    if first == "a":
        return _array(code[1:], order)
    if first == "(":
        return _struct(_types(code[1:-1]), order)
    raise ValueError(f"cannot read D-Bus type {code!r}")


def _signature(data: bytes, position: int) -> tuple[str, int]:
    size = data[position]
    return data[position + 1 : position + 1 + size].decode(), position + size + 2


def _fixed(code: str, order: str) -> Parser:
    unpack = struct.Struct(order + FIXED[code]).unpack_from
    size = struct.calcsize(FIXED[code])
    boolean = code == "b"

    def fixed(data: bytes, position: int) -> tuple[Any, int]:
        position += -position % size
        (value,) = unpack(data, position)
        return (bool(value) if boolean else value), position + size

    return fixed


def _array(item: str, order: str) -> Parser:
    length = struct.Struct(order + "I").unpack_from
    alignment = 8 if item[0] in "({" else ALIGNMENT.get(item[0], 8)
    if item in FIXED and item != "b":  # e.g. a state set (au): one unpack for the whole array
        code, size = order + FIXED[item], struct.calcsize(FIXED[item])

        def numbers(data: bytes, position: int) -> tuple[Any, int]:
            position += -position % 4
            (total,) = length(data, position)
            position += 4
            position += -position % alignment
            return list(struct.unpack_from(f"{order}{total // size}{code[1:]}", data, position)), position + total

        return numbers
    if item[0] == "{":
        key_type, value_type = _types(item[1:-1])
        key, value = _parser(key_type, order), _parser(value_type, order)

        def pairs(data: bytes, position: int) -> tuple[Any, int]:
            position += -position % 4
            (total,) = length(data, position)
            position += 4
            position += -position % alignment
            end, found = position + total, {}
            while position < end:
                position += -position % 8
                name, position = key(data, position)
                found[name], position = value(data, position)
            return found, position

        return pairs
    element = _parser(item, order)

    def items(data: bytes, position: int) -> tuple[Any, int]:
        position += -position % 4
        (total,) = length(data, position)
        position += 4
        position += -position % alignment
        end, found = position + total, []
        while position < end:
            value, position = element(data, position)
            found.append(value)
        return found, position

    return items


def _struct(parts: list[str], order: str) -> Parser:
    if all(part in FIXED and part != "b" and ALIGNMENT.get(part) == 4 for part in parts):  # e.g. a box (iiii)
        unpack = struct.Struct(order + "".join(FIXED[part] for part in parts)).unpack_from
        size = 4 * len(parts)

        def packed(data: bytes, position: int) -> tuple[Any, int]:
            position += -position % 8
            return unpack(data, position), position + size

        return packed
    readers = [_parser(part, order) for part in parts]

    def fields(data: bytes, position: int) -> tuple[Any, int]:
        position += -position % 8
        values = []
        for read in readers:
            value, position = read(data, position)
            values.append(value)
        return tuple(values), position

    return fields


def _types(signature: str) -> list[str]:
    """A signature split into its complete types: 'sa(so)u' -> ['s', 'a(so)', 'u']."""
    types, index = [], 0
    while index < len(signature):
        end = _type_end(signature, index)
        types.append(signature[index:end])
        index = end
    return types


def _type_end(signature: str, index: int) -> int:
    while signature[index] == "a":
        index += 1
    if signature[index] not in "({":
        return index + 1
    depth = 0
    for end in range(index, len(signature)):
        if signature[end] in "({":
            depth += 1
        elif signature[end] in ")}":
            depth -= 1
            if depth == 0:
                return end + 1
    raise ValueError(f"unbalanced D-Bus signature {signature!r}")


def _connect(address: str, timeout: float) -> socket.socket:
    """A socket to the first Unix address in `address` that answers, authenticated as this user (EXTERNAL)."""
    problems = []
    for entry in address.split(";"):
        transport, _, rest = entry.partition(":")
        keys = dict(part.split("=", 1) for part in rest.split(",") if "=" in part)
        if transport != "unix" or not ({"path", "abstract"} & keys.keys()):
            continue
        target = unquote(keys["path"]) if "path" in keys else "\0" + unquote(keys["abstract"])
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(timeout)
        try:
            sock.connect(target)
            sock.sendall(b"\0AUTH EXTERNAL " + str(os.getuid()).encode().hex().encode() + b"\r\n")
            answer = b""
            while not answer.endswith(b"\r\n"):
                chunk = sock.recv(256)
                if not chunk:
                    break
                answer += chunk
            if not answer.startswith(b"OK "):
                raise ConnectionError(f"authentication refused: {answer!r}")
            sock.sendall(b"BEGIN\r\n")
            return sock
        except OSError as exc:
            sock.close()
            problems.append(f"{entry}: {exc}")
    raise ConnectionError(f"no D-Bus address to connect to in {address!r} ({'; '.join(problems) or 'none is unix'})")


def accessibility_bus_address() -> str:
    """Where the accessibility bus is, looked up as libatspi does: AT_SPI_BUS_ADDRESS, the X root window's AT_SPI_BUS
    property, then the session bus's org.a11y.Bus."""
    address = os.environ.get("AT_SPI_BUS_ADDRESS") or _x_root_property(b"AT_SPI_BUS")
    if address:
        return address
    session = os.environ.get("DBUS_SESSION_BUS_ADDRESS")
    if not session:
        raise ConnectionError("no accessibility bus: no AT_SPI_BUS on the display and no session bus")
    connection = Connection(session, message_bus=True)
    try:
        (address,) = connection.call(Call("/org/a11y/bus", "org.a11y.Bus", "GetAddress", destination="org.a11y.Bus"))
    finally:
        connection.close()
    return str(address)


def _x_root_property(name: bytes) -> str | None:
    """A string property of the display's root window (libX11 through ctypes), None when there is none."""
    library = ctypes.util.find_library("X11")
    if not library or not os.environ.get("DISPLAY"):
        return None
    x11 = ctypes.CDLL(library)
    x11.XOpenDisplay.restype = ctypes.c_void_p
    x11.XOpenDisplay.argtypes = [ctypes.c_char_p]
    x11.XInternAtom.restype = ctypes.c_ulong
    x11.XInternAtom.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int]
    x11.XDefaultRootWindow.restype = ctypes.c_ulong
    x11.XDefaultRootWindow.argtypes = [ctypes.c_void_p]
    x11.XGetWindowProperty.argtypes = [ctypes.c_void_p, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_long,
                                       ctypes.c_long, ctypes.c_int, ctypes.c_ulong, ctypes.POINTER(ctypes.c_ulong),
                                       ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_ulong),
                                       ctypes.POINTER(ctypes.c_ulong), ctypes.POINTER(ctypes.c_void_p)]  # fmt: skip
    x11.XFree.argtypes = [ctypes.c_void_p]
    x11.XCloseDisplay.argtypes = [ctypes.c_void_p]
    display = x11.XOpenDisplay(None)
    if not display:
        return None
    try:
        atom = x11.XInternAtom(display, name, 1)
        if not atom:
            return None
        kind, size, count, left = ctypes.c_ulong(), ctypes.c_int(), ctypes.c_ulong(), ctypes.c_ulong()
        value = ctypes.c_void_p()
        root = x11.XDefaultRootWindow(display)
        status = x11.XGetWindowProperty(display, root, atom, 0, 4096, 0, 0, kind, size, count, left, value)
        if status != 0 or not value.value:
            return None
        try:
            return ctypes.string_at(value.value, count.value).decode() if size.value == 8 else None
        finally:
            x11.XFree(value)
    finally:
        x11.XCloseDisplay(display)
