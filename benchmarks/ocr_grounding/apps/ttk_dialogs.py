"""Dialogs and a settings form in themed Tk (ttk) widgets that report where every piece of their text is drawn.

Usage: python ttk_dialogs.py WIDTHxHEIGHT+X+Y THEME VARIANT

The protocol is tk_form.py's (one JSON line once drawn, `edit TEXT` replaces the status line). VARIANT picks
the font and seeds the random short labels. Where text is drawn comes from Tk: entries and comboboxes by
`bbox`; labels, buttons, check and radio buttons and notebook tabs by the box of their label element, found
with ttk's own `identify` (the element under a point), with the text anchored in it as ttk anchors it
(Ttk_AnchorBox: centred, or at the west edge and centred vertically).
"""

from __future__ import annotations

import json
import random
import string
import sys
import tkinter as tk
import tkinter.font as tkfont
import traceback
from collections.abc import Callable
from tkinter import ttk
from typing import Any

from tk_form import StatusEdits, bbox_lines, fail, line

TITLE = "Connection settings"
FONTS = (("DejaVu Sans", -13), ("Liberation Sans", -12), ("Nimbus Sans", -15))
STATUS = "Ready: profile loaded from the shared team configuration file"
FIELDS = (("Host:", "db01.example.net"), ("Port:", "5432"), ("User:", "admin"), ("Schema:", "public"))
DIALOGS = (
    ("Save changes to report.txt before closing?", ("Yes", "No", "Cancel")),
    ("Step 2 of 4: choose the install folder", ("< Back", "Next >", "Finish")),
    ("Delete 3 selected items?", ("OK", "Cancel", "Help")),
)
OPTIONS = ("Verbose", "Dry run", "Use SSL", "Go offline")
LEVELS = ("Low", "Mid", "High")
TABS = ("General", "Network", "Advanced", "Log")
DISABLED = ("Apply", "Undo", "Sync now", "Reset")  # greyed out: low-contrast text
COLOURS = ("#1565c0", "#2e7d32", "#c62828", "#6a1b9a", "#ef6c00", "#00838f", "#f9a825", "#455a64")


def short_labels(rng: random.Random, count: int) -> list[str]:
    letters = string.ascii_letters
    return ["".join(rng.choice(letters) for _ in range(rng.choice((2, 3)))) for _ in range(count)]


def label_box(widget: tk.Widget, inside: Callable[[int, int], bool] = lambda x, y: True) -> tuple[int, ...]:
    """The box (left, top, right, bottom in widget px) of the label element under points where `inside` holds:
    scanned along the widget's rows and columns with ttk's `identify`."""
    width, height = widget.winfo_width(), widget.winfo_height()

    def is_label(x: int, y: int) -> bool:
        return inside(x, y) and str(widget.identify(x, y)).endswith("label")  # type: ignore[call-arg]

    y = next(j for j in range(height) if any(is_label(i, j) for i in range(0, width, 2)))
    xs = [i for i in range(width) if is_label(i, y)]
    x = (xs[0] + xs[-1]) // 2
    ys = [j for j in range(height) if is_label(x, j)]
    y = (ys[0] + ys[-1]) // 2
    xs = [i for i in range(width) if is_label(i, y)]
    return xs[0], ys[0], xs[-1] + 1, ys[-1] + 1


def anchored(
    kind: str, widget: tk.Widget, text: str, font: tkfont.Font, parcel: tuple[int, int, int, int], anchor: str
) -> dict[str, Any]:
    """Text placed in its element's parcel the way Ttk_AnchorBox places it."""
    left, top, right, bottom = parcel
    width, height = font.measure(text), font.metrics("linespace")
    x = left + (right - left - width) // 2 if anchor == "center" else left
    y = top + (bottom - top - height) // 2
    x0, y0 = widget.winfo_rootx() + x, widget.winfo_rooty() + y
    edges = [x0 + font.measure(text[:i]) for i in range(len(text) + 1)]
    return line(kind, text, edges, y0, y0 + height)


