"""A Tk order form for the OCR grounding benchmark that reports where every piece of its text is drawn.

Usage: python tk_form.py WIDTHxHEIGHT+X+Y

Once drawn it prints one JSON line to stdout: the window title, the text of the status line, and every
line of text it shows with the x edge of each character in screen pixels. Each `edit TEXT` line read
from stdin replaces the status line's text and prints the JSON again, plus the status line's box.

Where text is drawn comes from Tk itself (entry/listbox/text `bbox`) or, for labels and buttons, from
the widget box, its anchor and the font's `measure`/`linespace`, as Tk lays them out (TkComputeAnchor).
Menubar entries get their entry box: Tk does not say where inside it the label sits; the benchmark
trims every box to the glyphs' ink anyway.
"""

from __future__ import annotations

import json
import os
import sys
import tkinter as tk
import tkinter.font as tkfont
import traceback
from collections.abc import Sequence
from typing import Any

TITLE = "Order desk"
MENUS = ("File", "Edit", "View", "Orders", "Reports", "Help")
FIELDS = (
    ("Customer name:", "Margaret Hamilton"),
    ("Shipping address:", "42 Harbour Street, Portsmouth"),
    ("Order number:", "ORD-2024-11873"),
    ("Contact email:", "m.hamilton@example.org"),
    ("Delivery window:", "Tuesday morning, 8am to noon"),
)
BUTTONS = ("Save draft", "Submit order", "Print invoice", "Cancel")
PRODUCTS = (
    "Walnut bookshelf",
    "Oak dining table",
    "Linen armchair",
    "Brass floor lamp",
    "Wool rug, large",
    "Ceramic vase set",
    "Leather ottoman",
    "Bamboo side table",
    "Velvet cushions",
    "Marble coffee table",
    "Teak garden bench",
    "Cotton throw blanket",
    "Pine wardrobe",
    "Copper kettle",
    "Glass pendant light",
    "Rattan laundry basket",
    "Cedar storage chest",
    "Porcelain dinner plates",
    "Mahogany writing desk",
    "Slate coasters",
    "Cast iron skillet",
    "Maple rocking chair",
    "Silk lampshade",
    "Birch plywood stool",
    "Enamel bread bin",
    "Jute doormat",
    "Chrome towel rail",
    "Beech chopping board",
    "Terracotta planter",
    "Pewter candle holder",
)
HISTORY = (
    "02 Mar  Order created by Margaret Hamilton",
    "02 Mar  Payment authorised, card ending 4417",
    "03 Mar  Stock reserved at Leeds warehouse",
    "04 Mar  Walnut bookshelf sent for polishing",
    "05 Mar  Courier booked: Northline Freight",
    "06 Mar  Customer asked for morning delivery",
    "07 Mar  Delivery window changed to Tuesday",
    "08 Mar  Oak dining table quality checked",
    "09 Mar  Invoice 1182 drafted for accounts",
    "11 Mar  Ceramic vase set repacked (fragile)",
    "12 Mar  Discount code SPRING10 applied",
    "13 Mar  Porch rebuild noted by the driver",
    "14 Mar  Neighbour at number 44 agreed to sign",
    "15 Mar  Linen armchair delayed by supplier",
    "16 Mar  Partial shipment approved by manager",
    "18 Mar  Fitting team scheduled for landing",
    "19 Mar  Brass floor lamp wiring certified",
    "20 Mar  Refund policy emailed to customer",
    "21 Mar  Teak garden bench oiled and wrapped",
    "22 Mar  Route planned via Portsmouth depot",
    "23 Mar  Van loading list printed",
    "25 Mar  Cushions swapped for velvet version",
    "26 Mar  Customer confirmed new colour choice",
    "27 Mar  Warranty cards added to the parcel",
    "28 Mar  Final inspection passed",
    "29 Mar  Dispatch note signed by supervisor",
    "30 Mar  Tracking number NL-58210-GB issued",
    "31 Mar  Driver assigned: Samuel Okafor",
    "01 Apr  Out for delivery from Portsmouth",
    "01 Apr  Delivered, signed by neighbour",
    "02 Apr  Feedback request sent",
    "03 Apr  Five star review received",
)
NOTES = (
    "Delivery notes",
    "",
    "Please ring the bell at the side gate; the front door is not in use while the porch is being "
    "rebuilt. A neighbour at number 44 can sign for parcels if nobody answers within five minutes.",
    "",
    "The walnut bookshelf must be carried upstairs in two pieces. Our courier confirmed that the "
    "stairwell is narrow, so the frame will be assembled on the landing by the fitting team.",
    "",
    "Invoices go to the accounts office, not to the delivery address. Quote the order number on every "
    "letter and allow ten working days for refunds to reach the original payment card.",
    "",
    "Fragile items are packed in recycled cardboard with paper padding. Report any damage within "
    "forty-eight hours and keep the packaging until the claim has been settled.",
    "",
    "Assembly instructions for the dining table are printed inside the drawer. Tighten every bolt "
    "again after a week, when the timber has settled in a heated room.",
    "",
    "Oiled wood darkens slightly in sunlight during the first month. Wipe spills at once and use "
    "felt pads under lamps and vases to protect the finish.",
    "",
    "Our showroom in Leeds is open from Monday to Saturday. Bring this order number if you would "
    "like to see fabric samples or exchange a cushion cover.",
)
STATUS = "Ready: eighteen products loaded from the warehouse catalogue at Leeds"


