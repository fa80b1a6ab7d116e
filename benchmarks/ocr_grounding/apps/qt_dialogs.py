"""Dialogs and a settings form in Qt widgets (PySide6, xcb) that report where every piece of their text is drawn.

Usage: QT_QPA_PLATFORM=xcb python qt_dialogs.py WIDTHxHEIGHT+X+Y STYLE VARIANT

The protocol is tk_form.py's (one JSON line once drawn, `edit TEXT` replaces the status line). VARIANT picks
the font and seeds the random short labels. Where text is drawn comes from Qt's style, as the style itself
places it when painting: the element's rect (QStyle.subElementRect / subControlRect, tab and menu item rects)
and QStyle.itemTextRect for the text's alignment in it; line edits by their cursor rect; character edges by
QFontMetrics.horizontalAdvance.
"""

from __future__ import annotations

import json
import random
import string
import sys
from typing import Any

from PySide6.QtCore import QPoint, QRect, QSocketNotifier, Qt, QTimer
from PySide6.QtGui import QColor, QFont, QFontMetrics, QPalette
from PySide6.QtWidgets import (
    QApplication,
    QCheckBox,
    QComboBox,
    QFrame,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QMainWindow,
    QPushButton,
    QRadioButton,
    QStyle,
    QStyleOptionButton,
    QStyleOptionComboBox,
    QStyleOptionTab,
    QTabBar,
    QVBoxLayout,
    QWidget,
)

TITLE = "Sync preferences"
FONTS = (("Noto Sans", 13), ("DejaVu Sans", 12), ("Liberation Serif", 15))
STATUS = "Idle: last sync finished without errors a few minutes ago"
MENUS = ("File", "Edit", "View", "Tools")
FIELDS = (("Server:", "sync.example.org"), ("Port:", "8443"), ("Folder:", "~/Documents/shared"), ("Key:", "ab12-cd34"))
DIALOGS = (
    ("Overwrite the file on the server?", ("Yes", "No", "Abort")),
    ("Setup wizard, page 3 of 5", ("Back", "Next", "Done")),
    ("Remove this device from sync?", ("OK", "Cancel", "Help")),
)
OPTIONS = ("Pause on battery", "Skip hidden", "Log", "Go fast")
SPEEDS = ("Slow", "Auto", "Max")
TABS = ("Account", "Sync", "Network", "About")
DISABLED = ("Apply", "Revert", "Sync now", "Reset")  # greyed out: low-contrast text
COLOURS = ("#1565c0", "#2e7d32", "#c62828", "#6a1b9a", "#ef6c00", "#00838f", "#f9a825", "#455a64")


def short_labels(rng: random.Random, count: int) -> list[str]:
    return ["".join(rng.choice(string.ascii_letters) for _ in range(rng.choice((2, 3)))) for _ in range(count)]


def text_line(kind: str, widget: QWidget, text: str, rect: QRect, alignment: Qt.AlignmentFlag) -> dict[str, Any]:
    """`text` drawn by the style in `rect` (widget coordinates) with `alignment`, in screen px."""
    metrics = QFontMetrics(widget.font())
    placed = widget.style().itemTextRect(metrics, rect, alignment, True, text)
    origin = widget.mapToGlobal(QPoint(placed.left(), placed.top()))
    edges = [origin.x() + metrics.horizontalAdvance(text[:i]) for i in range(len(text) + 1)]
    return {
        "kind": kind,
        "text": text,
        "edges": edges,
        "top": origin.y(),
        "bottom": origin.y() + metrics.height(),
        "clear": True,
    }


