"""The searcher browser's URL policy: schemes, hosts in every numeric form, patterns, trusted hosts, DNS."""

from __future__ import annotations

import ipaddress
import socket

import pytest

from symphony_mcp.config import SearchSettings
from symphony_mcp.search.types import UrlRefusedError
from symphony_mcp.search.urls import UrlPolicy, address_problem, normalise_host, parse_ipv4

pytestmark = pytest.mark.anyio


def policy(**settings: object) -> UrlPolicy:
    trusted = settings.pop("trusted", [])
    assert isinstance(trusted, list)
    return UrlPolicy.build(SearchSettings.model_validate(settings), trusted)


async def refused(url: str, checker: UrlPolicy | None = None) -> str:
    with pytest.raises(UrlRefusedError) as caught:
        await (checker or policy()).check(url)
    message = str(caught.value)
    assert "refused" in message and "nothing was loaded" in message
    return message


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("file:///etc/passwd", "local files"),
        ("FILE:///etc/passwd", "local files"),
        ("  file:///etc/passwd", "local files"),
        ("data:text/html,<h1>x</h1>", "inline document"),
        ("javascript:alert(1)", "run a script"),
        ("java\tscript:alert(1)", "run a script"),
        ("chrome://settings", "browser-internal"),
        ("view-source:http://example.org/", "browser-internal"),
        ("about:config", "only about:blank"),
        ("ftp://example.org/file", "only web pages"),
        ("wss://example.org/socket", "web sockets"),
        ("gopher://example.org/", "only http and https"),
        ("example.org/page", "not an absolute URL"),
        ("", "not an absolute URL"),
    ],
)
async def test_only_http_and_https_are_opened(url: str, reason: str) -> None:
    assert reason in await refused(url)


async def test_about_blank_is_allowed() -> None:
    assert (await policy().check("about:blank")).url == "about:blank"


@pytest.mark.parametrize(
    ("host", "address"),
    [
        ("2130706433", "127.0.0.1"),
        ("0x7f.1", "127.0.0.1"),
        ("0x7F000001", "127.0.0.1"),
        ("017700000001", "127.0.0.1"),
        ("127.1", "127.0.0.1"),
        ("127.0.1", "127.0.0.1"),
        ("0177.0.0.1", "127.0.0.1"),
        ("10.0.0.1.", "10.0.0.1"),
        ("%31%32%37.0.0.1", "127.0.0.1"),
        ("192.168.0.0x1", "192.168.0.1"),
    ],
)
def test_numeric_hosts_are_read_as_browsers_read_them(host: str, address: str) -> None:
    assert normalise_host(host) == address


@pytest.mark.parametrize("host", ["256.1.1.1", "1.2.3.4.5", "08.1.1.1", "1.2.3.0x1ffff", "4294967296"])
def test_invalid_numeric_hosts_are_errors(host: str) -> None:
    with pytest.raises(ValueError):
        parse_ipv4(host)


def test_names_are_not_addresses() -> None:
    assert parse_ipv4("example.org") is None
    assert parse_ipv4("1.2.3.example") is None
    assert normalise_host("Example.ORG.") == "example.org"
    assert normalise_host("bücher.example") == "xn--bcher-kva.example"


@pytest.mark.parametrize(
    ("url", "kind"),
    [
        ("http://127.0.0.1/", "loopback"),
        ("http://127.0.0.1:8080/admin", "loopback"),
        ("http://2130706433/", "loopback"),
        ("http://0x7f.1/", "loopback"),
        ("http://0177.0.0.1/", "loopback"),
        ("http://localhost:9000/", "loopback name"),
        ("http://app.localhost/", "loopback name"),
        ("http://LOCALHOST./", "loopback name"),
        ("http://10.1.2.3/", "private"),
        ("http://172.16.0.9/", "private"),
        ("http://192.168.1.1/", "private"),
        ("http://169.254.169.254/latest/meta-data/", "link-local"),
        ("http://0.0.0.0/", "unspecified"),
        ("http://0/", "unspecified"),
        ("http://224.0.0.1/", "multicast"),
        ("http://240.0.0.1/", "private"),
        ("http://100.64.0.1/", "non-public"),
        ("http://[::1]/", "loopback"),
        ("http://[::]/", "unspecified"),
        ("http://[fe80::1]/", "link-local"),
        ("http://[fc00::1]/", "private"),
        ("http://[fec0::1]/", "site-local"),
        ("http://[ff02::1]/", "multicast"),
        ("http://[::ffff:127.0.0.1]/", "loopback"),
        ("http://[::ffff:7f00:1]/", "loopback"),
        ("http://[::ffff:192.168.0.1]/", "private"),
        ("http://[64:ff9b::a00:1]/", "private"),
        ("http://[2002:7f00:1::]/", "loopback"),
        ("https://127.0.0.1\\@example.org/", "loopback"),
    ],
)
async def test_non_public_addresses_are_refused(url: str, kind: str) -> None:
    assert f"is a {kind}" in await refused(url)


