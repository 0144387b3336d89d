"""What a question must hold to be asked, for the API (and its schema) and the page's form alike."""

from __future__ import annotations

import unicodedata

# Whitespace, controls (Cc), format characters (Cf: zero-width space, BOM, bidi marks and
# controls, tags) and separators (Zs, Zl, Zp) show nothing: a question of only these is empty.
_INVISIBLE_CATEGORIES = frozenset({"Cc", "Cf", "Zs", "Zl", "Zp"})
# Read by category over the Basic Multilingual Plane, where all but a few rare ones are (the
# others, e.g. plane 14's tags, count as visible): the OpenAPI pattern below must say exactly
# what is accepted, and its regular expressions (ECMA's, as schema tools read them) cannot name
# characters beyond the BMP in a class.
INVISIBLE = frozenset(
    c for c in map(chr, range(0x10000)) if c.isspace() or unicodedata.category(c) in _INVISIBLE_CATEGORIES
)

NO_VISIBLE_CHARACTER = "The question must hold at least one visible character."
# The most characters a question may hold (docs/reference/http.md, `POST /api/answers/`): a constant of the
# contract, not a setting.
MAX_LENGTH = 2000


def has_visible_character(text: str) -> bool:
    """Whether `text` holds a character a reader would see (not only spaces or invisible characters)."""
    return any(c not in INVISIBLE for c in text)


def question_refusal(text: str) -> str | None:
    """Why `text` cannot be asked, or None when it can: the one rule of the API, the page's form and `ask`."""
    if not has_visible_character(text):
        return NO_VISIBLE_CHARACTER
    if len(text) > MAX_LENGTH:
        return f"Ensure this field has at most {MAX_LENGTH} characters (it has {len(text)})."
    return None


def _escape(c: str) -> str:
    return f"\\u{ord(c):04x}"  # read alike by ECMA and Python regular expressions


def _ranges(chars: frozenset[str]) -> str:
    codes = sorted(map(ord, chars))
    out, start, end = [], codes[0], codes[0]
    for code in [*codes[1:], -1]:
        if code == end + 1:
            end = code
            continue
        out.append(_escape(chr(start)) + (f"-{_escape(chr(end))}" if end > start else ""))
        start = end = code
    return "".join(out)


# One visible character (or NUL, which the patterns using it exclude themselves), as a regular
# expression class: what the OpenAPI schema says a question must hold.
VISIBLE = "[^" + _ranges(INVISIBLE) + "]"
