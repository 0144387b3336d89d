"""The demo corpus: the Python language reference topics shipped with CPython (`pydoc_data.topics`)."""

from __future__ import annotations

import sys
from functools import lru_cache
from pydoc_data.topics import topics

from django.db import transaction

from answers.content.ingest import IngestReport, ingest_records
from answers.content.readers import Record
from answers.content.storage import build_chunks, document_values
from answers.content.validation import CleanDocument, clean_document
from answers.models import Chunk, Document
from answers.retrieval.chunking import ChunkSpec, chunk_text

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
            [Document(key=c.key, **document_values(c)) for c, _ in prepared]
        )
        chunks = [
            chunk
            for document, (_, specs) in zip(documents, prepared, strict=True)
            for chunk in build_chunks(document, specs)
        ]
        Chunk.objects.bulk_create(chunks, batch_size=1000)
    return IngestReport(created=len(documents))
