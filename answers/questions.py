"""What a question must hold to be asked, for the API and the page's form alike."""

from __future__ import annotations

import unicodedata

# Letters, marks on them aside, numbers, punctuation and symbols are what a reader sees. Whitespace,
# format characters (zero-width space, BOM, bidi controls), controls, separators, private-use and
# unassigned code points show nothing (or nothing a question is made of).
_VISIBLE_CATEGORIES = frozenset("LNPS")

NO_VISIBLE_CHARACTER = "The question must hold at least one visible character."


def has_visible_character(text: str) -> bool:
    """Whether `text` holds a character a reader would see (not only spaces or invisible characters)."""
    return any(unicodedata.category(c)[0] in _VISIBLE_CATEGORIES for c in text)
