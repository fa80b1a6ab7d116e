"""The searcher's browser reaches only what the URL policy allows, at the network level (issue 25, items 3, 4).

A page from a trusted site tries every way a page can reach a private server: fetch, XHR, EventSource, beacons,
dedicated, shared and service workers (with their own fetches and web sockets), web sockets, WebRTC (STUN over UDP,
TURN over TCP), prefetch, preconnect, DNS prefetch, images, style sheets, scripts, frames, a form post, a meta
refresh, window.open, a link clicked, and a name that rebinds (the policy's resolver first answers a public address,
then loopback, and the system resolves the name, `vm` on these machines via /etc/hosts, to 127.0.0.1). Private TCP
and UDP listeners count what reaches them: nothing may. The refusals must also show up in the session's views.
"""

from __future__ import annotations

import asyncio
import ipaddress
import os
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from symphony_mcp.config import SearchSettings
from symphony_mcp.search.browser import ChromiumBrowser
from symphony_mcp.search.types import Refusal, UrlRefusedError
from symphony_mcp.search.urls import IPAddress, UrlPolicy
from testkit.listeners import PrivateListeners
from testkit.processes import chromium_processes
from testkit.waiting import wait_for

pytestmark = pytest.mark.anyio

SETTINGS = SearchSettings(step_timeout_seconds=5)
REBINDING_NAME = "vm"  # /etc/hosts: 127.0.0.1 here; skipped where it is not
PUBLIC = ipaddress.ip_address("93.184.216.34")


def attack_page(private: PrivateListeners) -> str:
    http = f"http://127.0.0.1:{private.tcp_port}"
    rebound = f"http://{REBINDING_NAME}:{private.tcp_port}"
    return f"""<!doctype html><html><head><title>attack</title>
<link rel="prefetch" href="{http}/prefetch"><link rel="preconnect" href="{http}">
<link rel="dns-prefetch" href="{rebound}"><link rel="stylesheet" href="{http}/style.css">
<script src="{http}/script.js"></script></head><body>
<a id="private" href="{http}/clicked">private link</a>
<img src="{http}/img.png"><img src="{rebound}/rb-img.png">
<iframe src="{http}/frame"></iframe><iframe src="/refresh"></iframe><iframe name="sink"></iframe>
<form id="form" action="{http}/form" method="post" target="sink"><input name="q" value="x"></form>
<script>
const settled = (p) => p.then(() => "loaded", () => "failed");
const event = (make) => new Promise((resolve) => {{
  try {{ const thing = make(resolve); }} catch (e) {{ resolve("threw"); }}
  setTimeout(() => resolve("pending"), 4000);
}});
const tries = {{
  fetch: settled(fetch("{http}/fetch", {{mode: "no-cors"}})),
  rebinding: settled(fetch("{rebound}/rb", {{mode: "no-cors"}})),
  xhr: event((done) => {{ const x = new XMLHttpRequest(); x.onloadend = () => done("ended"); x.open("GET",
    "{http}/xhr"); x.send(); }}),
  eventsource: event((done) => {{ const e = new EventSource("{http}/events"); e.onerror = () => {{ e.close();
    done("error"); }}; }}),
  beacon: Promise.resolve(String(navigator.sendBeacon("{http}/beacon", "x"))),
  websocket: event((done) => {{ const w = new WebSocket("ws://127.0.0.1:{private.tcp_port}/ws");
    w.onclose = () => done("closed"); }}),
  worker: event((done) => {{ const w = new Worker("/worker.js"); w.onmessage = (m) => done(m.data); }}),
  shared: event((done) => {{ const w = new SharedWorker("/worker.js"); w.port.onmessage = (m) => done(m.data);
    w.port.start(); }}),
  serviceworker: navigator.serviceWorker ? settled(navigator.serviceWorker.register("/worker.js"))
    : Promise.resolve("absent"),
  webrtc: event(async (done) => {{
    const pc = new RTCPeerConnection({{iceServers: [{{urls: "stun:127.0.0.1:{private.udp_port}"}},
      {{urls: "turn:127.0.0.1:{private.tcp_port}?transport=tcp", username: "u", credential: "p"}},
      {{urls: "turn:127.0.0.1:{private.udp_port}?transport=udp", username: "u", credential: "p"}}]}});
    pc.onicegatheringstatechange = () => {{ if (pc.iceGatheringState === "complete") done("gathered"); }};
    pc.createDataChannel("x");
    await pc.setLocalDescription(await pc.createOffer());
  }}),
  form: Promise.resolve((document.getElementById("form").submit(), "submitted")),
}};
Promise.all(Object.entries(tries).map(([k, p]) => p.then((v) => [k, v]))).then((r) => {{
  window.__attempts = Object.fromEntries(r); }});
</script></body></html>"""


