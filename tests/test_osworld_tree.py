"""The `accessibility_tree` observation in OSWorld's format, read over MCP from a real GTK window under Xvfb and
checked with OSWorld's own metric (desktop_env's check_accessibility_tree) and the XPath and namespaces it uses."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import lxml.etree
import pytest
from mcp import Client
from mcp.types import TextResourceContents

from symphony_mcp.bench.osworld.metrics import load_metric
from symphony_mcp.desktop.virtual_display import VirtualDisplay
from testkit.desktop_apps import ProbeApp, gtk_probe

pytestmark = pytest.mark.anyio
URI = "screen://accessibility_tree"
# OSWorld's metric, loaded as the adapter loads it (desktop_env's metrics __init__ imports modules absent here).
check_accessibility_tree = load_metric("check_accessibility_tree")
NS = sys.modules[check_accessibility_tree.__module__]._accessibility_ns_map["ubuntu"]


@pytest.fixture
def gtk(xdisplay: VirtualDisplay, tmp_path: Path) -> Iterator[ProbeApp]:
    with gtk_probe(tmp_path, "Tree Probe") as app:
        yield app


async def tree(client: Client) -> str:
    result = await client.read_resource(URI)
    contents = result.contents[0]
    assert isinstance(contents, TextResourceContents) and contents.mime_type == "application/xml"
    return contents.text


async def test_gtk_tree_in_osworlds_format_passes_osworlds_own_metric(stdio_client: Client, gtk: ProbeApp) -> None:
    listed = (await stdio_client.list_resources()).resources
    assert URI in {str(r.uri) for r in listed}
    typed = "Grüße 世界"
    field = await stdio_client.call_tool("find_element", {"name": "Search box"})
    assert not field.is_error, field.content
    assert field.structured_content is not None
    match = field.structured_content["matches"][0]["element"]
    done = await stdio_client.call_tool(
        "type", {"element": match["id"], "text": typed, "frame_id": field.structured_content["frame_id"]}
    )
    assert not done.is_error, done.content
    gtk.wait(lambda s: s["entry"] == typed)

    xml = await tree(stdio_client)
    rules = [
        {"xpath": '//application[@name="gtk_probe.py"]//frame[@name="Tree Probe"]//push-button[@name="ONE"]'},
        {"xpath": '//push-button[@name="Save file"][@st:showing="true"][@st:enabled="true"]'},
        {"xpath": '//text[@name="Search box"]', "text": typed, "exact": True},
        {"selectors": ['push-button[name="Cancel"][cp|screencoord]']},
    ]
    assert check_accessibility_tree(xml, rules) == 1.0, xml[:3000]
    assert check_accessibility_tree(xml, [{"xpath": '//push-button[@name="No such button"]'}]) == 0.0
    # The boxes are GTK's own, in OSWorld's "(x, y)" / "(w, h)" text.
    root = lxml.etree.fromstring(xml.encode())
    assert root.tag == "desktop-frame"
    assert root.xpath('//frame[@name="Tree Probe"]')[0].text is None  # no layout whitespace: text is a node's own
    widgets = gtk.state()["widgets"]
    for name, tag in (("ONE", "push-button"), ("Save file", "push-button"), ("Search box", "text")):
        (node,) = root.xpath(f'//{tag}[@name="{name}"]', namespaces=NS)
        box = widgets[name]
        assert node.get(f"{{{NS['cp']}}}screencoord") == f"({box['left']}, {box['top']})", name
        assert node.get(f"{{{NS['cp']}}}size") == f"({box['width']}, {box['height']})", name
    (button,) = root.xpath('//push-button[@name="ONE"]', namespaces=NS)
    assert f"{{{NS['act']}}}click_desc" in button.attrib and button.get(f"{{{NS['st']}}}focusable") == "true"
    assert root.xpath('//push-button[@name="ONE"]/@attr:toolkit', namespaces=NS) == ["gtk"]
