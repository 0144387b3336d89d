"""The site's content: validating, storing and chunking documents, and reading them from files and feeds.

Services (writes): `document_upsert` (`document_store`), `document_delete`, `ingest_paths`,
`ingest_records`, `load_demo_corpus`. Everything that stores a document goes
through `clean_document` first, so the ingest command and the documents API
accept and reject exactly the same input.

File keys: a file's document key is its absolute `file://` URI, unless the file
names its own (Markdown front matter `key:`/`url:`, HTML `<link rel="canonical">`):
re-ingesting the same files updates them; moving them creates new documents.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from django.db import IntegrityError, transaction

from answers.models import Chunk, Document
from answers.rendering import link_url
from answers.retrieval.chunking import ChunkSpec, chunk_text

KEY_MAX = 2000
TITLE_MAX = 500
URL_MAX = 2000
TYPE_MAX = 100
HEADING_MAX = 500
BODY_MAX = 5_000_000
SUFFIXES = (".md", ".markdown", ".txt", ".html", ".htm", ".json", ".jsonl")


class InvalidDocument(ValueError):
    """Input that cannot become a document; `field` names the culprit."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


@dataclass(frozen=True)
class CleanDocument:
    key: str
    title: str
    url: str
    body: str
    doc_type: str
    metadata: dict[str, Any]
    # Problems that did not stop the document from being stored (e.g. an unsafe URL dropped).
    warnings: dict[str, str] = field(default_factory=dict)


def safe_url(url: str) -> str | None:
    """The URL to store: "" when none is given, the URL if it may become a link, else None."""
    url = url.strip()
    return link_url(url) if url else ""


