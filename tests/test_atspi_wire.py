"""The AT-SPI reader's D-Bus client against a real bus daemon: calls and replies of the types AT-SPI uses, errors,
many calls written at once and answered in order, a deadline."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from collections.abc import Iterator

import pytest

from symphony_mcp.elements.atspi_wire import Call, CallError, Connection

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