def worker_script(private: PrivateListeners) -> str:
    http = f"http://127.0.0.1:{private.tcp_port}"
    return f"""
const attempt = async () => {{
  const results = [];
  try {{ await fetch("{http}/worker-fetch", {{mode: "no-cors"}}); results.push("fetched"); }}
  catch (e) {{ results.push("fetch failed"); }}
  results.push(await new Promise((done) => {{ const w = new WebSocket("ws://127.0.0.1:{private.tcp_port}/wws");
    w.onclose = () => done("closed"); setTimeout(() => done("pending"), 3000); }}));
  return results.join(", ");
}};
const reply = (port) => attempt().then((r) => port.postMessage(r));
if (typeof onconnect !== "undefined" || self.constructor.name === "SharedWorkerGlobalScope") {{
  onconnect = (e) => reply(e.ports[0]);
}} else if (typeof postMessage === "function" && self.constructor.name === "DedicatedWorkerGlobalScope") {{
  reply(self);
}} else {{ attempt(); }}
"""


@pytest.fixture
def private() -> Iterator[PrivateListeners]:
    listeners = PrivateListeners()
    listeners.start()
    probe = socket.create_connection(("127.0.0.1", listeners.tcp_port))  # the counter counts
    probe.sendall(b"ping")
    probe.close()
    wait_for(lambda: listeners.connections == 1 and listeners.received == 4)
    listeners.connections = listeners.received = 0
    yield listeners
    listeners.close()


@pytest.fixture
def attack_site(private: PrivateListeners) -> Iterator[str]:
    pages = {
        "/": ("text/html", attack_page(private)),
        "/worker.js": ("text/javascript", worker_script(private)),
        "/refresh": ("text/html", f'<meta http-equiv="refresh" content="0;url=http://127.0.0.1:{private.tcp_port}/r">'),
    }

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            content_type, body = pages.get(self.path, ("text/plain", "not here"))
            data = body.encode()
            self.send_response(200 if self.path in pages else 404)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: object) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


class RebindingResolver:
    """Answers a public address for REBINDING_NAME the first time, loopback after; counts what it is asked."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    async def __call__(self, host: str, port: int) -> list[IPAddress]:
        self.asked.append(host)
        if host == REBINDING_NAME:
            return [PUBLIC] if self.asked.count(host) == 1 else [ipaddress.ip_address("127.0.0.1")]
        infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
        return [ipaddress.ip_address(info[4][0]) for info in infos]


def _resolves_to_loopback(name: str) -> bool:
    try:
        return ipaddress.ip_address(socket.gethostbyname(name)).is_loopback
    except OSError:
        return False


@pytest.mark.skipif(not _resolves_to_loopback(REBINDING_NAME), reason=f"{REBINDING_NAME} does not resolve to loopback")
async def test_no_route_of_a_page_reaches_a_private_server(private: PrivateListeners, attack_site: str) -> None:
    resolver = RebindingResolver()
    policy = UrlPolicy.build(SETTINGS, [attack_site])
    policy.resolver = resolver
    before = chromium_processes()
    browser = await ChromiumBrowser.start(SETTINGS, policy)
    try:
        started = chromium_processes() - before
        assert started and all(_net_namespace(pid) != _net_namespace(os.getpid()) for pid in started)
        await browser.open(f"http://{attack_site}/")
        assert browser.page is not None
        handle = await browser.page.wait_for_function("() => window.__attempts", timeout=30_000)
        attempts = await handle.json_value()
        assert attempts["fetch"] == "failed" and attempts["rebinding"] == "failed", attempts
        refused: list[Refusal] = []
        view = await browser.view()
        refused += view.refused
        with pytest.raises(UrlRefusedError, match="is a loopback address"):  # mouse down, preconnect, click
            await browser.click(next(e for e in view.elements if e.name == "private link"))
        # The name is pinned to its first (public) answer: the navigation goes there, unreachable offline.
        await browser.open(f"http://{REBINDING_NAME}:{private.tcp_port}/rb2")
        rebound = await browser.view()
        refused += rebound.refused
        assert rebound.load_error is not None and "could not be loaded" in rebound.load_error, rebound.load_error
        await browser.page.evaluate(f"window.open('http://127.0.0.1:{private.tcp_port}/popup')")  # stays in the page
        refused += (await browser.view()).refused
    finally:
        await browser.close()
    assert (private.connections, private.received, private.packets) == (0, 0, 0)
    assert resolver.asked.count(REBINDING_NAME) == 1  # resolved once, pinned: the connection used that answer
    urls = {r.url for r in refused}
    for path in ("/fetch", "/xhr", "/img.png", "/clicked", "/popup"):
        assert f"http://127.0.0.1:{private.tcp_port}{path}" in urls, urls
    assert f"127.0.0.1:{private.tcp_port}" in urls  # a connection no route saw (a worker's socket, TURN, ...)


def _net_namespace(pid: int) -> str:
    return os.readlink(Path(f"/proc/{pid}/ns/net"))
