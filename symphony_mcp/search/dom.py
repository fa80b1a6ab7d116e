"""What the browser reads from a page's DOM in one round trip: its interactive elements, visible text, scroll.

The scripts run in the page (Playwright `evaluate`); `read_snapshot` turns their JSON into the contract's
types. Only the top document is read (not iframes or closed shadow roots): what a tutorial page shows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from symphony_mcp.imaging.geometry import Rect
from symphony_mcp.search.types import PageElement

MAX_ELEMENT_TEXT = 100
MAX_VIEW_TEXT = 4_000

# Runs before every document's own scripts. Counts the cross-document navigations the page starts (the
# Navigation API fires `navigate` synchronously, before any request), so an action knows whether to wait for
# a load; stops and lists navigations to other schemes than http(s); keeps links, forms and window.open in the
# current page: one page, one history.
INIT_SCRIPT = """
(() => {
  window.__symphonyNavigations = 0;
  window.__symphonyRefused = [];
  if (window.navigation) {
    navigation.addEventListener('navigate', (event) => {
      const url = event.destination.url;
      if (!/^https?:/i.test(url) && url !== 'about:blank') {
        // file:, javascript:, ... never reach the network (and the URL policy): stop them here, say so.
        if (event.cancelable) event.preventDefault();
        window.__symphonyRefused.push(url);
      } else if (!event.destination.sameDocument && !event.downloadRequest) {
        window.__symphonyNavigations += 1;
      }
    });
  }
  const sameTab = (event) => {
    const target = event.target instanceof Element ? event.target.closest('a[href], area[href], form') : null;
    if (!target) return;
    const url = target.tagName === 'FORM' ? target.action : target.href;
    if (/^(file|data|blob|filesystem|chrome|chrome-extension|devtools|view-source|about|ftp):/i.test(url)) {
      event.preventDefault();  // Chromium would block most of them silently; say so instead
      window.__symphonyRefused.push(url);
    } else if (target.target && target.target !== '_self') {
      target.target = '_self';
    }
  };
  document.addEventListener('click', sameTab, true);
  document.addEventListener('submit', sameTab, true);
  document.addEventListener('DOMContentLoaded', () => {
    for (const base of document.querySelectorAll('base[target]')) base.removeAttribute('target');
  });
  window.open = function (url) {
    if (url !== undefined && url !== null && String(url) !== '') window.location.assign(String(url));
    return null;
  };
})();
"""

# The navigations counted so far in this document; the action waits for a load when it grew.
NAVIGATIONS_SCRIPT = "() => window.__symphonyNavigations || 0"

# Waits until the scroll position holds still over two frames (wheel scrolling lands on a later frame).
SCROLL_SETTLED_SCRIPT = """
() => new Promise((resolve) => {
  let last = -1, still = 0, frames = 0;
  const tick = () => {
    const now = window.scrollY;
    still = now === last ? still + 1 : 0;
    last = now;
    frames += 1;
    if (still >= 2 || frames > 60) resolve(now); else requestAnimationFrame(tick);
  };
  requestAnimationFrame(tick);
})
"""

# Picks the option of the <select> at (x, y) whose text (or value) is the wanted one, exactly or else as a part,
# as a user's choice would (input and change events). Answers true, the options when none fits, null when no list.
CHOOSE_OPTION_SCRIPT = """
([x, y, wanted]) => {
  const hit = document.elementFromPoint(x, y);
  const select = hit ? hit.closest('select') : null;
  if (!select) return null;
  const norm = (text) => (text || '').replace(/\\s+/g, ' ').trim().toLowerCase();
  const want = norm(wanted);
  const options = Array.from(select.options).filter((option) => !option.disabled);
  const option = options.find((o) => norm(o.text) === want || norm(o.value) === want)
    || options.find((o) => want && norm(o.text).includes(want));
  if (!option) return options.map((o) => o.text.trim());
  select.value = option.value;
  select.dispatchEvent(new Event('input', {bubbles: true}));
  select.dispatchEvent(new Event('change', {bubbles: true}));
  return true;
}
"""

SNAPSHOT_SCRIPT = """
([maxElements, maxElementText, maxText]) => {
  const selector = [
    'a[href]', 'button', 'input:not([type=hidden])', 'select', 'textarea', 'summary',
    '[role=button]', '[role=link]', '[role=tab]', '[role=menuitem]', '[role=checkbox]', '[role=option]',
    '[onclick]', '[contenteditable=""]', '[contenteditable=true]',
  ].join(',');
  const width = window.innerWidth, height = window.innerHeight;
  const squash = (text) => (text || '').replace(/\\s+/g, ' ').trim();
  const visible = (el) => !el.checkVisibility || el.checkVisibility({opacityProperty: true, visibilityProperty: true});
  const roleOf = (el) => {
    const role = el.getAttribute('role');
    if (role) return role;
    const tag = el.tagName.toLowerCase();
    if (tag === 'a') return 'link';
    if (tag === 'textarea' || el.isContentEditable) return 'textbox';
    if (tag === 'input') {
      const type = (el.getAttribute('type') || 'text').toLowerCase();
      if (['button', 'submit', 'reset', 'image'].includes(type)) return 'button';
      if (['checkbox', 'radio', 'range', 'file', 'color'].includes(type)) return type;
      return type === 'search' ? 'searchbox' : 'textbox';
    }
    return el.hasAttribute('onclick') && tag !== 'button' ? 'clickable' : tag;
  };
  const cap = (text) => (text.length > maxElementText ? text.slice(0, maxElementText - 1) + '…' : text);
  const nameOf = (el) => {
    if (['INPUT', 'TEXTAREA', 'SELECT'].includes(el.tagName) && !['button', 'submit', 'reset'].includes(el.type)) {
      // A field: its label, then what it holds ("Search: freeze first row").
      const label = squash(el.getAttribute('aria-label') || el.getAttribute('placeholder') || el.getAttribute('title')
        || (el.labels && el.labels[0] ? el.labels[0].innerText : '') || el.name);
      const value = el.type === 'password' ? '' : squash(el.tagName === 'SELECT'
        ? (el.selectedOptions[0] ? el.selectedOptions[0].text : '') : el.value);
      return cap(label && value ? label + ': ' + value : label || value);
    }
    const image = el.querySelector('img[alt]');
    const candidates = [
      el.getAttribute('aria-label'), el.innerText, el.value, el.getAttribute('alt'),
      image ? image.getAttribute('alt') : '', el.getAttribute('title'),
    ];
    return cap(candidates.map(squash).find((value) => value) || '');
  };
  const clipped = (rect) => {
    const left = Math.max(0, rect.left), top = Math.max(0, rect.top);
    const right = Math.min(width, rect.right), bottom = Math.min(height, rect.bottom);
    return right - left >= 1 && bottom - top >= 1 ? {left, top, right, bottom} : null;
  };
  const union = (a, b) => (a ? {
    left: Math.min(a.left, b.left), top: Math.min(a.top, b.top),
    right: Math.max(a.right, b.right), bottom: Math.max(a.bottom, b.bottom),
  } : b);
  // What the element covers inside the viewport: the union of its own boxes and those of what it holds. A link
  // wrapping a picture has only a line-high box of its own, a thin strip under the picture; the picture's box
  // is the rest. `first` is the first visible box (of the element, else of what it holds).
  const boxesOf = (el) => {
    let whole = null, first = null;
    const add = (rect) => {
      const box = clipped(rect);
      if (box) { whole = union(whole, box); first = first || box; }
    };
    for (const rect of el.getClientRects()) add(rect);
    const inside = el.querySelectorAll('*');
    for (let n = 0; n < inside.length && n < 200; n++) {
      const rects = inside[n].getClientRects();
      if (rects.length && visible(inside[n])) for (const rect of rects) add(rect);
    }
    return {whole, first};
  };
  const onTop = (el, box) => {
    const hit = document.elementFromPoint((box.left + box.right) / 2, (box.top + box.bottom) / 2);
    return hit && (el === hit || el.contains(hit));
  };
  const elements = [];
  const centres = new Set();
  for (const el of document.querySelectorAll(selector)) {
    if (el.disabled || !visible(el)) continue;
    const {whole, first} = boxesOf(el);
    if (!whole) continue;
    // Clicks land on the box's centre. A link wrapped over two lines spans both, and the centre of the whole
    // may fall on other text: then its first box. Neither on top: covered by something else, e.g. a banner.
    const box = onTop(el, whole) ? whole : onTop(el, first) ? first : null;
    if (!box) continue;
    const x = (box.left + box.right) / 2, y = (box.top + box.bottom) / 2;
    const centre = Math.round(x) + ',' + Math.round(y);
    if (centres.has(centre)) continue;
    centres.add(centre);
    elements.push({
      role: roleOf(el), name: nameOf(el), href: el.tagName === 'A' ? el.href : null,
      left: Math.floor(box.left), top: Math.floor(box.top),
      width: Math.ceil(box.right) - Math.floor(box.left), height: Math.ceil(box.bottom) - Math.floor(box.top),
    });
  }
  elements.sort((a, b) => a.top - b.top || a.left - b.left);

  // The text inside the viewport, in document order, one line per block.
  const pieces = [];
  let length = 0, lastBlock = null;
  const walker = document.createTreeWalker(document.body || document.documentElement, NodeFilter.SHOW_TEXT, {
    acceptNode: (node) => {
      const parent = node.parentElement;
      if (!parent || !node.data.trim() || ['SCRIPT', 'STYLE', 'NOSCRIPT', 'TEMPLATE'].includes(parent.tagName)) {
        return NodeFilter.FILTER_REJECT;
      }
      return NodeFilter.FILTER_ACCEPT;
    },
  });
  const range = document.createRange();
  for (let node = walker.nextNode(); node && length < maxText; node = walker.nextNode()) {
    range.selectNodeContents(node);
    const rect = range.getBoundingClientRect();
    if (rect.bottom <= 0 || rect.top >= height || rect.right <= 0 || rect.left >= width) continue;
    if (!visible(node.parentElement)) continue;
    const text = squash(node.data);
    let block = node.parentElement;
    while (block && getComputedStyle(block).display.startsWith('inline')) block = block.parentElement;
    const separator = pieces.length === 0 ? '' : block === lastBlock ? ' ' : '\\n';
    lastBlock = block;
    pieces.push(separator + text);
    length += separator.length + text.length;
  }
  let text = pieces.join('');
  if (text.length > maxText) text = text.slice(0, maxText - 1) + '…';
  const scroller = document.scrollingElement || document.documentElement;
  return {
    elements: elements.slice(0, maxElements), text,
    scrollTop: Math.round(scroller.scrollTop), scrollHeight: Math.round(scroller.scrollHeight),
    title: document.title,
  };
}
"""


@dataclass(frozen=True)
class DomSnapshot:
    elements: list[PageElement]
    text: str
    scroll_top: int
    scroll_height: int
    title: str


def read_snapshot(raw: dict[str, Any]) -> DomSnapshot:
    """The snapshot script's answer as contract types; elements numbered from 1 in reading order."""
    elements = [
        PageElement(
            id=index,
            role=str(item["role"]),
            name=str(item["name"]),
            href=item.get("href") or None,
            box=Rect(left=item["left"], top=item["top"], width=item["width"], height=item["height"]),
        )
        for index, item in enumerate(raw["elements"], start=1)
    ]
    return DomSnapshot(
        elements=elements,
        text=str(raw["text"]),
        scroll_top=int(raw["scrollTop"]),
        scroll_height=int(raw["scrollHeight"]),
        title=str(raw["title"]),
    )
