"""The URL policy of the searcher's browser: which URLs it may open, decided before anything is loaded.

Pure (no browser): the browser asks it about every request. The order of checks:
1. the scheme: http and https only (and about:blank); file:, data:, javascript:, chrome:, ... are refused;
2. the host, normalised the way a browser parses it (WHATWG): numeric IPv4 forms such as 2130706433 or
   0x7f.1 are IPv4 addresses, percent escapes and a trailing dot are undone, names lowercased (IDNA);
3. deny patterns (always win), then allow patterns (when any is given, only matching URLs pass);
4. the addresses: a host that is, or resolves to, a loopback, private, link-local, reserved, multicast
   or unspecified address (IPv4, IPv6 and IPv4 inside IPv6) is refused unless it is trusted.
A name is resolved once per session and its addresses are pinned: `addresses` hands the checked addresses to
whoever connects (the browser's proxy, the engines' HTTP client), so the address checked is the address connected
to, and a name that answers differently later (DNS rebinding) changes nothing.
Trusted hosts (settings.private_hosts and the search backend's own servers) are configured places: they
skip the address check and the allow list, never the deny list. Patterns are globs (fnmatch) over the
normalised URL without its fragment, e.g. `https://*.example.org/*`.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from urllib.parse import unquote, urlsplit, urlunsplit

from symphony_mcp.config import SearchSettings
from symphony_mcp.errors import clip
from symphony_mcp.search.types import HostUnresolvedError, UrlRefusedError

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[[str, int], Awaitable[list[IPAddress]]]  # (host, port) -> addresses; OSError when it fails

_DEFAULT_PORTS = {"http": 80, "https": 443}
_SCHEME_REASONS = {
    "file": "it would read local files",
    "data": "it is an inline document, not a web page",
    "javascript": "it would run a script",
    "blob": "it is an in-page object, not a web page",
    "filesystem": "it would read browser storage",
    "chrome": "it is a browser-internal page",
    "chrome-extension": "it is a browser-internal page",
    "chrome-untrusted": "it is a browser-internal page",
    "devtools": "it is a browser-internal page",
    "view-source": "it is a browser-internal page",
    "about": "it is a browser-internal page (only about:blank is allowed)",
    "ftp": "only web pages are browsed",
    "ws": "web sockets are not allowed",
    "wss": "web sockets are not allowed",
}
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
RESOLVE_TIMEOUT_SECONDS = 5.0


@dataclass(frozen=True)
class CheckedUrl:
    """A URL the policy let through: normalised, with the host and port it will connect to."""

    url: str
    host: str
    port: int | None  # None for about:blank


def _refuse(url: str, why: str, kind: type[UrlRefusedError] = UrlRefusedError) -> UrlRefusedError:
    return kind(f"URL {clip(url)} refused: {why}; nothing was loaded")


def parse_ipv4(host: str) -> ipaddress.IPv4Address | None:
    """The WHATWG IPv4 reading of `host` (decimal, 0x hex and 0-octal parts, 1 to 4 of them), or None when the
    host is a name. A name that ends in a number but is no valid address raises ValueError, as browsers refuse it."""
    parts = host.split(".")
    if parts[-1] == "" and len(parts) > 1:
        parts.pop()
    if not _is_number(parts[-1]):
        return None
    if len(parts) > 4 or any(not _is_number(part) for part in parts):
        raise ValueError(f"{host!r} is not a valid IPv4 address")
    numbers = [_number(part) for part in parts]
    if any(n > 255 for n in numbers[:-1]) or numbers[-1] >= 256 ** (5 - len(numbers)):
        raise ValueError(f"{host!r} is not a valid IPv4 address (a part is too large)")
    value = numbers[-1]
    for index, number in enumerate(numbers[:-1]):
        value += number << (8 * (3 - index))
    return ipaddress.IPv4Address(value)


def _is_number(part: str) -> bool:
    if part[:2].lower() == "0x":
        return all(c in "0123456789abcdefABCDEF" for c in part[2:])
    return part.isascii() and part.isdigit()


def _number(part: str) -> int:
    if part[:2].lower() == "0x":
        return int(part[2:] or "0", 16)
    if len(part) > 1 and part.startswith("0"):
        if any(c in "89" for c in part):
            raise ValueError(f"{part!r} is not an octal number")
        return int(part, 8)
    return int(part)


def normalise_host(raw: str) -> str:
    """The host as a browser reads it: IPv6 literal (no brackets), canonical IPv4, or a lowercase ASCII name.
    Raises ValueError for hosts a browser refuses."""
    if raw.startswith("[") and raw.endswith("]"):
        raw = raw[1:-1]
    if ":" in raw:
        if "%" in raw:
            raise ValueError("IPv6 zone ids are not allowed")
        return str(ipaddress.IPv6Address(raw))
    host = unquote(raw).lower()
    if not host or any(c in host for c in " \t\n\r#%/:<>?@[\\]^|\x00"):
        raise ValueError(f"{raw!r} is not a valid host name")
    if not host.isascii():
        host = host.encode("idna").decode("ascii")
    ipv4 = parse_ipv4(host)
    if ipv4 is not None:
        return str(ipv4)
    return host.rstrip(".") or host


def address_problem(ip: IPAddress) -> str | None:
    """Why `ip` is not a public internet address (loopback, private, ...), or None when it is one."""
    if isinstance(ip, ipaddress.IPv6Address):
        embedded = ip.ipv4_mapped or ip.sixtofour or (ip.teredo[1] if ip.teredo else None)
        if embedded is None and ip in _NAT64:
            embedded = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
        if embedded is not None:
            inner = address_problem(embedded)
            if inner is not None:
                return f"{inner} (inside the IPv6 address {ip})"
    checks = (
        ("unspecified", ip.is_unspecified),
        ("loopback", ip.is_loopback),
        ("link-local", ip.is_link_local),
        ("multicast", ip.is_multicast),
        ("private", ip.is_private),
        ("site-local", isinstance(ip, ipaddress.IPv6Address) and ip.is_site_local),
        ("reserved", ip.is_reserved),
        ("non-public", not ip.is_global),
    )
    kind = next((name for name, hit in checks if hit), None)
    return None if kind is None else f"{ip} is a {kind} address"


def _host_port(entry: str) -> tuple[str, int | None]:
    """A trusted-host entry (host, host:port, [v6]:port) as (normalised host, port or None for any port)."""
    parts = urlsplit("//" + entry.strip())
    if not parts.hostname:
        raise ValueError(f"{entry!r} is not a host or host:port")
    return normalise_host(parts.hostname), parts.port


@dataclass
class UrlPolicy:
    """The checks of one browsing session; resolved addresses are pinned for the session."""

    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()
    trusted: frozenset[tuple[str, int | None]] = frozenset()
    resolve_timeout: float = RESOLVE_TIMEOUT_SECONDS
    resolver: Resolver | None = None  # None: the system's (getaddrinfo)
    # One lookup per name, shared by concurrent askers: its addresses, or why there are none.
    _resolved: dict[str, asyncio.Task[list[IPAddress] | str]] = field(default_factory=dict, repr=False)

    @classmethod
    def build(cls, settings: SearchSettings, trusted_hosts: Iterable[str] = ()) -> UrlPolicy:
        """The policy of the settings, trusting settings.private_hosts and the backend's `trusted_hosts`."""
        trusted = set()
        for entry in [*settings.private_hosts, *trusted_hosts]:
            try:
                trusted.add(_host_port(entry))
            except ValueError as exc:
                raise UrlRefusedError(f"trusted host {clip(entry)} is not valid: {exc}") from None
        return cls(allow=tuple(settings.allow_urls), deny=tuple(settings.deny_urls), trusted=frozenset(trusted))

    def is_trusted(self, host: str, port: int) -> bool:
        return (host, port) in self.trusted or (host, None) in self.trusted

    def check_syntax(self, url: str) -> CheckedUrl:
        """Every check but the addresses behind a host name (no DNS): scheme, host, patterns, literal addresses."""
        cleaned = "".join(c for c in url.strip("\x00 \t\n\r\f") if c not in "\t\n\r")
        scheme, colon, _ = cleaned.partition(":")
        scheme = scheme.lower()
        if not colon or not scheme or not scheme.isascii() or not (scheme[0].isalpha()):
            raise _refuse(url, "it is not an absolute URL (http:// or https://)")
        if scheme == "about" and cleaned.lower() == "about:blank":
            return CheckedUrl(url="about:blank", host="", port=None)
        if scheme not in _DEFAULT_PORTS:
            reason = _SCHEME_REASONS.get(scheme, "only http and https are allowed")
            raise _refuse(url, f"the scheme {scheme}: is not allowed ({reason}); only http and https pages are")
        parts = urlsplit(cleaned.replace("\\", "/"))
        if parts.username is not None or parts.password is not None:
            raise _refuse(url, "it carries a user name or password before the host")
        try:
            host = normalise_host(parts.netloc.rpartition(":")[0] if _has_port(parts.netloc) else parts.netloc)
            port = _DEFAULT_PORTS[scheme] if parts.port is None else parts.port
        except ValueError as exc:
            raise _refuse(url, f"its host or port is not valid ({exc})") from None
        netloc = f"[{host}]" if ":" in host else host
        if port != _DEFAULT_PORTS[scheme]:
            netloc += f":{port}"
        normal = urlunsplit((scheme, netloc, parts.path or "/", parts.query, ""))
        self._check_patterns(url, normal, host, port)
        if not self.is_trusted(host, port):
            literal = _literal(host)
            problem = address_problem(literal) if literal is not None else _local_name(host)
            if problem is not None:
                raise _refuse(url, f"{problem}, and {host}:{port} is not a trusted host")
        return CheckedUrl(url=normal, host=host, port=port)

    async def check(self, url: str) -> CheckedUrl:
        """The URL if the browser may open it; otherwise UrlRefusedError saying why. Resolves host names (off the
        event loop, bounded by `resolve_timeout`): a name with any non-public address is refused."""
        checked = self.check_syntax(url)
        if checked.port is not None and not self.is_trusted(checked.host, checked.port):
            await self._checked_addresses(url, checked.host, checked.port)
        return checked

    async def addresses(self, host: str, port: int) -> list[IPAddress]:
        """The only addresses a connection to host:port may use, each checked (all of them, a name resolved once
        for the session); UrlRefusedError when the host is not valid or any address is refused. No patterns: a
        connection carries no URL, so the patterns apply by their host part (`_check_site_patterns`); the browser's
        route checks whole URLs per request."""
        try:
            name = normalise_host(host)
        except ValueError as exc:
            raise _refuse(f"{host}:{port}", f"its host is not valid ({exc})") from None
        self._check_site_patterns(f"{host}:{port}", name, port)
        return await self._checked_addresses(f"{host}:{port}", name, port)

    async def _checked_addresses(self, target: str, host: str, port: int) -> list[IPAddress]:
        trusted = self.is_trusted(host, port)
        literal = _literal(host)
        problem = None if trusted else address_problem(literal) if literal is not None else _local_name(host)
        if problem is not None:
            raise _refuse(target, f"{problem}, and {host}:{port} is not a trusted host")
        if literal is not None:
            return [literal]
        resolved = await self._resolve(target, host, port)
        for ip in [] if trusted else resolved:
            problem = address_problem(ip)
            if problem is not None:
                raise _refuse(target, f"{host} resolves to {problem}, and it is not a trusted host")
        return resolved

    def _check_patterns(self, url: str, normal: str, host: str, port: int) -> None:
        denied = next((p for p in self.deny if fnmatchcase(normal, p)), None)
        if denied is not None:
            raise _refuse(url, f"it matches the deny pattern {denied!r} (settings search.deny_urls)")
        if self.allow and not self.is_trusted(host, port) and not any(fnmatchcase(normal, p) for p in self.allow):
            raise _refuse(url, f"it matches none of the allow patterns {list(self.allow)} (settings search.allow_urls)")

    def _check_site_patterns(self, target: str, host: str, port: int) -> None:
        """The patterns as far as a connection to host:port can tell: a deny pattern for a whole site
        (`scheme://HOST/*`) refuses it; with allow patterns, a host that no pattern's host part admits is refused
        (a pattern whose host is not spelled out, e.g. `*docs*`, admits any)."""
        names = (host, f"{host}:{port}")
        for pattern in self.deny:
            site = _site_glob(pattern)
            if site is not None and site[1] in ("", "/", "/*", "*") and any(fnmatchcase(n, site[0]) for n in names):
                raise _refuse(target, f"it matches the deny pattern {pattern!r} (settings search.deny_urls)")
        if not self.allow or self.is_trusted(host, port):
            return
        for pattern in self.allow:
            site = _site_glob(pattern)
            if site is None or any(fnmatchcase(n, site[0]) for n in names):
                return
        raise _refuse(
            target, f"its host matches none of the allow patterns {list(self.allow)} (settings search.allow_urls)"
        )

    async def _resolve(self, url: str, host: str, port: int) -> list[IPAddress]:
        """The host's addresses, looked up once per session even when asked for concurrently (so every check and
        connection sees the same answer); a failure is remembered too, so a page's many requests to a dead name do
        not each wait for the resolver again."""
        lookup = self._resolved.get(host)
        if lookup is None:
            lookup = self._resolved[host] = asyncio.ensure_future(self._lookup(host, port))
        known = await asyncio.shield(lookup)  # one asker cancelled does not cancel the others' lookup
        if isinstance(known, str):
            raise _refuse(url, known, HostUnresolvedError)
        return known

    async def _lookup(self, host: str, port: int) -> list[IPAddress] | str:
        resolver = self.resolver or _system_resolver
        try:
            found = await asyncio.wait_for(resolver(host, port), timeout=self.resolve_timeout)
        except TimeoutError:
            return f"resolving {host} took over {self.resolve_timeout:g} s"
        except OSError as exc:
            return f"the host name {host} does not resolve ({exc.strerror or exc})"
        return found or f"the host name {host} has no address"


async def _system_resolver(host: str, port: int) -> list[IPAddress]:
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(ipaddress.ip_address(str(info[4][0]).partition("%")[0]) for info in infos))


def _site_glob(pattern: str) -> tuple[str, str] | None:
    """(host glob, the rest) of a pattern written `scheme://host/...`; None when its host is not spelled out."""
    scheme, separator, rest = pattern.partition("://")
    host, slash, path = rest.partition("/")
    if not separator or not all(c.isalnum() or c in "*+.-" for c in scheme) or host in ("", "*"):
        return None
    return host.lower(), slash + path


def _has_port(netloc: str) -> bool:
    hostport = netloc.rpartition("@")[2]
    return ":" in hostport.rpartition("]")[2]


def _literal(host: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


def _local_name(host: str) -> str | None:
    """Names browsers resolve to loopback themselves, whatever DNS says."""
    if host == "localhost" or host.endswith(".localhost"):
        return f"{host} is a loopback name"
    return None
