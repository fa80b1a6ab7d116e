"""find_element: elements by name, text or role, with find_text's contract (exact matches first, approximate
ones marked, none found: an error naming the closest elements seen)."""

from __future__ import annotations

from rapidfuzz import fuzz

from symphony_mcp.elements.filters import role_key
from symphony_mcp.elements.types import Element, ElementMatch
from symphony_mcp.errors import InvalidInputError, clip
from symphony_mcp.vision.ocr.matching import MIN_SCORE, normalize


def find(elements: list[Element], name: str | None, text: str | None, role: str | None) -> list[ElementMatch]:
    """Matches best first: exact before approximate, then by score, then in tree order."""
    if not any(value and value.strip() for value in (name, text, role)):
        raise InvalidInputError("give name, text or role to look for (e.g. name='Save', role='push button')")
    wanted_role = role_key(role) if role else None
    matches = []
    for element in elements:
        if wanted_role is not None and role_key(element.role) != wanted_role:
            continue
        scored = [(field, _score(query, value)) for field, query, value in
                  (("name", name, element.name), ("text", text, element.text)) if query]  # fmt: skip
        if not scored:
            matches.append(ElementMatch(element=element, score=100.0, exact=True, matched="role"))
            continue
        field, (score, exact) = max(scored, key=lambda item: item[1])
        if exact or score >= MIN_SCORE:
            matches.append(ElementMatch(element=element, score=score, exact=exact, matched=field))
    matches.sort(key=lambda m: (not m.exact, -m.score))
    if not matches:
        seen = _closest(elements, name or text)
        raise InvalidInputError(f"no element {_describe(name, text, role)} is on screen. {seen}")
    return matches


def _score(query: str, value: str) -> tuple[float, bool]:
    wanted, seen = normalize(query), normalize(value)
    if not seen:
        return 0.0, False
    return float(fuzz.ratio(wanted, seen)), wanted == seen


def _describe(name: str | None, text: str | None, role: str | None) -> str:
    parts = [f"{label} {clip(value)}" for label, value in (("named", name), ("with text", text), ("of role", role))
             if value]  # fmt: skip
    return " and ".join(parts)


def _closest(elements: list[Element], query: str | None, limit: int = 5) -> str:
    if not elements:
        return "No elements were read at all."
    if query is None:
        roles = sorted({e.role for e in elements})
        return f"Roles seen: {', '.join(roles[:30])}"
    ranked = sorted(elements, key=lambda e: -max(_score(query, e.name)[0], _score(query, e.text)[0]))
    seen = "; ".join(f"{e.id}: {e.role} {clip(e.name or e.text)}" for e in ranked[:limit])
    return f"Closest elements seen: {seen}"
