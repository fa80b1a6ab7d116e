"""Web dialogs and forms for the screen set: short button words, random short labels on coloured and
low-contrast backgrounds, punctuation-heavy settings, small print, each variant in other fonts and colours.

`form_page(variant)` returns a self-contained HTML page; the same variant always gives the same page.
"""

from __future__ import annotations

import colorsys
import html
import random
import string

FONTS = (
    ("Liberation Sans", "Liberation Mono"),
    ("Noto Sans", "DejaVu Sans Mono"),
    ("Nimbus Roman", "Nimbus Mono PS"),
    ("URW Gothic", "Liberation Mono"),
)
NAV = ("Home", "Docs", "API", "Blog", "Help")
DIALOG_TEXT = "You have unsaved changes in settings.json. Save them before you leave this page?"
DIALOG_BUTTONS = ("Save", "No", "Cancel")
WIZARD = ("< Back", "Next", "Skip")
FIELDS = ("Name", "Email", "Pin", "Zip", "Age", "City")
CHECKS = ("ok", "Remember me", "Beta")
SETTINGS = (
    "timeout=30",
    "--max-retries 5",
    "/etc/app/config.yaml",
    "[server]",
    "log_level=DEBUG",
    "PATH=$HOME/bin:$PATH",
    "user@host:~/src$",
    "-o output.txt",
    "retry(max=3)",
    "--dry-run",
    "C:\\Temp\\cache",
    "a.b.c[0]",
)
PARAGRAPH = (
    "Changes to these settings apply to every project in the workspace after the coming restart of the build service."
)
NOTICE = "Last saved two minutes ago by the background sync service"
SMALL_PRINT = (
    "Prices exclude delivery and local taxes. Offer valid while stocks last; see terms of service for details."
)


def _short(rng: random.Random) -> str:
    letters = string.ascii_letters + string.digits
    word = "".join(rng.choice(letters) for _ in range(rng.choice((2, 3))))
    return word if any(c.isalpha() for c in word) else "Q" + word[1:]


def colour(hue: float, lightness: float, saturation: float) -> str:
    r, g, b = colorsys.hls_to_rgb(hue, lightness, saturation)
    return f"#{round(255 * r):02x}{round(255 * g):02x}{round(255 * b):02x}"


def _chip(rng: random.Random, low_contrast: bool) -> tuple[str, str, str]:
    """(label, background, text colour): readable contrast, or the same hue a little lighter or darker."""
    hue, saturation = rng.random(), rng.uniform(0.3, 0.9)
    background_l = rng.uniform(0.25, 0.8)
    if low_contrast:
        text_l = background_l + (0.22 if background_l < 0.5 else -0.22)
    else:
        text_l = 0.97 if background_l < 0.55 else 0.1
    return _short(rng), colour(hue, background_l, saturation), colour(hue, text_l, saturation)


def form_page(variant: int) -> str:
    rng = random.Random(f"forms:{variant}")
    sans, mono = FONTS[variant % len(FONTS)]
    base = 13 + 2 * (variant % 3)
    accent = colour(rng.random(), 0.35, 0.7)
    dark = variant % 2 == 1
    page_bg, page_fg, panel = ("#1f2329", "#e6e6e6", "#2a2f37") if dark else ("#ffffff", "#222222", "#f3f4f6")
    chips = [_chip(rng, low_contrast=i % 2 == 1) for i in range(60)]
    sizes = [rng.choice((9, 10, 11, 12, 14, 16, 20)) for _ in chips]
    esc = html.escape
    nav = "".join(f'<a href="#">{esc(item)}</a>' for item in NAV)
    dialog_buttons = "".join(
        f'<button class="{"primary" if i == 0 else ""}">{esc(text)}</button>' for i, text in enumerate(DIALOG_BUTTONS)
    )
    wizard = "".join(f"<button>{esc(text)}</button>" for text in WIZARD)
    fields = "".join(f'<label>{esc(name)}</label><input value="{esc(rng.choice(("x", "-", "")))}">' for name in FIELDS)
    checks = "".join(f'<span class="check"><input type="checkbox">{esc(text)}</span>' for text in CHECKS)
    chip_html = "".join(
        f'<span class="chip" style="background:{bg};color:{fg};font-size:{size}px">{esc(label)}</span>'
        for (label, bg, fg), size in zip(chips, sizes, strict=True)
    )
    settings = "".join(f"<li><code>{esc(item)}</code></li>" for item in SETTINGS)
    return f"""<!doctype html>
<html><head><meta charset="utf-8"><title>Settings {variant}</title><style>
body {{ margin: 0; font-family: "{sans}"; font-size: {base}px; background: {page_bg}; color: {page_fg}; }}
header {{ background: {accent}; color: white; padding: 10px 24px; display: flex; gap: 28px; align-items: center; }}
header a {{ color: white; text-decoration: none; font-weight: bold; }}
header button {{ margin-left: auto; }}
.notice {{ margin: 10px 24px 0; white-space: nowrap; }}
main {{ display: grid; grid-template-columns: 1fr 1fr 1fr; gap: 24px; padding: 20px 24px; }}
section {{ background: {panel}; border-radius: 6px; padding: 14px 16px; }}
h2 {{ font-size: {base + 5}px; margin: 0 0 10px; }}
button {{ font: inherit; padding: 5px 14px; margin: 4px 8px 4px 0; border: 1px solid #888; border-radius: 4px;
  background: {"#3a4049" if dark else "#fafafa"}; color: inherit; }}
button.primary {{ background: {accent}; color: white; border-color: {accent}; }}
.dialog {{ border: 1px solid #999; border-radius: 8px; padding: 16px; background: {page_bg};
  box-shadow: 0 4px 16px rgba(0, 0, 0, 0.35); }}
.form {{ display: grid; grid-template-columns: auto 1fr; gap: 8px 12px; align-items: center; }}
input {{ font: inherit; padding: 3px 6px; width: 9em; }}
.check {{ margin-right: 18px; white-space: nowrap; }}
.chips {{ display: flex; flex-wrap: wrap; gap: 10px; align-items: center; }}
.chip {{ padding: 3px 9px; border-radius: 10px; }}
ul {{ list-style: none; padding: 0; margin: 0; columns: 2; }}
li {{ margin: 4px 0; }}
code {{ font-family: "{mono}"; font-size: {base - 1}px; }}
.small {{ font-size: {9 + variant % 2}px; color: {"#7d8590" if dark else "#9a9a9a"}; }}
</style></head><body>
<header>{nav}<input value=""><button>Go</button></header>
<p class="notice">{esc(NOTICE)}</p>
<main>
<section><h2>Unsaved changes</h2><div class="dialog"><p>{esc(DIALOG_TEXT)}</p>{dialog_buttons}</div>
<p>{esc(PARAGRAPH)}</p><div>{wizard}</div></section>
<section><h2>Account</h2><div class="form">{fields}</div><p>{checks}</p>
<p class="small">{esc(SMALL_PRINT)}</p></section>
<section><h2>Labels</h2><div class="chips">{chip_html}</div></section>
<section><h2>Options</h2><ul>{settings}</ul></section>
</main></body></html>
"""