class Window(QMainWindow):
    def __init__(self, style_name: str, variant: int) -> None:
        super().__init__()
        self.setWindowTitle(TITLE)
        family, size = FONTS[variant % len(FONTS)]
        font = QFont(family)
        font.setPixelSize(size)
        QApplication.setFont(font)
        self.rng = random.Random(f"qt:{style_name}:{variant}")
        self.buttons: list[QPushButton] = []
        self.checks: list[QCheckBox | QRadioButton] = []
        self.labels: list[tuple[str, QLabel]] = []
        self.edits: list[QLineEdit] = []
        self.menu_actions = [self.menuBar().addMenu(name).menuAction() for name in MENUS]
        central = QWidget()
        self.setCentralWidget(central)
        outer = QVBoxLayout(central)
        heading = QLabel("Sync preferences")
        heading_font = QFont(font)
        heading_font.setPixelSize(round(size * 1.6))
        heading_font.setBold(True)
        heading.setFont(heading_font)
        outer.addWidget(heading)
        self.labels.append(("heading", heading))
        self.tabs = QTabBar()
        for tab in TABS:
            self.tabs.addTab(tab)
        outer.addWidget(self.tabs)
        columns = QHBoxLayout()
        outer.addLayout(columns)
        columns.addWidget(self._form())
        columns.addWidget(self._dialogs())
        columns.addStretch(1)
        outer.addStretch(1)
        self.status = QLabel(STATUS)
        self.status.setFrameShape(QFrame.Shape.Panel)
        self.status.setFrameShadow(QFrame.Shadow.Sunken)
        outer.addWidget(self.status)
        self.labels.append(("status", self.status))

    def _label(self, text: str, kind: str = "label") -> QLabel:
        label = QLabel(text)
        self.labels.append((kind, label))
        return label

    def _button(self, text: str) -> QPushButton:
        button = QPushButton(text)
        button.setAutoDefault(False)
        self.buttons.append(button)
        return button

    def _form(self) -> QWidget:
        box = QWidget()
        grid = QGridLayout(box)
        for row, (caption, value) in enumerate(FIELDS):
            grid.addWidget(self._label(caption), row, 0)
            edit = QLineEdit(value)
            edit.setMinimumWidth(200)
            self.edits.append(edit)
            grid.addWidget(edit, row, 1)
        grid.addWidget(self._label("Mode:"), len(FIELDS), 0)
        self.combo = QComboBox()
        self.combo.addItems(["two-way", "upload-only"])
        grid.addWidget(self.combo, len(FIELDS), 1)
        for i, option in enumerate(OPTIONS):
            check = QCheckBox(option)
            check.setChecked(i % 2 == 0)
            self.checks.append(check)
            grid.addWidget(check, len(FIELDS) + 1 + i // 2, i % 2)
        speeds = QHBoxLayout()
        for i, name in enumerate(SPEEDS):
            radio = QRadioButton(name)
            radio.setChecked(i == 1)
            self.checks.append(radio)
            speeds.addWidget(radio)
        grid.addLayout(speeds, len(FIELDS) + 3, 0, 1, 2)
        return box

    def _dialogs(self) -> QWidget:
        box = QWidget()
        layout = QVBoxLayout(box)
        for question, answers in DIALOGS:
            frame = QFrame()
            frame.setFrameShape(QFrame.Shape.StyledPanel)
            inner = QVBoxLayout(frame)
            inner.addWidget(self._label(question))
            row = QHBoxLayout()
            for answer in answers:
                row.addWidget(self._button(answer))
            row.addStretch(1)
            inner.addLayout(row)
            layout.addWidget(frame)
        toolbar = QGridLayout()
        for i, text in enumerate(("OK", "Go", "Add", "Run", *short_labels(self.rng, 11))):
            button = self._button(text)
            palette = button.palette()
            palette.setColor(QPalette.ColorRole.Button, QColor(COLOURS[i % len(COLOURS)]))
            palette.setColor(QPalette.ColorRole.ButtonText, QColor("white" if i % 3 else "black"))
            button.setPalette(palette)
            toolbar.addWidget(button, i // 5, i % 5)
        layout.addLayout(toolbar)
        greyed = QHBoxLayout()
        for text in DISABLED:
            button = self._button(text)
            button.setEnabled(False)
            greyed.addWidget(button)
        layout.addLayout(greyed)
        return box

    def report(self, edited: bool = False) -> None:
        lines = []
        bar = self.menuBar()
        for action in self.menu_actions:
            lines.append(
                text_line("menu", bar, action.text(), bar.actionGeometry(action), Qt.AlignmentFlag.AlignCenter)
            )
        for kind, label in self.labels:
            lines.append(text_line(kind, label, label.text(), label.contentsRect(), label.alignment()))
        for button in self.buttons:
            option = QStyleOptionButton()
            button.initStyleOption(option)
            rect = button.style().subElementRect(QStyle.SubElement.SE_PushButtonContents, option, button)
            lines.append(text_line("button", button, button.text(), rect, Qt.AlignmentFlag.AlignCenter))
        for check in self.checks:
            option = QStyleOptionButton()
            check.initStyleOption(option)
            element = (
                QStyle.SubElement.SE_CheckBoxContents
                if isinstance(check, QCheckBox)
                else QStyle.SubElement.SE_RadioButtonContents
            )
            rect = check.style().subElementRect(element, option, check)
            alignment = Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter
            lines.append(text_line("check", check, check.text(), rect, alignment))
        for index in range(self.tabs.count()):
            option = QStyleOptionTab()
            self.tabs.initStyleOption(option, index)
            rect = self.tabs.style().subElementRect(QStyle.SubElement.SE_TabBarTabText, option, self.tabs)
            lines.append(text_line("tab", self.tabs, self.tabs.tabText(index), rect, Qt.AlignmentFlag.AlignCenter))
        option = QStyleOptionComboBox()
        self.combo.initStyleOption(option)
        field = self.combo.style().subControlRect(
            QStyle.ComplexControl.CC_ComboBox, option, QStyle.SubControl.SC_ComboBoxEditField, self.combo
        )
        alignment = Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter
        lines.append(text_line("entry", self.combo, self.combo.currentText(), field.adjusted(1, 0, -1, 0), alignment))
        for edit in self.edits:
            lines.append(self._edit_line(edit))
        box = self.status.geometry()
        origin = self.status.mapToGlobal(QPoint(0, 0))
        report = {
            "title": TITLE,
            "status": self.status.text(),
            "lines": lines,
            "edited": [origin.x(), origin.y(), box.width(), box.height()] if edited else None,
        }
        print(json.dumps(report), flush=True)

    @staticmethod
    def _edit_line(edit: QLineEdit) -> dict[str, Any]:
        """A line edit's text starts where its cursor stands at position 0 (the cursor rect is 5 px left of it)."""
        edit.setCursorPosition(0)
        cursor = edit.cursorRect()
        metrics = QFontMetrics(edit.font())
        text = edit.text()
        top = cursor.top() + (cursor.height() - metrics.height()) // 2
        origin = edit.mapToGlobal(QPoint(cursor.left() + 5, top))
        edges = [origin.x() + metrics.horizontalAdvance(text[:i]) for i in range(len(text) + 1)]
        return {
            "kind": "entry",
            "text": text,
            "edges": edges,
            "top": origin.y(),
            "bottom": origin.y() + metrics.height(),
            "clear": True,
        }

    def on_stdin(self) -> None:
        command = sys.stdin.readline()
        if not command.startswith("edit "):
            QApplication.quit()
            return
        self.status.setText(command.removeprefix("edit ").rstrip("\n"))
        QTimer.singleShot(300, lambda: self.report(edited=True))


def main() -> None:
    geometry, style_name, variant = sys.argv[1], sys.argv[2], int(sys.argv[3])
    app = QApplication([sys.argv[0], "-style", style_name])
    window = Window(style_name, variant)
    size, x, y = geometry.split("+")
    width, height = (int(v) for v in size.split("x"))
    window.setGeometry(int(x), int(y), width, height)
    window.show()
    notifier = QSocketNotifier(sys.stdin.fileno(), QSocketNotifier.Type.Read)
    notifier.activated.connect(window.on_stdin)
    QTimer.singleShot(800, window.report)
    app.exec()


if __name__ == "__main__":
    main()
