"""A WindowsAgentArena server's `/accessibility` XML in the shape `osworld_source.py` reads.

WAA's server writes its trees with OSWorld's older namespace URIs (`uri:deskat:state.at-spi.gnome.org`, ...), which
are renamed to ours (`osworld_tree.NAMESPACES`). On Windows (`?backend=uia`) its tree is pywinauto's, in
`_create_pywinauto_node`'s shape: a `<desktop>` root whose children are the top-level windows; each node's tag is
its Win32 class name, its wrapper type in `win:class` (`<class '...uia_controls.ButtonWrapper'>`), states as
`st:<name>="true|false"` (`visible`, not `showing`), `cp:screencoord` and `cp:size` always. It becomes OSWorld's
Linux shape: each window an application holding the window as a `frame`, roles from the wrapper types (a class
name where no wrapper says more), `st:showing` where `st:visible` is true. Written from WAA's server code; not run
against a real Windows tree here.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from symphony_mcp.elements.osworld_tree import NAMESPACES

_WAA_URIS = {
    "uri:deskat:state.at-spi.gnome.org": NAMESPACES["st"],
    "uri:deskat:attributes.at-spi.gnome.org": NAMESPACES["attr"],
    "uri:deskat:component.at-spi.gnome.org": NAMESPACES["cp"],
    "uri:deskat:document.at-spi.gnome.org": NAMESPACES["doc"],
    "uri:deskat:attributes.document.at-spi.gnome.org": NAMESPACES["docattr"],
    "uri:deskat:text.at-spi.gnome.org": NAMESPACES["txt"],
    "uri:deskat:value.at-spi.gnome.org": NAMESPACES["val"],
    "uri:deskat:action.at-spi.gnome.org": NAMESPACES["act"],
}
WAA_NO_ACTIONS = "WAA's server offers no accessibility actions, only the pointer and keys"
_WIN_CLASS = "{uri:deskat:uia.windows.microsoft.org}class"
_VISIBLE, _SHOWING = f"{{{NAMESPACES['st']}}}visible", f"{{{NAMESPACES['st']}}}showing"
_WRAPPER = re.compile(r"\.(\w+)'>")
# pywinauto's UIA wrapper types, as the AT-SPI roles the reader and models know
WRAPPER_ROLES = {
    "ButtonWrapper": "push button",
    "EditWrapper": "text",
    "ComboBoxWrapper": "combo box",
    "ListViewWrapper": "list",
    "ListItemWrapper": "list item",
    "MenuWrapper": "menu",
    "MenuItemWrapper": "menu item",
    "TabControlWrapper": "page tab list",
    "TreeViewWrapper": "tree",
    "TreeItemWrapper": "tree item",
    "StaticWrapper": "label",
    "ToolbarWrapper": "tool bar",
    "SliderWrapper": "slider",
    "ScrollBarWrapper": "scroll bar",
    "HeaderWrapper": "header",
    "TooltipWrapper": "tool tip",
}


def osworld_shaped(text: str) -> str:
    """WAA's XML with our namespaces, and a UIA tree as applications and frames; unparsable text as it came (the
    tree source then says it is not XML)."""
    try:
        root = ET.fromstring(text)
    except ET.ParseError:
        return text
    for element in root.iter():
        element.attrib = {_renamed(key): value for key, value in element.attrib.items()}
    if root.tag != "desktop":
        return ET.tostring(root, encoding="unicode")
    shaped = ET.Element("desktop-frame", {"name": "main"})
    for window in root:
        application = ET.SubElement(shaped, "application", {"name": window.get("name", "")})
        application.append(_uia_node(window, top=True))
    return ET.tostring(shaped, encoding="unicode")


def _renamed(key: str) -> str:
    if key.startswith("{"):
        uri, _, name = key[1:].partition("}")
        if uri in _WAA_URIS:
            return f"{{{_WAA_URIS[uri]}}}{name}"
    return key


def _uia_node(node: ET.Element, top: bool) -> ET.Element:
    wrapper = _WRAPPER.search(node.get(_WIN_CLASS, ""))
    role = "frame" if top else WRAPPER_ROLES.get(wrapper[1] if wrapper else "", node.tag)
    attributes = {key: value for key, value in node.attrib.items() if key != _WIN_CLASS}
    if attributes.get(_VISIBLE) == "true":
        attributes[_SHOWING] = "true"
    element = ET.Element(role.replace(" ", "-"), attributes)
    element.text = node.text
    for child in node:
        element.append(_uia_node(child, top=False))
    return element
