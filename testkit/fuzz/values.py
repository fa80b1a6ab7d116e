"""Arguments for a tool, drawn from its own input schema: valid ones, and hostile ones that break it.

Nothing here names a tool. Valid draws come from hypothesis-jsonschema, with a few strategies chosen by the
argument's name (key names, coordinates on the screen, short text) so that valid calls reach real actions
instead of failing the first check. Hostile draws take a valid draw and replace, add or drop arguments:
wrong types, huge, negative and non-finite numbers, empty and 1 MB strings, control characters, traversal
strings for anything that names a path, file, id or URI, odd directories for a work directory, and shell
metacharacters; over the raw client also arrays nested up to 100,000 deep and invalid request ids.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from hypothesis import strategies as st
from hypothesis_jsonschema import from_schema
from jsonschema import Draft202012Validator

# A file the shell payloads try to create (relative: in the server's working directory, inside the sandbox, where
# the stray-file check sees it). The first word of each payload is never a program: open_app runs commands.
CANARY = "fuzz-canary"
SHELL = (
    f"; /usr/bin/touch {CANARY}",
    f"$(/usr/bin/touch {CANARY})",
    f"`/usr/bin/touch {CANARY}`",
    f"| /usr/bin/touch {CANARY}",
    f"&& /usr/bin/touch {CANARY}",
    f"> {CANARY}",
    f"x\n/usr/bin/touch {CANARY}",
    f"x'; /usr/bin/touch {CANARY}; '",
    "$HOME",
    "${IFS}",
    "*",
    "'",
    '"',
    "\\",
    "%s%s%n",
)
TRAVERSAL = (
    "../../etc/passwd",
    "../../../../../../../../etc/shadow",
    "/etc/passwd",
    "/",
    ".",
    "..",
    "~",
    "~/.ssh/id_rsa",
    "/dev/zero",
    "/proc/self/environ",
    "..%2F..%2Fetc%2Fpasswd",
    "%2e%2e%2f%2e%2e%2fetc%2fpasswd",
    "%252e%252e%252fetc",
    "....//....//etc/passwd",
    "..\\..\\windows\\win.ini",
    "C:\\Windows\\System32",
    "file:///etc/passwd",
    "trajectory://../../etc/passwd/steps",
    "a/../../b",
    "task\n",
    "task/../../x",
)
CONTROL = (
    "\x00",
    "a\x00b",
    "\x1b[2J\x1b[31m",
    "\r\n",
    "\t",
    "\x7f",
    "\x08\x08",
    "\u202e",
    "\ufeff",
    "\u200b",
    "\u0085",
)
HUGE = "a" * 1_000_000  # 1 MB: must be refused by its bound, not typed, stored or echoed back
STRINGS = ("", " ", "é" * 64, "🙂", "日本語", "{0}", "{{x}}", "<script>", "null", "NaN")
NUMBERS = (
    0,
    -1,
    1,
    -0.0,
    0.5,
    2**31,
    2**63,
    -(2**63),
    10**30,
    -(10**30),
    10**400,  # a JSON number no float holds: the server reads Infinity
    1e308,
    -1e308,
    5e-324,
)


@dataclass(frozen=True)
class Nested:
    """Arrays nested `depth` deep: written by the raw client as brackets (Python's json cannot write ~1,000)."""

    depth: int

    @property
    def token(self) -> str:
        """What stands for it in the JSON text until the raw client puts the brackets in."""
        return f"\u2063nested-{self.depth}\u2063"


# Around the server's parser's limit (201 levels, counting the message's own) and far past it.
NESTING_DEPTHS = (150, 198, 199, 1_000, 100_000)
# What only a raw JSON-RPC client can send: the MCP client writes NaN and Infinity as null, refuses surrogates and
# cannot encode deep nesting.
RAW_ONLY = (
    math.nan,
    math.inf,
    -math.inf,
    "\ud800",
    "a\udfffb",
    "\udc00\ud800",
    *(Nested(depth) for depth in NESTING_DEPTHS),
)
# Request ids JSON-RPC does not allow (a string or an integer): each must be answered, with id null.
INVALID_IDS: tuple[Any, ...] = ({}, 1.5, True, None, [1], -0.5, 1e3)
# Work directories that are not directories, or not ones a path can name: created in the code work directory by
# the sandbox (file, fifo, symlink to the file), a name past NAME_MAX, a path of 1,500 levels.
ODD_WORKDIRS = ("odd-file", "odd-fifo", "odd-link", "n" * 300, "d/" * 1500)
WRONG_TYPES: tuple[Any, ...] = (None, True, False, [], {}, [1, 2], {"a": 1}, [None], "1", "x", [[[]]])
# Names of keys on any keyboard, for arguments that name keys.
KEYS = ("a", "z", "1", "shift", "ctrl", "alt", "enter", "tab", "esc", "space", "backspace", "f1", "left", "super", "é")

# A command the sandbox allows open_app to start (sandbox.HARMLESS_PROGRAMS): a window that closes itself.
COMMANDS = ("xmessage -timeout 1 fuzz",)

_KEYISH = re.compile(r"(^|_)keys?$")
_PATHISH = re.compile(r"path|file|dir|uri|url|target|(^|_)id$|task")
_COORD = re.compile(r"(^|_)(x|y)$")
_SECONDS = re.compile(r"seconds|duration")
_ID = re.compile(r"(^|_)id$")
_COMMAND = re.compile(r"^(target|command)$")
_WORKDIR = re.compile(r"workdir")


def hostile_strings(name: str) -> st.SearchStrategy[str]:
    pool = [*SHELL, *CONTROL, *STRINGS]
    if _PATHISH.search(name):
        pool = [*TRAVERSAL, *(quote(t, safe="") for t in TRAVERSAL[:4]), *pool]
    if _WORKDIR.search(name):
        pool = [*ODD_WORKDIRS, *pool]
    return st.just(HUGE) | st.sampled_from(pool) | st.text(max_size=40)


def hostile_value(name: str, raw: bool) -> st.SearchStrategy[Any]:
    """Anything but what the argument takes, with the kinds that break servers first (`raw`: also NaN,
    Infinity and lone surrogates, for a client that sends them as they are)."""
    scalars = st.sampled_from([*NUMBERS, *WRONG_TYPES]) | st.integers() | st.floats(allow_nan=raw, allow_infinity=raw)
    lists = st.lists(hostile_strings(name), max_size=3) | st.just(["a"] * 10_000)
    strategies = [hostile_strings(name), scalars, lists]
    if raw:
        strategies = [
            st.sampled_from(RAW_ONLY),
            st.lists(st.sampled_from(RAW_ONLY), min_size=1, max_size=2),
            *strategies,
        ]
    return st.one_of(strategies)


def _property_schema(schema: dict[str, Any], prop: dict[str, Any]) -> dict[str, Any]:
    return {**prop, "$defs": schema["$defs"]} if "$defs" in schema else prop


def _types(prop: dict[str, Any]) -> set[str]:
    kinds = {prop["type"]} if isinstance(prop.get("type"), str) else set(prop.get("type", []))
    for option in prop.get("anyOf", []):
        kinds |= _types(option)
    return kinds


def valid_value(schema: dict[str, Any], name: str, prop: dict[str, Any]) -> st.SearchStrategy[Any]:
    """A value the schema accepts; argument kinds that random draws would never get right are drawn on purpose."""
    kinds = _types(prop)
    general = from_schema(_property_schema(schema, prop))
    if _KEYISH.search(name) and "array" in kinds:
        return st.lists(st.sampled_from(KEYS), min_size=1, max_size=3) | general
    if _KEYISH.search(name) and "string" in kinds:
        return st.sampled_from(KEYS) | general
    if _COORD.search(name) and "number" in kinds:
        return st.floats(0, 700) | general
    if _SECONDS.search(name) and "number" in kinds:
        # Up to a second: longer waits and moves (up to their bounds, 5-10 s) are as valid and only cost time.
        return st.floats(0, 1)
    if _ID.search(name) and "null" in kinds:
        return st.none() | general
    if _COMMAND.search(name) and "string" in kinds:
        return st.sampled_from(COMMANDS) | general
    if name == "text" and "string" in kinds:
        return st.text(max_size=12) | general
    return general


def _partner(name: str) -> str | None:
    """The other coordinate of a pair (x and y, start_x and start_y): valid draws give both or neither."""
    if not _COORD.search(name):
        return None
    return name[:-1] + ("y" if name.endswith("x") else "x")


@st.composite
def _valid(draw: st.DrawFn, schema: dict[str, Any]) -> dict[str, Any]:
    """Every required argument and about a third of the optional ones (coordinates in pairs)."""
    properties: dict[str, Any] = schema.get("properties", {})
    required = set(schema.get("required", []))
    chosen = {name for name in properties if name in required or draw(st.integers(0, 2)) == 0}
    chosen |= {p for name in chosen if (p := _partner(name)) in properties}
    return {name: draw(valid_value(schema, name, properties[name])) for name in sorted(chosen)}


def arguments(schema: dict[str, Any], valid: bool, raw: bool = False) -> st.SearchStrategy[dict[str, Any]]:
    """Arguments for a tool with this input schema: valid ones, or ones broken in 1-3 places."""
    # Arguments are drawn one by one; rules over several (e.g. "a description or both x and y", a root `not`)
    # are kept by the schema's own validator.
    drawn = _valid(schema).filter(Draft202012Validator(schema).is_valid)
    return drawn if valid else _broken(drawn, sorted(schema.get("properties", {})), raw)


@st.composite
def _broken(draw: st.DrawFn, valid: st.SearchStrategy[dict[str, Any]], names: list[str], raw: bool) -> dict[str, Any]:
    """A valid draw with 1-3 arguments replaced by hostile values, added under unknown names, or dropped."""
    result = dict(draw(valid))
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["replace", "replace", "add", "drop"]))
        name = draw(st.sampled_from(names)) if names and kind != "add" else draw(st.sampled_from(["extra", "x_"]))
        if kind == "drop":
            result.pop(name, None)
        else:
            result[name] = draw(hostile_value(name, raw))
    return result


def uri_variables(names: list[str]) -> st.SearchStrategy[dict[str, str]]:
    """Values for a resource template's variables: traversal and hostile strings, raw or percent-encoded."""
    value = hostile_strings("uri") | st.from_regex(r"[A-Za-z0-9._-]{1,12}", fullmatch=True) | st.just("0")
    encoded = value.map(lambda v: quote(v, safe=""))
    return st.fixed_dictionaries({name: value | encoded for name in names})