class Dialogs(StatusEdits):
    def __init__(self, root: tk.Tk, theme: str, variant: int) -> None:
        self.root = root
        style = ttk.Style(root)
        style.theme_use(theme)
        family, size = FONTS[variant % len(FONTS)]
        self.font = tkfont.Font(root, family=family, size=size)
        self.heading = tkfont.Font(root, family=family, size=round(size * 1.6), weight="bold")
        style.configure(".", font=self.font)
        style.configure("Heading.TLabel", font=self.heading)
        self.rng = random.Random(f"ttk:{theme}:{variant}")
        root.title(TITLE)
        self.texts: list[tuple[str, tk.Widget, str]] = []  # kind, widget, anchor of the text in its label element
        self.entries: list[ttk.Entry] = []
        self.notebook: ttk.Notebook | None = None
        self._build(style)

    def _label(self, parent: tk.Misc, text: str, kind: str = "label", **grid: Any) -> ttk.Label:
        label = ttk.Label(parent, text=text, anchor="w", style="Heading.TLabel" if kind == "heading" else "TLabel")
        label.grid(**grid)
        self.texts.append((kind, label, "w"))
        return label

    def _button(self, parent: tk.Misc, text: str, style: str = "TButton") -> ttk.Button:
        button = ttk.Button(parent, text=text, style=style)
        self.texts.append(("button", button, "center"))
        return button

    def _build(self, style: ttk.Style) -> None:
        root = self.root
        root.columnconfigure(1, weight=1)
        self._label(
            root, "Connection settings", "heading", row=0, column=0, columnspan=2, sticky="w", padx=16, pady=(10, 4)
        )
        left = ttk.Frame(root, padding=8)
        left.grid(row=1, column=0, sticky="nw")
        for row, (caption, value) in enumerate(FIELDS):
            self._label(left, caption, row=row, column=0, sticky="w", pady=3)
            entry = ttk.Entry(left, width=24, font=self.font)
            entry.insert(0, value)
            entry.grid(row=row, column=1, sticky="w", padx=(8, 0), pady=3)
            self.entries.append(entry)
        self._label(left, "Mode:", row=len(FIELDS), column=0, sticky="w", pady=3)
        mode = ttk.Combobox(left, values=("read-only", "read-write"), width=22, font=self.font)
        mode.set("read-write")
        mode.grid(row=len(FIELDS), column=1, sticky="w", padx=(8, 0), pady=3)
        self.entries.append(mode)
        checks = ttk.Frame(left)
        checks.grid(row=len(FIELDS) + 1, column=0, columnspan=2, sticky="w", pady=(8, 0))
        self.variables: list[tk.Variable] = []
        for i, option in enumerate(OPTIONS):
            variable = tk.IntVar(value=i % 2)
            self.variables.append(variable)
            check = ttk.Checkbutton(checks, text=option, variable=variable)
            check.grid(row=i // 2, column=i % 2, sticky="w", padx=(0, 16), pady=2)
            self.texts.append(("check", check, "w"))
        level = tk.StringVar(value=LEVELS[1])
        radios = ttk.Frame(left)
        radios.grid(row=len(FIELDS) + 2, column=0, columnspan=2, sticky="w", pady=(6, 0))
        for i, name in enumerate(LEVELS):
            radio = ttk.Radiobutton(radios, text=name, value=name, variable=level)
            radio.grid(row=0, column=i, padx=(0, 14))
            self.texts.append(("radio", radio, "w"))
        self.variables.append(level)
        right = ttk.Frame(root, padding=8)
        right.grid(row=1, column=1, sticky="nw")
        for row, (question, answers) in enumerate(DIALOGS):
            box = ttk.Frame(right, padding=10, relief="groove", borderwidth=2)
            box.grid(row=row, column=0, sticky="ew", pady=(0, 10))
            self._label(box, question, row=0, column=0, columnspan=len(answers), sticky="w", pady=(0, 8))
            for column, answer in enumerate(answers):
                self._button(box, answer).grid(row=1, column=column, padx=(0, 8), sticky="w")
        toolbar = ttk.Frame(right)
        toolbar.grid(row=len(DIALOGS), column=0, sticky="w")
        for i, text in enumerate(("OK", "Go", "Add", "Run", *short_labels(self.rng, 11))):
            name = f"C{i}.TButton"
            colour = COLOURS[i % len(COLOURS)]
            style.configure(name, background=colour, foreground="white" if i % 3 else "black")
            style.map(name, background=[("active", colour)])
            self._button(toolbar, text, name).grid(row=i // 5, column=i % 5, padx=(0, 6), pady=3)
        greyed = ttk.Frame(right)
        greyed.grid(row=len(DIALOGS) + 1, column=0, sticky="w", pady=(8, 0))
        for column, text in enumerate(DISABLED):
            button = self._button(greyed, text)
            button.grid(row=0, column=column, padx=(0, 6))
            button.state(["disabled"])
        self.notebook = ttk.Notebook(root)
        for tab in TABS:
            page = ttk.Frame(self.notebook, padding=8)
            ttk.Label(page, text="").pack()
            self.notebook.add(page, text=tab)
        self.notebook.grid(row=2, column=0, columnspan=2, sticky="ew", padx=16, pady=8)
        self.status = ttk.Label(root, text=STATUS, anchor="w", relief="sunken", padding=(6, 2))
        self.status.grid(row=3, column=0, columnspan=2, sticky="ew", padx=16, pady=(0, 10))
        self.texts.append(("status", self.status, "w"))

    def _tab_lines(self) -> list[dict[str, Any]]:
        notebook = self.notebook
        assert notebook is not None
        lines = []
        for index, text in enumerate(TABS):
            parcel = label_box(notebook, lambda x, y, index=index: _tab_at(notebook, x, y) == index)
            lines.append(anchored("tab", notebook, text, self.font, parcel, "center"))
        return lines

    def report(self, edited: bool = False) -> None:
        self.root.update_idletasks()
        lines = []
        for kind, widget, anchor in self.texts:
            font = self.heading if kind == "heading" else self.font
            lines.append(anchored(kind, widget, str(widget.cget("text")), font, label_box(widget), anchor))
        for entry in self.entries:
            lines += bbox_lines("entry", entry)
        lines += self._tab_lines()
        box = self.status
        print(
            json.dumps(
                {
                    "title": TITLE,
                    "status": self.status.cget("text"),
                    "lines": lines,
                    "edited": [box.winfo_rootx(), box.winfo_rooty(), box.winfo_width(), box.winfo_height()]
                    if edited
                    else None,
                }
            ),
            flush=True,
        )


def _tab_at(notebook: ttk.Notebook, x: int, y: int) -> int | None:
    found = notebook.tk.call(str(notebook), "index", f"@{x},{y}")
    return int(found) if str(found) != "" else None


def main() -> None:
    root = tk.Tk()
    root.report_callback_exception = fail
    root.geometry(sys.argv[1])
    dialogs = Dialogs(root, sys.argv[2], int(sys.argv[3]))
    root.tk.createfilehandler(sys.stdin, tk.READABLE, dialogs.on_stdin)
    root.wait_visibility()
    root.after(300, dialogs.report)
    root.mainloop()


if __name__ == "__main__":
    try:
        main()
    except Exception:
        traceback.print_exc()
        sys.exit(1)