def line(kind: str, text: str, edges: Sequence[float], top: float, bottom: float, clear: bool = True) -> dict[str, Any]:
    return {"kind": kind, "text": text, "edges": edges, "top": top, "bottom": bottom, "clear": clear}


def pixels(widget: tk.Misc, option: str) -> int:
    return widget.winfo_pixels(str(widget.cget(option)))


def anchored_line(kind: str, widget: tk.Label | tk.Button, font: tkfont.Font) -> dict[str, Any]:
    """Single-line label or button text placed the way TkComputeAnchor places it (anchor w or center)."""
    text = widget.cget("text")
    inset = pixels(widget, "borderwidth") + pixels(widget, "highlightthickness")
    text_width, text_height = font.measure(text), font.metrics("linespace")
    centred = widget.cget("anchor") == "center"
    x = (widget.winfo_width() - text_width) // 2 if centred else inset + pixels(widget, "padx")
    y = (widget.winfo_height() - text_height) // 2
    left, top = widget.winfo_rootx() + x, widget.winfo_rooty() + y
    edges = [left + font.measure(text[:i]) for i in range(len(text) + 1)]
    return line(kind, text, edges, top, top + text_height)


def bbox_lines(kind: str, widget: tk.Entry | tk.Text) -> list[dict[str, Any]]:
    """The text of an entry or text widget, split into display lines by the characters' bbox."""
    is_text = isinstance(widget, tk.Text)
    content = widget.get("1.0", "end-1c") if isinstance(widget, tk.Text) else widget.get()
    full_height = tkfont.nametofont(str(widget.cget("font"))).metrics("linespace")
    lines: list[dict[str, Any]] = []
    text, boxes = "", list[tuple[int, ...]]()
    for i, char in enumerate(content):
        box = None if char == "\n" else char_box(widget, f"1.0 + {i} chars" if is_text else i)
        if boxes and (not box or box[1] != boxes[-1][1]):
            lines.append(_boxed_line(kind, widget, text, boxes, full_height))
            text, boxes = "", []
        if box:
            text += char
            boxes.append(box)
    if boxes:
        lines.append(_boxed_line(kind, widget, text, boxes, full_height))
    return lines


def char_box(widget: tk.Entry | tk.Text, index: str | int) -> tuple[int, ...] | None:
    """The widgets' own `bbox` (tkinter's Entry.bbox is grid_bbox, so call Tk directly)."""
    box = widget.tk.splitlist(widget.tk.call(str(widget), "bbox", index))
    return tuple(int(v) for v in box) if box else None


