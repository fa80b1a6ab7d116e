// Every piece of text a page shows in the viewport, for OCR ground truth: lines of runs (characters
// between spaces) with the x edge of every character, in CSS px == screen px (kiosk window at 0,0).
// A run is "clear" when it lies fully inside the viewport and hit-testing finds its own element at its
// centre and corners (so it is neither covered nor clipped). Text that is drawn but has no text node
// (input values, ::before/::after content) is reported too, never clear, so that phrases it repeats
// are not taken as unique.
() => {
  const width = document.documentElement.clientWidth;
  const height = document.documentElement.clientHeight;
  const range = document.createRange();
  const segments = [];

  const kindOf = (el) => {
    if (el.closest(".sphinxsidebar, div.related, div.footer, nav")) return "nav";
    if (el.closest("h1, h2, h3, h4, h5, h6, caption")) return "heading";
    if (el.closest("button, label, .chip, .check")) return "control";
    if (el.closest("code, pre, tt, kbd, .sig")) return "code";
    if (el.closest("a")) return "link";
    return "text";
  };
  const onScreen = (r) => r.right > 0 && r.bottom > 0 && r.left < width && r.top < height;
  const inside = (r) => r.left >= 0 && r.top >= 0 && r.right <= width && r.bottom <= height;
  const hits = (el, r) => {
    const dx = Math.min(2, r.width / 4);
    const dy = Math.min(2, r.height / 4);
    const points = [
      [(r.left + r.right) / 2, (r.top + r.bottom) / 2],
      [r.left + dx, r.top + dy],
      [r.right - dx, r.top + dy],
      [r.left + dx, r.bottom - dy],
      [r.right - dx, r.bottom - dy],
    ];
    return points.every(([x, y]) => document.elementFromPoint(x, y) === el);
  };
  const rectsOf = (node, start, end) => {
    range.setStart(node, start);
    range.setEnd(node, end);
    return [...range.getClientRects()].filter((r) => r.width > 0 && r.height > 0);
  };
  const charEdges = (node, start, end) => {
    const edges = [];
    let last = null;
    for (let i = start; i < end; i++) {
      const rect = rectsOf(node, i, i + 1)[0];
      if (!rect) return null;
      edges.push(rect.left);
      last = rect;
    }
    edges.push(last.right);
    return edges;
  };
  const opaque = (el) => el.checkVisibility({ opacityProperty: true, visibilityProperty: true });

  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const el = node.parentElement;
    if (!el || !/\S/.test(node.data) || !opaque(el)) continue;
    range.selectNodeContents(node);
    if (!onScreen(range.getBoundingClientRect())) continue;
    const kind = kindOf(el);
    const keepsSpaces = /^(pre|pre-wrap|break-spaces)$/.test(getComputedStyle(el).whiteSpace);
    let segment = null;
    let previousEnd = 0;
    for (const match of node.data.matchAll(/\S+/g)) {
      const start = match.index;
      const end = start + match[0].length;
      const rects = rectsOf(node, start, end);
      if (rects.length === 0 || !rects.some(onScreen)) continue;
      const box = rects[0];
      const edges = rects.length === 1 ? charEdges(node, start, end) : null;
      const run = {
        text: match[0],
        edges: edges || [box.left, ...Array(match[0].length - 1).fill(box.left), box.right],
        top: box.top,
        bottom: box.bottom,
        clear: edges !== null && inside(box) && hits(el, box),
        spaces: keepsSpaces ? start - previousEnd : 1,
      };
      previousEnd = end;
      if (!segment || Math.abs(segment.runs.at(-1).top - run.top) > 2) {
        segment = { kind, runs: [] };
        segments.push(segment);
      }
      segment.runs.push(run);
    }
  }

  const drawnText = (el) => {
    const texts = [];
    if (el instanceof HTMLInputElement || el instanceof HTMLTextAreaElement) texts.push(el.value, el.placeholder);
    if (el instanceof HTMLSelectElement && el.selectedOptions.length) texts.push(el.selectedOptions[0].text);
    for (const pseudo of ["::before", "::after"]) {
      const content = getComputedStyle(el, pseudo).content;
      if (content.startsWith('"')) texts.push(content.slice(1, -1));
    }
    return texts.filter((text) => /[A-Za-z0-9]/.test(text));
  };
  for (const el of document.body.querySelectorAll("*")) {
    const box = el.getBoundingClientRect();
    if (!onScreen(box) || !opaque(el)) continue;
    for (const text of drawnText(el)) {
      const step = box.width / text.length;
      const edges = [...Array(text.length + 1).keys()].map((i) => box.left + i * step);
      segments.push({ kind: "drawn", runs: [{ text, edges, top: box.top, bottom: box.bottom, clear: false, spaces: 0 }] });
    }
  }
  return segments;
}