async def test_public_addresses_pass() -> None:
    checker = policy()
    assert (await checker.check("http://93.184.216.34/a?b=1#frag")).url == "http://93.184.216.34/a?b=1"
    assert (await checker.check("https://[2606:4700::1111]:8443")).url == "https://[2606:4700::1111]:8443/"
    assert address_problem(ipaddress.ip_address("8.8.8.8")) is None


async def test_credentials_in_urls_are_refused() -> None:
    assert "user name or password" in await refused("http://example.org@127.0.0.1/")
    assert "user name or password" in await refused("https://user:secret@example.org/")


async def test_bad_ports_and_hosts_are_refused() -> None:
    assert "not valid" in await refused("http://example.org:99999/")
    assert "not valid" in await refused("http://256.0.0.1/")
    assert "not valid" in await refused("http:///path")


async def test_trusted_hosts_reach_private_addresses_on_their_port_only() -> None:
    checker = policy(private_hosts="wiki.lan:8080, 10.0.0.5", trusted=["127.0.0.1:8765", "[::1]:9000"])
    assert (await checker.check("http://127.0.0.1:8765/search?q=x")).host == "127.0.0.1"
    assert (await checker.check("http://2130706433:8765/")).url == "http://127.0.0.1:8765/"
    assert (await checker.check("http://[::1]:9000/")).port == 9000
    assert (await checker.check("http://10.0.0.5:1234/")).host == "10.0.0.5"
    assert (await checker.check("http://wiki.lan:8080/page")).host == "wiki.lan"
    assert "127.0.0.1:8766 is not a trusted host" in await refused("http://127.0.0.1:8766/", checker)
    assert "not a trusted host" in await refused("http://[::1]:9001/", checker)
    assert "wiki.lan does not resolve" in await refused("http://wiki.lan:8081/", checker)


async def test_invalid_trusted_host_is_an_error() -> None:
    with pytest.raises(UrlRefusedError, match="trusted host"):
        policy(private_hosts=["wiki.lan:notaport"])


async def test_deny_wins_and_allow_limits() -> None:
    checker = policy(
        allow_urls=["https://docs.example.org/*", "https://*.wiki.example/*"],
        deny_urls=["*/private/*", "*://tracker.*"],
        trusted=["127.0.0.1:8765"],
    )
    # check_syntax: every check but DNS (these names do not resolve offline).
    assert checker.check_syntax("https://docs.example.org/calc/freeze").host == "docs.example.org"
    assert checker.check_syntax("https://EN.wiki.example/x").host == "en.wiki.example"
    assert "allow patterns" in await refused("https://other.example.org/", checker)
    assert "deny pattern '*/private/*'" in await refused("https://docs.example.org/private/a", checker)
    assert "deny pattern" in await refused("https://tracker.example/", checker)
    # Trusted hosts (the engine, the docs server) skip the allow list, never the deny list.
    assert (await checker.check("http://127.0.0.1:8765/search?q=x")).port == 8765
    assert "deny pattern" in await refused("http://127.0.0.1:8765/private/x", checker)
    # Patterns see the normalised URL: a numeric or upper-case host cannot slip past them.
    deny_host = policy(deny_urls=["*://93.184.216.34/*"])
    assert "deny pattern" in await refused("http://1572395042/", deny_host)
    assert "deny pattern" in await refused("HTTP://0x5d.0xb8.0xd8.0x22/page", deny_host)


async def test_names_resolving_to_private_addresses_are_refused() -> None:
    name = socket.gethostname()
    addresses = {info[4][0] for info in socket.getaddrinfo(name, 80, type=socket.SOCK_STREAM)}
    if all(address_problem(ipaddress.ip_address(a)) is None for a in addresses):
        pytest.skip(f"{name} resolves to public addresses only here ({addresses})")
    message = await refused(f"http://{name}:8080/")
    assert f"{name.lower()} resolves to" in message and "not a trusted host" in message
    assert (await policy(private_hosts=[f"{name}:8080"]).check(f"http://{name}:8080/")).port == 8080


async def test_names_that_do_not_resolve_or_resolve_too_slowly_are_refused() -> None:
    assert "does not resolve" in await refused("http://no-such-host.invalid/")
    slow = policy()
    slow.resolve_timeout = 0
    assert "took over 0 s" in await refused("http://example.org/", slow)


async def test_a_failed_lookup_is_remembered_for_the_session() -> None:
    checker = policy()
    first = await refused("http://no-such-host.invalid/a.png", checker)
    checker.resolve_timeout = 0  # a second lookup would now fail differently ("took over 0 s")
    second = await refused("http://no-such-host.invalid/b.png", checker)
    assert "does not resolve" in first and "does not resolve" in second
