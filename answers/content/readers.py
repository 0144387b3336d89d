"""Reading documents from files and feeds into records; plain Python (no Django), tested in tests/unit.

File keys: a file's document key is its absolute `file://` URI, unless the file
names its own (Markdown front matter `key:`/`url:`, HTML `<link rel="canonical">`):
re-ingesting the same files updates them; moving them creates new documents.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bs4 import BeautifulSoup, Tag

from answers.content.validation import TITLE_MAX, InvalidDocument, safe_url

SUFFIXES = (".md", ".markdown", ".txt", ".html", ".htm", ".json", ".jsonl")


@dataclass(frozen=True)
class Record:
    """One document read from a file or feed, with where it came from (path:line)."""

    where: str
    fields: dict[str, Any]


@dataclass(frozen=True)
class Problem:
    where: str
    reason: str


class UnreadableSource(ValueError):
    """A whole file could not be read; `line` is set when the position is known."""

    def __init__(self, reason: str, line: int | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.line = line


_FRONT_MATTER = re.compile(r"\A---[ \t]*\n(.*?)\n---[ \t]*(?:\n|\Z)", re.DOTALL)
_MD_HEADING = re.compile(r"^ {0,3}#{1,6}[ \t]+(.+?)[ \t]*#*[ \t]*$", re.MULTILINE)
_SETEXT = re.compile(r"^(?! {4})(\S.*)\n {0,3}(=+|-+)[ \t]*$", re.MULTILINE)


def _short_title(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= TITLE_MAX else text[: TITLE_MAX - 1].rstrip() + "…"


def _title_from_name(path: Path) -> str:
    return _short_title(re.sub(r"[-_]+", " ", path.stem).strip().capitalize() or path.name)


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise UnreadableSource(f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise UnreadableSource(exc.strerror or str(exc)) from None


def parse_markdown(path: Path) -> list[Record]:
    """One document; title from the first heading (or front matter `title:`), else the file name."""
    text = _read_text(path)
    meta: dict[str, str] = {}
    front = _FRONT_MATTER.match(text)
    if front:
        for line in front.group(1).splitlines():
            name, sep, value = line.partition(":")
            if sep:
                meta[name.strip().lower()] = value.strip().strip("\"'")
        text = text[front.end() :]
    heading = _MD_HEADING.search(text) or _SETEXT.search(text)
    title = meta.get("title") or (_short_title(heading.group(1)) if heading else _title_from_name(path))
    url = meta.get("url", "")
    key = meta.get("key") or meta.get("id") or (url if url and safe_url(url) else path.resolve().as_uri())
    fields = {"key": key, "title": title, "url": url, "body": text, "doc_type": meta.get("type", "markdown")}
    return [Record(str(path), fields)]


def parse_text(path: Path) -> list[Record]:
    """One document titled after the file name."""
    text = _read_text(path)
    fields = {"key": path.resolve().as_uri(), "title": _title_from_name(path), "url": "", "body": text}
    return [Record(str(path), {**fields, "doc_type": "text"})]


_DROP_TAGS = ("script", "style", "noscript", "template", "iframe", "svg", "head")
_BLOCK_TAGS = (
    "p", "div", "section", "article", "main", "aside", "header", "footer", "nav", "li", "ul", "ol",
    "table", "tr", "pre", "blockquote", "dl", "dt", "dd", "figure", "figcaption", "br", "hr",
)  # fmt: skip


def html_to_text(html: str) -> tuple[str, str, str]:
    """(title, text, canonical URL) of a page: scripts and styles dropped, headings kept as `#` lines."""
    soup = BeautifulSoup(html, "lxml")
    title = ""
    if soup.title and soup.title.get_text(strip=True):
        title = soup.title.get_text(" ", strip=True)
    h1 = soup.find("h1")
    if not title and isinstance(h1, Tag):
        title = h1.get_text(" ", strip=True)
    canonical = ""
    link = soup.find("link", rel="canonical")
    if isinstance(link, Tag):
        canonical = str(link.get("href") or "")
    for tag in soup.find_all(_DROP_TAGS):
        tag.decompose()
    root = soup.body or soup
    for level in range(1, 7):
        for tag in root.find_all(f"h{level}"):
            text = tag.get_text(" ", strip=True)
            tag.replace_with(f"\n\n{'#' * level} {text}\n\n")
    for tag in root.find_all(_BLOCK_TAGS):
        tag.insert_before("\n\n")
        tag.insert_after("\n\n")
    raw = root.get_text()
    lines = [" ".join(line.split()) for line in raw.splitlines()]
    text = re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()
    return _short_title(title), text, canonical


def parse_html(path: Path) -> list[Record]:
    """One document: text without scripts/styles; title from <title> or <h1>; key from rel=canonical."""
    title, text, canonical = html_to_text(_read_text(path))
    canonical_ok = bool(canonical) and bool(safe_url(canonical))
    fields = {
        "key": canonical if canonical_ok else path.resolve().as_uri(),
        "title": title or _title_from_name(path),
        "url": canonical if canonical_ok else "",
        "body": text,
        "doc_type": "html",
    }
    return [Record(str(path), fields)]


def feed_fields(item: object) -> dict[str, Any]:
    """A feed item {"url"|"id", "title", "body"|"content"} (JSON Feed's content_text/content_html too)."""
    if not isinstance(item, dict):
        raise InvalidDocument("item", "is not a JSON object.")
    key = item.get("id", item.get("key"))
    if isinstance(key, int) and not isinstance(key, bool):
        key = str(key)
    url = item.get("url") or ""
    if not key:
        key = url
    if not key:
        raise InvalidDocument("id", 'is required ("url" or "id").')
    body = item.get("body", item.get("content", item.get("content_text")))
    if body is None and isinstance(item.get("content_html"), str):
        body = html_to_text(item["content_html"])[1]
    return {
        "key": key,
        "title": item.get("title"),
        "url": url,
        "body": body,
        "doc_type": item.get("type", item.get("doc_type", "")),
        "metadata": item.get("metadata"),
        "access": item.get("access"),
    }


def _line_of(text: str, index: int) -> int:
    return text.count("\n", 0, index) + 1


def _json_array_items(text: str) -> Iterator[tuple[int, object]]:
    """Items of a top-level JSON array with the line each starts on."""
    decoder = json.JSONDecoder()
    ws = re.compile(r"\s*")

    def skip(i: int) -> int:
        match = ws.match(text, i)
        return match.end() if match else i

    i = skip(0) + 1  # past "["
    while True:
        i = skip(i)
        if i < len(text) and text[i] == "]":
            return
        item, end = decoder.raw_decode(text, i)
        yield _line_of(text, i), item
        i = skip(end)
        if i < len(text) and text[i] == ",":
            i += 1


def parse_json(path: Path) -> list[Record]:
    """A feed: an array of items, or an object with "items" (JSON Feed) or "documents"."""
    text = _read_text(path)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UnreadableSource(f"invalid JSON: {exc.msg}", exc.lineno) from None
    if isinstance(data, list):
        return [Record(f"{path}:{line}", {"item": item}) for line, item in _json_array_items(text.lstrip())]
    if isinstance(data, dict):
        items = data.get("items", data.get("documents"))
        if isinstance(items, list):
            return [Record(f"{path}:items[{i}]", {"item": item}) for i, item in enumerate(items)]
        if "title" in data:
            return [Record(f"{path}:1", {"item": data})]
    raise UnreadableSource('expected an array of items or an object with "items"', 1)


def parse_jsonl(path: Path) -> list[Record]:
    """A feed with one JSON item per line; a bad line fails alone."""
    records: list[Record] = []
    for number, line in enumerate(_read_text(path).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            item: object = json.loads(line)
        except json.JSONDecodeError as exc:
            item = InvalidDocument("json", f"invalid JSON: {exc.msg} (column {exc.colno})")
        records.append(Record(f"{path}:{number}", {"item": item}))
    return records


PARSERS: dict[str, Callable[[Path], list[Record]]] = {
    ".md": parse_markdown,
    ".markdown": parse_markdown,
    ".txt": parse_text,
    ".html": parse_html,
    ".htm": parse_html,
    ".json": parse_json,
    ".jsonl": parse_jsonl,
}
