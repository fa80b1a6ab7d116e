"""Web pages of the kinds OCR missed on strangers' screens (issue 26 item 3): task panels in the style of
MiniWoB++, each with a header label on a coloured band ("Section #1") of a random hue, lightness and contrast,
all-caps short button words ("ONE", "NO", "GO"), and short random labels that mix letters and digits and are
rich in the glyphs OCR confuses (O/0, I/l/1, S/5, B/8).

`band_page(variant)` returns a self-contained HTML page; the same variant always gives the same page. Fonts are
the ones scripts/install.sh installs (fonts-dejavu-core, fonts-urw-base35), so a page renders the same on every
machine set up by it.
"""

from __future__ import annotations

import html
import random

from benchmarks.ocr_grounding.forms import colour

FONTS = ("DejaVu Sans", "Nimbus Sans", "DejaVu Serif", "URW Gothic", "Nimbus Roman", "C059")
HEADERS = ("Section", "Tab", "Step", "Part", "Panel", "Group", "Item", "Stage")
CAPS_WORDS = (
    "ONE", "TWO", "SIX", "TEN", "YES", "NO", "OK", "GO", "ADD", "RUN", "SET", "END", "TOP", "OFF", "ON", "NEW",
    "OLD", "CUT", "MIX", "FIX", "BUY", "PAY", "ASK", "LOG", "MAP", "ZIP", "SUM", "MAX", "MIN", "KEY", "BOX", "FLIP",
)  # fmt: skip
CONFUSED = "O0Il1S5B8"  # glyph pairs OCR mixes up, weighted into the random labels
OTHERS = "ACDEFGHJKLMNPQRTUVWXYZabcdefghijkmnopqrstuvwxyz234679"
INSTRUCTIONS = (
    "Expand the section that matches the label below and then press the button named in the task",
    "Select every item whose code appears in the list and submit the form when you are done",
    "Find the panel with the given header and click the second button inside that panel",
)


def mixed_label(rng: random.Random) -> str:
    """3 to 6 characters, letters and digits, at least one of them a commonly confused glyph."""
    length = rng.randint(3, 6)
    chars = [rng.choice(CONFUSED if rng.random() < 0.5 else OTHERS) for _ in range(length)]
    chars[rng.randrange(length)] = rng.choice(CONFUSED)
    return "".join(chars)


def _band(rng: random.Random) -> tuple[str, str]:
    """(background, text colour) of a header band: any hue; readable, or only a little lighter or darker."""
    hue, saturation, lightness = rng.random(), rng.uniform(0.2, 1.0), rng.uniform(0.15, 0.85)
    contrast = rng.choice(("strong", "strong", "medium", "low"))
    if contrast == "strong":
        text = 0.98 if lightness < 0.55 else 0.05
    else:
        step = 0.45 if contrast == "medium" else 0.28
        text = lightness + step if lightness < 0.5 else lightness - step
    text_hue = hue if rng.random() < 0.7 else rng.random()
    return colour(hue, lightness, saturation), colour(text_hue, min(max(text, 0.0), 1.0), saturation)


def _panel(rng: random.Random, number: int, font: str) -> str:
    esc = html.escape
    background, foreground = _band(rng)
    header = f"{rng.choice(HEADERS)} #{number}"
    size = rng.choice((11, 12, 13, 14, 16, 18))
    words = rng.sample(CAPS_WORDS, 3)
    button_bg, button_fg = _band(rng) if rng.random() < 0.5 else ("#efefef", "#000000")
    buttons = "".join(
        f'<button style="background:{button_bg};color:{button_fg};font-size:{rng.choice((10, 11, 12, 13, 15))}px">'
        f"{esc(word)}</button>"
        for word in words
    )
    labels = "".join(f'<span class="code">{esc(mixed_label(rng))}</span>' for _ in range(rng.randint(2, 4)))
    radius = rng.choice((0, 3, 6))
    return (
        f'<div class="panel" style="font-family:\'{font}\'">'
        f'<h3 class="band" style="background:{background};color:{foreground};font-size:{size}px;'
        f'border-radius:{radius}px {radius}px 0 0">{esc(header)}</h3>'
        f'<div class="content"><div>{buttons}</div><div class="codes">{labels}</div></div></div>'
    )


def band_page(variant: int) -> str:
    rng = random.Random(f"bands:{variant}")
    font = FONTS[variant % len(FONTS)]
    numbers = rng.sample(range(1, 100), 24)
    panels = "".join(_panel(rng, number, rng.choice(FONTS) if rng.random() < 0.3 else font) for number in numbers)
    return f"""<!doctype html>
<html><head><meta charset="utf-8"><title>Tasks {variant}</title><style>
body {{ margin: 0; font-family: "{font}"; font-size: 13px; background: #ffffff; color: #111111; }}
p.task {{ margin: 10px 20px; white-space: nowrap; }}
main {{ display: grid; grid-template-columns: repeat(6, 1fr); gap: 18px; padding: 10px 20px; }}
.panel {{ border: 1px solid #bbbbbb; background: #fbfbfb; }}
h3.band {{ margin: 0; padding: 5px 8px; font-weight: {"bold" if variant % 2 else "normal"}; }}
.content {{ padding: 8px; }}
button {{ font-family: inherit; padding: 3px 10px; margin: 3px 6px 3px 0; border: 1px solid #999999;
  border-radius: 3px; }}
.codes {{ margin-top: 6px; display: flex; flex-wrap: wrap; gap: 10px; }}
.code {{ font-size: 13px; }}
</style></head><body>
<p class="task">{html.escape(rng.choice(INSTRUCTIONS))}</p>
<main>{panels}</main>
</body></html>
"""
