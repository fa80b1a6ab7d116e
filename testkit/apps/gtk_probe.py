"""A GTK 3 window for the elements tests, run under Debian's /usr/bin/python3 (python3-gi, gir1.2-gtk-3.0).

argv: state file, window title. It writes JSON to the state file whenever something changes: per button how
often it was clicked, the entry's text, and each widget's box in screen pixels as GTK itself places it.
"""

from __future__ import annotations

import json
import os
import sys

import gi

gi.require_version("Gtk", "3.0")
from gi.repository import GLib, Gtk  # noqa: E402

state_file, title = sys.argv[1], sys.argv[2]
clicks: dict[str, int] = {}
window = Gtk.Window(title=title)
window.set_default_size(500, 300)
window.move(300, 200)
column = Gtk.Box(orientation=Gtk.Orientation.VERTICAL, spacing=8)
widgets: dict[str, Gtk.Widget] = {}
for label in ("Save file", "Cancel", "ONE"):
    button = Gtk.Button(label=label)
    clicks[label] = 0
    button.connect("clicked", lambda _b, name=label: (clicks.__setitem__(name, clicks[name] + 1), write()))
    column.pack_start(button, False, False, 0)
    widgets[label] = button
entry = Gtk.Entry()
entry.get_accessible().set_name("Search box")
entry.connect("changed", lambda _e: write())
column.pack_start(entry, False, False, 0)
widgets["Search box"] = entry
heading = Gtk.Label(label="Section #1")
column.pack_start(heading, False, False, 0)
widgets["Section #1"] = heading
window.add(column)
window.connect("destroy", Gtk.main_quit)


def write() -> bool:
    boxes = {}
    gdk_window = window.get_window()
    if gdk_window is not None:
        _, origin_x, origin_y = gdk_window.get_origin()
        for name, widget in widgets.items():
            allocation = widget.get_allocation()
            x, y = widget.translate_coordinates(window, 0, 0)
            boxes[name] = {"left": origin_x + x, "top": origin_y + y, "width": allocation.width,
                           "height": allocation.height}  # fmt: skip
    state = {"clicks": clicks, "entry": entry.get_text(), "widgets": boxes, "mapped": window.get_mapped()}
    with open(state_file + ".tmp", "w", encoding="utf-8") as out:
        json.dump(state, out, ensure_ascii=False)
    os.replace(state_file + ".tmp", state_file)
    return True


window.connect("configure-event", lambda *_: GLib.idle_add(write) and False)
window.show_all()
GLib.timeout_add(200, write)  # the window manager may move the window after mapping it
Gtk.main()
