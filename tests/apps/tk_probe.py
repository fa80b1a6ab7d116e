"""A real Tk window for the tests: it reports its widgets' screen geometry and its state as JSON.

Usage: python tk_probe.py STATE_FILE TITLE [GEOMETRY]
The state file is rewritten atomically whenever something changes.
"""

import json
import os
import sys
import tkinter as tk

state_path, title = sys.argv[1], sys.argv[2]
root = tk.Tk()
root.title(title)
root.geometry(sys.argv[3] if len(sys.argv) > 3 else "900x700+200+150")
state: dict = {
    "clicks": 0,
    "right_clicks": 0,
    "double_clicks": 0,
    "shift_clicks": 0,
    "hotkeys": [],
    "submitted": [],
    "drag": None,
    "motions": 0,
    "keys": [],
}

button = tk.Button(root, text="Press me", width=20)
button.place(x=20, y=20, width=200, height=50)
entry = tk.Entry(root, font=("DejaVu Sans", 14))
entry.place(x=250, y=20, width=600, height=40)
canvas = tk.Canvas(root, background="white")
canvas.place(x=20, y=100, width=400, height=300)
text = tk.Text(root, font=("DejaVu Sans Mono", 12), wrap="none")
text.place(x=450, y=100, width=400, height=300)
text.insert("1.0", "\n".join(f"line {i} " + "wide " * 60 for i in range(300)))
swatch = tk.Frame(root, background="#ff0000")
swatch.place(x=20, y=430, width=300, height=200)


def widget_box(widget: tk.Widget) -> dict:
    return {
        "left": widget.winfo_rootx(),
        "top": widget.winfo_rooty(),
        "width": widget.winfo_width(),
        "height": widget.winfo_height(),
    }


def save() -> None:
    state["entry"] = entry.get()
    state["swatch"] = swatch.cget("background")
    state["selection"] = entry.selection_get() if entry.selection_present() else ""
    state["cursor_index"] = entry.index("insert")
    state["text_top"] = text.yview()[0]
    state["text_left"] = text.xview()[0]
    state["focus"] = str(root.focus_get())
    state["window"] = widget_box(root)  # where Tk sees itself: the window manager's framing moves it
    state["widgets"] = {
        name: widget_box(w)
        for name, w in (("button", button), ("entry", entry), ("canvas", canvas), ("text", text), ("swatch", swatch))
    }
    tmp = state_path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(state, f, ensure_ascii=False)
    os.replace(tmp, state_path)


def bump(key: str):
    def handler(event: tk.Event) -> None:
        state[key] += 1
        save()

    return handler


def on_press(event: tk.Event) -> None:
    state["drag"] = {"start": [event.x_root, event.y_root], "end": None}
    state["motions"] = 0


def on_motion(event: tk.Event) -> None:
    state["motions"] += 1


def on_release(event: tk.Event) -> None:
    if state["drag"] is not None:
        state["drag"]["end"] = [event.x_root, event.y_root]
    save()


def on_submit(event: tk.Event) -> None:
    state["submitted"].append(entry.get())
    save()


def on_hotkey(name: str):
    def handler(event: tk.Event) -> str:
        state["hotkeys"].append(name)
        save()
        return "break"

    return handler


def toggle_swatch(event: tk.Event) -> None:
    swatch.configure(background="#0000ff" if swatch.cget("background") == "#ff0000" else "#ff0000")
    save()


button.bind("<Button-1>", bump("clicks"))
button.bind("<Button-3>", bump("right_clicks"))
button.bind("<Double-Button-1>", bump("double_clicks"))
button.bind("<Shift-Button-1>", bump("shift_clicks"))
entry.bind("<Return>", on_submit)
entry.bind("<KeyRelease>", lambda e: save())
root.bind_all("<Control-Shift-K>", on_hotkey("ctrl+shift+k"))
root.bind_all("<Alt-j>", on_hotkey("alt+j"))
canvas.bind("<ButtonPress-1>", on_press)
canvas.bind("<B1-Motion>", on_motion)
canvas.bind("<ButtonRelease-1>", on_release)
swatch.bind("<Button-1>", toggle_swatch)
text.bind("<MouseWheel>", lambda e: root.after(50, save))
text.bind("<Button-4>", lambda e: root.after(50, save), add="+")
text.bind("<Button-5>", lambda e: root.after(50, save), add="+")
for wheel in ("<Shift-Button-4>", "<Shift-Button-5>", "<Shift-MouseWheel>"):
    text.bind(wheel, lambda e: root.after(50, save), add="+")
root.bind("<Configure>", lambda e: root.after(20, save))
root.bind_all("<FocusIn>", lambda e: root.after(10, save), add="+")
root.bind_all("<ButtonRelease-1>", lambda e: root.after(20, save), add="+")
root.bind_all("<FocusOut>", lambda e: root.after(10, save), add="+")
root.after(200, save)
root.mainloop()
