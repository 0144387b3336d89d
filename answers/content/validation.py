"""Document input validation: the one gate both `manage.py ingest` and the documents API pass through."""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass, field
from typing import Any

from answers.rendering import link_url

KEY_MAX = 2000
TITLE_MAX = 500
URL_MAX = 2000
TYPE_MAX = 100
BODY_MAX = 5_000_000
GROUP_NAME_MAX = 150  # django.contrib.auth's Group.name
# A document's access levels (answers.models.DocumentAccess holds the same values as choices).
PUBLIC_LEVEL, SIGNED_IN_LEVEL, STAFF_LEVEL, GROUPS_LEVEL = "public", "signed-in", "staff", "groups"
LEVELS = (PUBLIC_LEVEL, SIGNED_IN_LEVEL, STAFF_LEVEL)
ACCESS_HELP = 'must be "public", "signed-in", "staff" or a non-empty list of group names.'


class InvalidDocument(ValueError):
    """Input that cannot become a document; `field` names the culprit."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


@dataclass(frozen=True)
class Rule:
    """A document's access: its level and, for `groups`, the group names (sorted, distinct)."""

    level: str
    groups: tuple[str, ...] = ()

    @property
    def value(self) -> str | list[str]:
        """As the API and the feeds write it: the level's name, or the list of group names."""
        return list(self.groups) if self.level == GROUPS_LEVEL else self.level


PUBLIC = Rule(PUBLIC_LEVEL)


def parse_access(value: object, *, command_line: bool = False) -> Rule:
    """The rule an API field, a feed record or `ingest --access` gives; InvalidDocument when none.

    A string is a level (`public`, `signed-in`, `staff`) or, on the command line only, group
    names separated by commas; a list holds group names. None means public.
    """
    if value is None:
        return PUBLIC
    if isinstance(value, str):
        stripped = value.strip()
        if stripped in LEVELS:
            return Rule(stripped)
        if not command_line:
            raise InvalidDocument("access", ACCESS_HELP)
        names: list[Any] = stripped.split(",") if stripped else []
    elif isinstance(value, list | tuple):
        names = list(value)
    else:
        raise InvalidDocument("access", ACCESS_HELP)
    groups: set[str] = set()
    for name in names:
        if not isinstance(name, str) or not name.strip() or has_surrogate(name):
            raise InvalidDocument("access", "group names must be non-empty strings.")
        if len(name.strip()) > GROUP_NAME_MAX:
            raise InvalidDocument("access", f"a group name is longer than {GROUP_NAME_MAX} characters.")
        groups.add(name.strip())
    if not groups:
        raise InvalidDocument("access", ACCESS_HELP)
    return Rule(GROUPS_LEVEL, tuple(sorted(groups)))


@dataclass(frozen=True)
class CleanDocument:
    key: str
    title: str
    url: str
    body: str
    doc_type: str
    metadata: dict[str, Any]
    access: Rule = PUBLIC
    # Problems that did not stop the document from being stored (e.g. an unsafe URL dropped).
    warnings: dict[str, str] = field(default_factory=dict)


# Controls (Cc), format characters (Cf: zero-width, BOM, soft hyphen, every bidi mark and control)
# and line or paragraph separators (Zl, Zp): invisible in a link, or making it read otherwise than it
# goes. By category, not by list, so every such character is refused, present and future.
_INVISIBLE_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp"})


def safe_url(url: str) -> str | None:
    """The URL to store: "" when none is given, the URL if it may become a link, else None.

    Beyond link_url's rule, a document's URL holds no invisible character at all.
    """
    url = url.strip()
    if not url:
        return ""
    if any(unicodedata.category(c) in _INVISIBLE_CATEGORIES for c in url):
        return None
    return link_url(url)


def has_surrogate(text: str) -> bool:
    """Whether `text` holds a lone UTF-16 surrogate (JSON's `"\\ud83d"`): not a character, and
    not storable (UTF-8 cannot encode it), so neither database nor page could take it."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _text(value: object, name: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise InvalidDocument(name, "must be a string.")
    if has_surrogate(value):
        raise InvalidDocument(name, "holds a lone surrogate (half a UTF-16 pair), which is not text.")
    # PostgreSQL text cannot hold NUL characters.
    return value.replace("\x00", "")


def _check_metadata(value: object) -> None:
    """Every key and string of the metadata, however deep, must be storable text."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, str):
            if has_surrogate(item):
                raise InvalidDocument(
                    "metadata", "holds a lone surrogate (half a UTF-16 pair), which is not text."
                )
            if "\x00" in item:
                raise InvalidDocument("metadata", "holds a NUL character, which cannot be stored.")


def clean_document(
    *,
    key: object,
    title: object,
    url: object = "",
    body: object,
    doc_type: object = "",
    metadata: object = None,
    access: object = None,
) -> CleanDocument:
    """Validate and normalise one document's fields, or raise InvalidDocument naming the field."""
    key_s = _text(key, "key").strip()
    if not key_s:
        raise InvalidDocument("key", "is required (the document's URL or feed id).")
    if len(key_s) > KEY_MAX:
        raise InvalidDocument("key", f"is longer than {KEY_MAX} characters.")
    title_s = " ".join(_text(title, "title").split())
    if not title_s:
        raise InvalidDocument("title", "is required.")
    if len(title_s) > TITLE_MAX:
        raise InvalidDocument("title", f"is longer than {TITLE_MAX} characters.")
    body_s = _text(body, "body")
    if not body_s.strip():
        raise InvalidDocument("body", "is empty.")
    if len(body_s) > BODY_MAX:
        raise InvalidDocument("body", f"is longer than {BODY_MAX} characters.")
    doc_type_s = _text(doc_type, "doc_type").strip()
    if len(doc_type_s) > TYPE_MAX:
        raise InvalidDocument("doc_type", f"is longer than {TYPE_MAX} characters.")
    if metadata is None:
        metadata = {}
    if not isinstance(metadata, dict):
        raise InvalidDocument("metadata", "must be a JSON object.")
    _check_metadata(metadata)
    rule = parse_access(access)
    url_s = _text(url, "url").strip()
    warnings: dict[str, str] = {}
    if len(url_s) > URL_MAX:
        raise InvalidDocument("url", f"is longer than {URL_MAX} characters.")
    if "<" in url_s or ">" in url_s:
        # No URL holds them unencoded (RFC 3986), and in a copied answer's Markdown (answer.md)
        # a `>` would end the link and let the rest of the URL write links of its own.
        raise InvalidDocument(
            "url", "holds < or >, which a URL may not hold as written: percent-encode them (%3C, %3E)."
        )
    checked = safe_url(url_s)
    if checked is None:
        warnings["url"] = (
            f"{url_s[:80]!r} is not an http(s) or site-relative URL; the document is stored without a link."
        )
        checked = ""
    return CleanDocument(key_s, title_s, checked, body_s, doc_type_s, metadata, rule, warnings)