def _text(value: object, name: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise InvalidDocument(name, "must be a string.")
    # PostgreSQL text cannot hold NUL characters.
    return value.replace("\x00", "")


def clean_document(
    *,
    key: object,
    title: object,
    url: object = "",
    body: object,
    doc_type: object = "",
    metadata: object = None,
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
    url_s = _text(url, "url").strip()
    warnings: dict[str, str] = {}
    if len(url_s) > URL_MAX:
        raise InvalidDocument("url", f"is longer than {URL_MAX} characters.")
    checked = safe_url(url_s)
    if checked is None:
        warnings["url"] = (
            f"{url_s[:80]!r} is not an http(s) or site-relative URL; the document is stored without a link."
        )
        checked = ""
    return CleanDocument(key_s, title_s, checked, body_s, doc_type_s, metadata, warnings)


def content_hash(*, title: str, body: str) -> str:
    """What the chunks are built from: the title (copied into each chunk) and the body."""
    return hashlib.sha256(f"{title}\x00{body}".encode()).hexdigest()


def _build_chunks(document: Document, specs: Iterable[ChunkSpec] | None = None) -> list[Chunk]:
    """The document's chunk rows, from `specs` when already computed (else chunked now)."""
    return [
        Chunk(
            document=document,
            ordinal=i,
            heading=spec.heading[:HEADING_MAX],
            title=document.title,
            text=spec.text,
            start_offset=spec.start,
            end_offset=spec.end,
        )
        for i, spec in enumerate(chunk_text(document.body) if specs is None else specs)
    ]


def document_upsert(
    *,
    key: str,
    title: str,
    url: str,
    body: str,
    doc_type: str = "",
    metadata: dict[str, Any] | None = None,
) -> tuple[Document, bool, bool]:
    """Create or update the document with this key: (document, created, changed).

    `changed` is True when any stored field changed (always on create). The
    chunks are rebuilt only when the content hash (title and body) changed.
    Raises InvalidDocument; an unsafe URL is stored as "" (see clean_document).
    """
    clean = clean_document(key=key, title=title, url=url, body=body, doc_type=doc_type, metadata=metadata)
    return document_store(clean=clean)


def document_store(*, clean: CleanDocument) -> tuple[Document, bool, bool]:
    """document_upsert for input already through clean_document (the API shows its warnings)."""
    digest = content_hash(title=clean.title, body=clean.body)
    values: dict[str, Any] = {
        "title": clean.title,
        "url": clean.url,
        "body": clean.body,
        "doc_type": clean.doc_type,
        "metadata": clean.metadata,
        "content_hash": digest,
    }
    with transaction.atomic():
        document = Document.objects.select_for_update().filter(key=clean.key).first()
        if document is None:
            try:
                with transaction.atomic():
                    document = Document.objects.create(key=clean.key, **values)
            except IntegrityError:
                # Someone created it meanwhile: update theirs instead.
                document = Document.objects.select_for_update().get(key=clean.key)
            else:
                Chunk.objects.bulk_create(_build_chunks(document), batch_size=500)
                return document, True, True
        changed_fields = [name for name, value in values.items() if getattr(document, name) != value]
        if not changed_fields:
            return document, False, False
        rebuild = document.content_hash != digest
        for name in changed_fields:
            setattr(document, name, values[name])
        document.save(update_fields=[*changed_fields, "updated_at"])
        if rebuild:
            document.chunks.all().delete()
            Chunk.objects.bulk_create(_build_chunks(document), batch_size=500)
        return document, False, True


def document_delete(*, document: Document) -> None:
    """Delete a document and its chunks (answers keep their snapshots)."""
    document.delete()


# --- Reading files and feeds -------------------------------------------------------------


@dataclass(frozen=True)
class Record:
    """One document read from a file or feed, with where it came from (path:line)."""

    where: str
    fields: dict[str, Any]


@dataclass(frozen=True)
class Problem:
    where: str
    reason: str


@dataclass
class IngestReport:
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    skipped_files: int = 0
    failures: list[Problem] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)

    @property
    def failed(self) -> int:
        return len(self.failures)

    @property
    def ok(self) -> bool:
        return not self.failures

    def summary(self) -> str:
        counts = (("created", self.created), ("updated", self.updated), ("unchanged", self.unchanged))
        return ", ".join(f"{name} {n}" for name, n in (*counts, ("failed", self.failed)))


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
    from bs4 import BeautifulSoup, Tag

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


def collect_files(paths: Iterable[str | Path], report: IngestReport) -> list[Path]:
    """The files to read: named files as given, folders recursively (unknown suffixes skipped)."""
    files: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            for child in sorted(p for p in path.rglob("*") if p.is_file()):
                if child.suffix.lower() in PARSERS:
                    files.append(child)
                else:
                    report.skipped_files += 1
        elif path.is_file():
            if path.suffix.lower() in PARSERS:
                files.append(path)
            else:
                report.failures.append(
                    Problem(str(path), f"unsupported file type (use {', '.join(SUFFIXES)})")
                )
        else:
            report.failures.append(Problem(str(path), "no such file or folder"))
    return files


def ingest_record(record: Record, report: IngestReport) -> None:
    """Store one record, counting it in the report; a bad record is reported, never raised."""
    try:
        raw = record.fields
        if "item" in raw:
            if isinstance(raw["item"], InvalidDocument):
                raise raw["item"]
            raw = feed_fields(raw["item"])
        clean = clean_document(**raw)
        _, created, changed = document_store(clean=clean)
    except InvalidDocument as exc:
        report.failures.append(Problem(record.where, str(exc)))
        return
    for name, message in clean.warnings.items():
        report.warnings.append(Problem(record.where, f"{name}: {message}"))
    if created:
        report.created += 1
    elif changed:
        report.updated += 1
    else:
        report.unchanged += 1


def ingest_records(records: Iterable[Record], report: IngestReport | None = None) -> IngestReport:
    report = report or IngestReport()
    for record in records:
        ingest_record(record, report)
    return report


def ingest_paths(
    paths: Iterable[str | Path],
    *,
    on_file: Callable[[Path], None] | None = None,
    on_total: Callable[[int], None] | None = None,
) -> IngestReport:
    """Ingest files and folders; failures are collected with path:line and reason, the rest goes in."""
    report = IngestReport()
    files = collect_files(paths, report)
    if on_total:
        on_total(len(files))
    for path in files:
        try:
            records = PARSERS[path.suffix.lower()](path)
        except UnreadableSource as exc:
            where = f"{path}:{exc.line}" if exc.line else str(path)
            report.failures.append(Problem(where, exc.reason))
        else:
            ingest_records(records, report)
        if on_file:
            on_file(path)
    return report


# --- The demo corpus: the Python language reference topics shipped with CPython -----------

# Which docs.python.org page holds each pydoc topic; the topic name is also the
# Sphinx label, which is an anchor on that page.
_PYDOC_PAGES: dict[str, tuple[str, ...]] = {
    "reference/simple_stmts.html": (
        "assert", "assignment", "augassign", "break", "continue", "del", "global", "import",
        "nonlocal", "pass", "raise", "return", "yield",
    ),
    "reference/compound_stmts.html": (
        "async", "class", "compound", "else", "for", "function", "if", "try", "while", "with",
    ),
    "reference/expressions.html": (
        "atom-identifiers", "atom-literals", "attribute-references", "await", "binary", "bitwise",
        "booleans", "calls", "comparisons", "conversions", "dict", "exprlists", "in", "lambda",
        "lists", "operator-summary", "power", "shifting", "slicings", "subscriptions", "unary",
    ),
    "reference/datamodel.html": (
        "attribute-access", "callable-types", "context-managers", "customization", "numeric-types",
        "objects", "sequence-types", "specialnames", "types",
    ),
    "reference/executionmodel.html": ("dynamic-features", "exceptions", "execmodel", "naming"),
    "reference/lexical_analysis.html": (
        "floating", "id-classes", "identifiers", "imaginary", "integers", "numbers", "strings",
    ),
    "library/stdtypes.html": (
        "bltin-code-objects", "bltin-ellipsis-object", "bltin-null-object", "bltin-type-objects",
        "specialattrs", "string-methods", "truth", "typesfunctions", "typesmapping", "typesmethods",
        "typesmodules", "typesseq", "typesseq-mutable",
    ),
    "library/pdb.html": ("debugger",),
    "library/string.html": ("formatstrings",),
}  # fmt: skip
_PYDOC_PAGE_OF = {topic: page for page, topics in _PYDOC_PAGES.items() for topic in topics}


def pydoc_url(topic: str) -> str:
    """The topic's section on docs.python.org for this Python version (search page if unknown)."""
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    page = _PYDOC_PAGE_OF.get(topic)
    if page is None:
        return f"https://docs.python.org/{version}/search.html?q={topic}"
    return f"https://docs.python.org/{version}/{page}#{topic}"


@lru_cache(maxsize=1)
def demo_records() -> tuple[Record, ...]:
    """One record per `pydoc_data.topics` topic; identical topics (`else` is `if`) once."""
    from pydoc_data.topics import topics

    by_body: dict[str, str] = {}
    for name in sorted(topics):
        body = topics[name].strip("\n")
        first = body.splitlines()[0] if body else name
        title = first.replace('"', "").strip()
        kept = by_body.get(body)
        # Of identical topics keep the one the title names ("if", not "else").
        if kept is None or (name in title.lower().split() and kept not in title.lower().split()):
            by_body[body] = name
    records = []
    for body, name in sorted(by_body.items(), key=lambda pair: pair[1]):
        title = body.splitlines()[0].replace('"', "").strip()
        fields = {
            "key": f"pydoc:{name}",
            "title": title,
            "url": pydoc_url(name),
            "body": body,
            "doc_type": "python-reference",
            "metadata": {"topic": name, "python": f"{sys.version_info.major}.{sys.version_info.minor}"},
        }
        records.append(Record(f"pydoc_data.topics[{name!r}]", fields))
    return tuple(records)


@lru_cache(maxsize=1)
def _demo_clean() -> tuple[tuple[CleanDocument, tuple[ChunkSpec, ...]], ...]:
    out = []
    for record in demo_records():
        clean = clean_document(**record.fields)
        out.append((clean, tuple(chunk_text(clean.body))))
    return tuple(out)


def load_demo_corpus() -> IngestReport:
    """Ingest (or refresh) the demo corpus; idempotent.

    Into a database without any of it, the documents and chunks go in with two
    bulk inserts (the `make run` first start and the tests' fixture).
    """
    if Document.objects.filter(key__startswith="pydoc:").exists():
        return ingest_records(demo_records())
    prepared = _demo_clean()
    with transaction.atomic():
        documents = Document.objects.bulk_create(
            [
                Document(
                    key=c.key,
                    title=c.title,
                    url=c.url,
                    body=c.body,
                    doc_type=c.doc_type,
                    metadata=c.metadata,
                    content_hash=content_hash(title=c.title, body=c.body),
                )
                for c, _ in prepared
            ]
        )
        chunks = [
            chunk
            for document, (_, specs) in zip(documents, prepared, strict=True)
            for chunk in _build_chunks(document, specs)
        ]
        Chunk.objects.bulk_create(chunks, batch_size=1000)
    return IngestReport(created=len(documents))
