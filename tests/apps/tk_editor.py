"""A minimal real text editor for the orchestrator tests: one text area; Ctrl+S saves to the given path.

Usage: python tk_editor.py PATH
"""

import os
import sys
import tkinter as tk

path = sys.argv[1]
root = tk.Tk()
root.title(f"Symphony Editor - {os.path.basename(path)}")
root.geometry("800x500+300+200")
text = tk.Text(root, font=("DejaVu Sans Mono", 14))
text.pack(fill="both", expand=True)
text.focus_set()


def save(event: tk.Event) -> str:
    with open(path, "w", encoding="utf-8") as file:
        file.write(text.get("1.0", "end-1c"))
    return "break"


root.bind_all("<Control-s>", save)
root.mainloop()
