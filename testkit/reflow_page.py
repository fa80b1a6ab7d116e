"""A page whose links move: a tall column of links (some wrapping onto two lines) that scrolls, and a button that
(3 s later) turns an empty block above them into a banner (a reflow by style alone, no node added). It reports each
link's DOM box after each layout change (load, resize, scroll, the banner) the way `reporting_page` does, with the
scroll offset and the banner count, so a test can check that the accessibility tree follows the page."""

from __future__ import annotations

LINKS = 40

PAGE = f"""<!doctype html>
<html><head><meta charset="utf-8"><title>Reflow page</title>
<style>
  body {{ margin: 0; font: 16px DejaVu Sans, sans-serif; }}
  nav {{ width: 170px; padding: 8px 24px; }}
  nav a {{ display: inline; line-height: 22px; }}
  .banner {{ height: 137px; background: #36c; color: #fff; }}
  button {{ font: inherit; margin: 8px 24px; }}
</style></head>
<body>
  <button id="insert">Insert banner</button>
  <div id="banners"></div>
  <nav>{
    "".join(
        f'<p><a href="#l{i}" data-report="Link {i}">Link {i}{" goes on over two lines" if i % 3 == 0 else ""}</a></p>'
        for i in range(LINKS)
    )
}</nav>
<script>
  let banners = 0;
  function report() {{
    const boxes = {{}};
    for (const el of document.querySelectorAll("[data-report]")) {{
      const r = el.getBoundingClientRect();
      if (r.bottom <= 0 || r.top >= innerHeight) continue;
      boxes[el.dataset.report] = {{left: r.left, top: r.top, width: r.width, height: r.height}};
    }}
    const sent = performance.timeOrigin + performance.now();  // posts may arrive out of order: the last sent wins
    fetch("/report", {{method: "POST", body: JSON.stringify({{boxes, scrollY, banners, ready: true, sent}})}});
  }}
  // The banner shows three seconds after the press, apart from the events of the press itself.
  document.getElementById("insert").addEventListener("click", () => setTimeout(() => {{
    document.getElementById("banners").className = "banner";  // a style change only: no node added
    banners += 1;
    requestAnimationFrame(() => requestAnimationFrame(report));
  }}, 3000));
  addEventListener("load", report);
  addEventListener("resize", report);
  addEventListener("scroll", () => requestAnimationFrame(report));
</script></body></html>
"""
