"""A Qt 6 window for the elements tests (PySide6 from the venv, the xcb platform plugin).

argv: state file, window title. It writes JSON to the state file whenever something changes: per button how
often it was clicked, the field's text, and each widget's box in screen pixels as Qt itself places it. It joins the
accessibility bus only when QT_LINUX_ACCESSIBILITY_ALWAYS_ON=1 is in its environment (the server's app environment).
"""

from __future__ import annotations

import json
import os
import sys

from PySide6.QtCore import QPoint, QTimer
from PySide6.QtWidgets import QApplication, QLabel, QLineEdit, QPushButton, QVBoxLayout, QWidget

state_file, title = sys.argv[1], sys.argv[2]
application = QApplication([sys.argv[0]])
window = QWidget()
window.setWindowTitle(title)
window.resize(500, 300)
window.move(300, 200)
column = QVBoxLayout(window)
clicks: dict[str, int] = {}
widgets: dict[str, QWidget] = {}


def write() -> None:
    boxes = {}
    for name, widget in widgets.items():
        origin = widget.mapToGlobal(QPoint(0, 0))
        boxes[name] = {"left": origin.x(), "top": origin.y(), "width": widget.width(), "height": widget.height()}
    state = {"clicks": clicks, "entry": field.text(), "widgets": boxes, "mapped": window.isVisible()}
    with open(state_file + ".tmp", "w", encoding="utf-8") as out:
        json.dump(state, out, ensure_ascii=False)
    os.replace(state_file + ".tmp", state_file)


def clicked(name: str) -> None:
    clicks[name] += 1
    write()


for label in ("Save file", "Cancel", "ONE"):
    button = QPushButton(label)
    clicks[label] = 0
    button.clicked.connect(lambda _checked=False, name=label: clicked(name))
    column.addWidget(button)
    widgets[label] = button
field = QLineEdit()
field.setAccessibleName("Search box")
field.textChanged.connect(lambda _text: write())
column.addWidget(field)
widgets["Search box"] = field
heading = QLabel("Section #1")
column.addWidget(heading)
widgets["Section #1"] = heading
column.addStretch()
window.show()
timer = QTimer()
timer.timeout.connect(write)  # the window manager may move the window after mapping it
timer.start(200)
sys.exit(application.exec())
