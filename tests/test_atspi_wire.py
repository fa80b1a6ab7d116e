"""The AT-SPI reader's D-Bus client against a real bus daemon: calls and replies of the types AT-SPI uses, errors,
many calls written at once and answered in order, a deadline."""

from __future__ import annotations

import os
import re
import shutil
import struct
import subprocess
import time
from collections.abc import Iterator

import pytest

from symphony_mcp.elements.atspi_wire import Call, CallError, Connection, Reader

DAEMON = ("/org/freedesktop/DBus", "org.freedesktop.DBus")
pytestmark = pytest.mark.skipif(shutil.which("dbus-daemon") is None, reason="dbus-daemon is not installed")


@pytest.fixture
def bus() -> Iterator[Connection]:
    daemon = subprocess.Popen(
        ["dbus-daemon", "--session", "--nofork", "--print-address=1"], stdout=subprocess.PIPE, text=True
    )
    assert daemon.stdout is not None
    address = daemon.stdout.readline().strip()
    connection = Connection(address, message_bus=True)
    try:
        yield connection
    finally:
        connection.close()
        daemon.terminate()
        daemon.wait(timeout=5)


def daemon_call(member: str, signature: str = "", *args: object) -> Call:
    return Call(*DAEMON, member, signature, args, destination="org.freedesktop.DBus")


def test_replies_of_each_type_come_back_as_python_values(bus: Connection) -> None:
    (names,) = bus.call(daemon_call("ListNames"))  # as
    assert "org.freedesktop.DBus" in names
    (own,) = [name for name in names if name.startswith(":")]
    assert bus.call(daemon_call("GetConnectionUnixProcessID", "s", own)) == [os.getpid()]  # s -> u
    assert bus.call(daemon_call("NameHasOwner", "s", own)) == [True]  # b
    (credentials,) = bus.call(daemon_call("GetConnectionCredentials", "s", own))  # a{sv}
    assert credentials["UnixUserID"] == os.getuid() and credentials["ProcessID"] == os.getpid()
    assert os.getgid() in credentials["UnixGroupIDs"]  # au
    introspect = Call(
        DAEMON[0], "org.freedesktop.DBus.Introspectable", "Introspect", destination="org.freedesktop.DBus"
    )
    (introspection,) = bus.call(introspect, 5)
    assert '<interface name="org.freedesktop.DBus">' in introspection


def test_an_error_reply_is_raised_with_its_name_and_the_connection_goes_on(bus: Connection) -> None:
    with pytest.raises(CallError, match=re.escape("org.freedesktop.DBus.Error.NameHasNoOwner")):
        bus.call(daemon_call("GetNameOwner", "s", "org.example.Nobody"))
    assert bus.call(daemon_call("NameHasOwner", "s", "org.freedesktop.DBus")) == [True]


def test_calls_written_at_once_are_answered_in_the_order_asked(bus: Connection) -> None:
    names = [f"org.example.N{i}" for i in range(2000)]  # about 190 KB of calls: more than a socket buffer holds
    calls = [daemon_call("NameHasOwner", "s", name) for name in names]
    calls[1000] = daemon_call("GetNameOwner", "s", "org.example.Nobody")
    calls[1500] = daemon_call("NameHasOwner", "s", "org.freedesktop.DBus")
    answers = bus.calls(calls, time.monotonic() + 30)
    assert isinstance(answers[1000], CallError)
    assert answers[1500] == [True]
    assert [answer for i, answer in enumerate(answers) if i not in (1000, 1500)] == [[False]] * 1998


def test_a_call_past_its_deadline_has_no_answer(bus: Connection) -> None:
    assert bus.calls([daemon_call("ListNames")], time.monotonic() - 1) == [None]
    assert bus.call(daemon_call("NameHasOwner", "s", "org.freedesktop.DBus")) == [True]


@pytest.mark.parametrize("order", ["<", ">"])
def test_the_types_a_walk_reads_unmarshal_in_either_byte_order(order: str) -> None:
    """A window's children (a(so)), a box ((iiii)), a state set (au) and a name (v), marshalled by hand as the spec
    lays them out (each value at its alignment, structs 8-aligned, array lengths in bytes)."""
    data = bytearray()

    def pad(size: int) -> None:
        data.extend(b"\0" * (-len(data) % size))

    def uint(value: int) -> None:
        pad(4)
        data.extend(struct.pack(order + "I", value))

    def text(value: str) -> None:
        uint(len(value.encode()))
        data.extend(value.encode() + b"\0")

    uint(0)  # a(so): its length, set below
    length_at = len(data) - 4
    pad(8)
    start = len(data)
    for name, path in ((":1.5", "/org/a11y/atspi/accessible/12"), (":1.6", "/x")):
        pad(8)
        text(name)
        text(path)
    data[length_at : length_at + 4] = struct.pack(order + "I", len(data) - start)
    pad(8)
    data.extend(struct.pack(order + "iiii", 10, -20, 300, 4))
    uint(8)
    data.extend(struct.pack(order + "II", 1 << 25, 1 << 4))
    data.extend(b"\x01s\0")  # a variant: its signature 's', then the string
    text("Grüße")
    assert Reader(bytes(data), order).values("a(so)(iiii)auv", 0) == [
        [(":1.5", "/org/a11y/atspi/accessible/12"), (":1.6", "/x")],
        (10, -20, 300, 4),
        [1 << 25, 1 << 4],
        "Grüße",
    ]