def _boxed_line(
    kind: str, widget: tk.Widget, text: str, boxes: list[tuple[int, ...]], full_height: int
) -> dict[str, Any]:
    """A partly visible line (its bbox cut by the widget's edge) is reported but is not clear."""
    x0, y0 = widget.winfo_rootx(), widget.winfo_rooty()
    edges = [x0 + box[0] for box in boxes] + [x0 + boxes[-1][0] + boxes[-1][2]]
    top, height = y0 + boxes[0][1], boxes[0][3]
    return line(kind, text, edges, top, top + height, clear=height >= full_height)


class StatusEdits:
    """The benchmark's stdin protocol: `edit TEXT` replaces the status line's text and reports again; anything
    else closes the window. The app provides root, status and report()."""

    root: tk.Tk
    status: Any

    def report(self, edited: bool = False) -> None:
        raise NotImplementedError

    def on_stdin(self, *_: object) -> None:
        command = sys.stdin.readline()
        if not command.startswith("edit "):
            self.root.destroy()
            return
        self.status.configure(text=command.removeprefix("edit ").rstrip("\n"))
        self.report(edited=True)


class OrderForm(StatusEdits):
    """The window, its widgets, and the JSON report of where their text is."""

    def __init__(self, root: tk.Tk) -> None:
        self.root = root
        self.font = tkfont.Font(root, family="DejaVu Sans", size=-15)
        self.heading_font = tkfont.Font(root, family="DejaVu Sans", size=-24, weight="bold")
        self.notes_font = tkfont.Font(root, family="DejaVu Serif", size=-16)
        root.title(TITLE)
        root.option_add("*Font", self.font)
        self.menubar = tk.Menu(root, tearoff=0)
        for label in MENUS:
            self.menubar.add_cascade(label=label, menu=tk.Menu(self.menubar, tearoff=0))
        root.config(menu=self.menubar)
        self.labels: list[tuple[str, tk.Label | tk.Button, tkfont.Font]] = []
        self.entries: list[tk.Entry] = []
        self._build()

    def _build(self) -> None:
        root = self.root
        root.columnconfigure(2, weight=1)
        root.rowconfigure(2, weight=1)
        heading = tk.Label(root, text="Order details", font=self.heading_font, anchor="w")
        heading.grid(row=0, column=0, columnspan=3, sticky="ew", padx=16, pady=(12, 6))
        self.labels.append(("heading", heading, self.heading_font))
        form = tk.Frame(root)
        form.grid(row=1, column=0, sticky="nw", padx=16)
        for row, (caption, value) in enumerate(FIELDS):
            label = tk.Label(form, text=caption, anchor="w")
            label.grid(row=row, column=0, sticky="ew", pady=4)
            self.labels.append(("label", label, self.font))
            entry = tk.Entry(form, width=30, insertwidth=0)
            entry.insert(0, value)
            entry.grid(row=row, column=1, sticky="w", padx=(8, 0), pady=4)
            self.entries.append(entry)
        buttons = tk.Frame(form)
        buttons.grid(row=len(FIELDS), column=0, columnspan=2, sticky="w", pady=(12, 0))
        for caption in BUTTONS:
            button = tk.Button(buttons, text=caption)
            button.pack(side="left", padx=(0, 10))
            self.labels.append(("button", button, self.font))
        self.notes = tk.Text(root, font=self.notes_font, wrap="word", insertwidth=0, width=56, height=4)
        self.notes.insert("1.0", "\n".join(NOTES))
        self.notes.grid(row=2, column=0, sticky="nsew", padx=16, pady=(12, 0))
        self.listboxes = [
            self._listbox(1, "Products in this order", PRODUCTS, 24),
            self._listbox(2, "Order history", HISTORY, 40),
        ]
        self.status = tk.Label(root, text=STATUS, anchor="w", relief="sunken")
        self.status.grid(row=3, column=0, columnspan=3, sticky="ew", padx=16, pady=12)
        self.labels.append(("status", self.status, self.font))

    def _listbox(self, column: int, title: str, items: tuple[str, ...], width: int) -> tk.Listbox:
        frame = tk.Frame(self.root)
        frame.grid(row=1, column=column, rowspan=2, sticky="nsew", padx=(0, 16))
        caption = tk.Label(frame, text=title, anchor="w")
        caption.pack(fill="x")
        self.labels.append(("label", caption, self.font))
        listbox = tk.Listbox(frame, activestyle="none", width=width, height=4)
        listbox.insert("end", *items)
        listbox.pack(fill="both", expand=True)
        return listbox

    def report(self, edited: bool = False) -> None:
        self.root.update_idletasks()
        lines = self._menu_lines()
        lines += [anchored_line(kind, widget, font) for kind, widget, font in self.labels]
        for entry in self.entries:
            lines += bbox_lines("entry", entry)
        for listbox in self.listboxes:
            lines += self._listbox_lines(listbox)
        lines += bbox_lines("text", self.notes)
        box = self.status
        report = {
            "title": TITLE,
            "status": self.status.cget("text"),
            "lines": lines,
            "edited": [box.winfo_rootx(), box.winfo_rooty(), box.winfo_width(), box.winfo_height()] if edited else None,
        }
        print(json.dumps(report), flush=True)

    def _menu_lines(self) -> list[dict[str, Any]]:
        """Menubar entries: the entry box of the clone Tk draws the menubar with (`.#...`)."""
        clone = next(str(w) for w in self.root.tk.call("winfo", "children", ".") if "#" in str(w))

        def number(*args: object) -> int:
            return self.root.winfo_pixels(str(self.root.tk.call(*args)))

        x0, y0 = number("winfo", "rootx", clone), number("winfo", "rooty", clone)
        border = number(clone, "cget", "-borderwidth")
        top, bottom = y0 + border, y0 + number("winfo", "height", clone) - border
        starts = [number(clone, "xposition", i) for i in range(len(MENUS))]
        padding = starts[1] - starts[0] - self.font.measure(MENUS[0])
        ends = [*starts[1:], starts[-1] + self.font.measure(MENUS[-1]) + padding]
        lines = []
        for label, start, end in zip(MENUS, starts, ends, strict=True):
            step = (end - start) / len(label)
            edges = [x0 + start + i * step for i in range(len(label) + 1)]
            lines.append(line("menu", label, edges, top, bottom))
        return lines

    def _listbox_lines(self, listbox: tk.Listbox) -> list[dict[str, Any]]:
        """Items Tk says are visible (bbox); the text starts at the bbox and advances by `measure`.

        Items cut by the listbox's bottom are not clear; `right` tells which words its right edge cuts.
        """
        x0, y0 = listbox.winfo_rootx(), listbox.winfo_rooty()
        inset = pixels(listbox, "borderwidth") + pixels(listbox, "highlightthickness")
        bottom, right = listbox.winfo_height() - inset, x0 + listbox.winfo_width() - inset
        lines = []
        for i, item in enumerate(listbox.get(0, "end")):
            box = listbox.bbox(i)
            if not box:
                continue
            left = x0 + box[0]
            edges = [left + self.font.measure(item[:j]) for j in range(len(item) + 1)]
            entry = line("list", item, edges, y0 + box[1], y0 + box[1] + box[3], box[1] + box[3] <= bottom)
            lines.append({**entry, "right": right})
        return lines


def fail(*exc_info: Any) -> None:
    """A broken report must end the app: the benchmark waits for a report that would never come."""
    traceback.print_exception(*exc_info)
    os._exit(1)


def main() -> None:
    root = tk.Tk()
    root.report_callback_exception = fail
    root.geometry(sys.argv[1])
    form = OrderForm(root)
    root.tk.createfilehandler(sys.stdin, tk.READABLE, form.on_stdin)
    root.wait_visibility()
    root.after(300, form.report)
    root.mainloop()


if __name__ == "__main__":
    main()
