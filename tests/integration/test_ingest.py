"""`manage.py ingest`: files, folders and feeds go in once, bad ones are reported, the rest still lands."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from answers.content.storage import document_upsert
from answers.content.validation import safe_url
from answers.models import Chunk, Document

pytestmark = pytest.mark.django_db


def run_ingest(*args: str) -> tuple[str, str, int]:
    out, err = StringIO(), StringIO()
    try:
        call_command("ingest", *args, stdout=out, stderr=err)
    except CommandError as exc:
        err.write(str(exc))
        return out.getvalue(), err.getvalue(), exc.returncode
    return out.getvalue(), err.getvalue(), 0


@pytest.fixture
def site(tmp_path: Path) -> Path:
    (tmp_path / "guide.md").write_text("# Brewing tea\n\nBoil the water. Steep for three minutes.\n")
    (tmp_path / "notes.txt").write_text("Loose leaves keep best in a dark tin.\n")
    sub = tmp_path / "pages"
    sub.mkdir()
    (sub / "page.html").write_text(
        "<html><head><title>Kettles</title><style>.x{color:red}</style>"
        "<script>var secret = 'scriptword';</script></head>"
        "<body><h1>Kettle guide</h1><p>An electric kettle boils fast.</p>"
        "<h2>Care</h2><p>Descale it monthly.</p></body></html>"
    )
    (sub / "image.png").write_bytes(b"\x89PNG")
    feed = [
        {"url": "https://example.com/a", "title": "Oolong", "body": "Oolong is partly oxidised."},
        {"id": "feed-2", "title": "Matcha", "content": "Matcha is powdered green tea."},
    ]
    (tmp_path / "feed.json").write_text(json.dumps(feed, indent=2))
    (tmp_path / "feed.jsonl").write_text(
        json.dumps({"url": "/teas/rooibos/", "title": "Rooibos", "body": "Rooibos has no caffeine."}) + "\n"
    )
    return tmp_path


def test_folder_ingest_loads_every_supported_file(site: Path) -> None:
    out, err, code = run_ingest(str(site))
    assert code == 0, err
    assert "created 6, updated 0, unchanged 0, failed 0" in out
    titles = set(Document.objects.values_list("title", flat=True))
    assert titles == {"Brewing tea", "Notes", "Kettles", "Oolong", "Matcha", "Rooibos"}
    assert Chunk.objects.count() >= 6


def test_reingest_is_idempotent_and_never_duplicates(site: Path) -> None:
    run_ingest(str(site))
    chunk_ids = set(Chunk.objects.values_list("id", flat=True))
    out, _, code = run_ingest(str(site))
    assert code == 0
    assert "created 0, updated 0, unchanged 6, failed 0" in out
    assert Document.objects.count() == 6
    assert set(Chunk.objects.values_list("id", flat=True)) == chunk_ids


def test_changed_file_updates_in_place_and_rebuilds_its_chunks(site: Path) -> None:
    run_ingest(str(site))
    document = Document.objects.get(title="Brewing tea")
    before = set(document.chunks.values_list("id", flat=True))
    (site / "guide.md").write_text("# Brewing tea\n\nUse water just off the boil.\n")
    out, _, _ = run_ingest(str(site))
    assert "created 0, updated 1, unchanged 5" in out
    document.refresh_from_db()
    assert "just off the boil" in document.body
    assert not before & set(document.chunks.values_list("id", flat=True))


def test_metadata_change_updates_without_rebuilding_chunks(db: None) -> None:
    document, created, _ = document_upsert(key="k", title="T", url="", body="Body text.")
    chunk_ids = list(document.chunks.values_list("id", flat=True))
    document, created, changed = document_upsert(
        key="k", title="T", url="https://example.com/t", body="Body text.", metadata={"a": 1}
    )
    assert (created, changed) == (False, True)
    assert list(document.chunks.values_list("id", flat=True)) == chunk_ids
    assert document.url == "https://example.com/t"


def test_html_text_drops_scripts_and_styles_and_keeps_headings(site: Path) -> None:
    run_ingest(str(site))
    document = Document.objects.get(title="Kettles")
    assert "scriptword" not in document.body
    assert "color:red" not in document.body
    assert "An electric kettle boils fast." in document.body
    assert set(document.chunks.values_list("heading", flat=True)) == {"Kettle guide", "Care"}


def test_markdown_title_comes_from_first_heading(tmp_path: Path) -> None:
    (tmp_path / "x.md").write_text("Intro line.\n\n## Real title\n\nText.\n")
    run_ingest(str(tmp_path / "x.md"))
    assert Document.objects.get().title == "Real title"


def test_bad_files_and_records_are_reported_while_good_ones_land(tmp_path: Path) -> None:
    (tmp_path / "good.md").write_text("# Good\n\nFine text.\n")
    (tmp_path / "empty.md").write_text("   \n")
    (tmp_path / "binary.txt").write_bytes(b"\xff\xfe\x00bad")
    (tmp_path / "broken.json").write_text('[{"id": "a", "title": "A", "body": "ok"},\n  {oops}\n]')
    (tmp_path / "mixed.json").write_text(
        json.dumps(
            [
                {"id": "m1", "title": "Fine", "body": "Fine body."},
                {"id": "m2", "title": "", "body": "No title."},
                {"title": "No key", "body": "Body."},
            ],
            indent=2,
        )
    )
    (tmp_path / "lines.jsonl").write_text(
        '{"id": "l1", "title": "L1", "body": "One."}\nnot json\n["a list"]\n'
        '{"id": "l4", "title": "L4", "body": ""}\n'
    )
    out, err, code = run_ingest(str(tmp_path), str(tmp_path / "missing.md"))
    assert code == 1
    assert set(Document.objects.values_list("key", flat=True)) == {
        (tmp_path / "good.md").resolve().as_uri(),
        "m1",
        "l1",
    }
    assert f"{tmp_path / 'empty.md'}: body: is empty." in err
    assert f"{tmp_path / 'binary.txt'}: not UTF-8" in err
    assert f"{tmp_path / 'broken.json'}:2: invalid JSON" in err
    assert f"{tmp_path / 'mixed.json'}:7: title: is required." in err
    assert f"{tmp_path / 'mixed.json'}:12: id: is required" in err
    assert f"{tmp_path / 'lines.jsonl'}:2: json: invalid JSON" in err
    assert f"{tmp_path / 'lines.jsonl'}:3: item: is not a JSON object." in err
    assert f"{tmp_path / 'lines.jsonl'}:4: body: is empty." in err
    assert f"{tmp_path / 'missing.md'}: no such file or folder" in err
    assert "created 3, updated 0, unchanged 0, failed 9" in out


def test_unsafe_url_is_stored_without_link_and_reported(tmp_path: Path) -> None:
    feed = [
        {"id": "js", "url": "javascript:alert(1)", "title": "JS", "body": "Body."},
        {"id": "data", "url": "data:text/html,hi", "title": "Data", "body": "Body."},
        {"id": "proto", "url": "//evil.example/x", "title": "Proto", "body": "Body."},
        {"id": "ok", "url": "HTTPS://example.com/ok", "title": "OK", "body": "Body."},
        {"id": "rel", "url": "/docs/x/", "title": "Rel", "body": "Body."},
    ]
    (tmp_path / "feed.json").write_text(json.dumps(feed))
    _, err, code = run_ingest(str(tmp_path))
    assert code == 0
    urls = dict(Document.objects.values_list("key", "url"))
    assert urls == {"js": "", "data": "", "proto": "", "ok": "HTTPS://example.com/ok", "rel": "/docs/x/"}
    assert err.count("warning:") == 3
    assert "javascript:alert(1)" in err


@pytest.mark.parametrize(
    ("url", "safe"),
    [
        ("https://example.com/", True),
        ("http://example.com/a?b#c", True),
        ("/site/relative/", True),
        ("", True),
        ("javascript:alert(1)", False),
        ("JavaScript:alert(1)", False),
        ("vbscript:x", False),
        ("data:text/html,x", False),
        ("//other.example/", False),
        ("/\\evil", False),
        ("http:///nohost", False),
        ("ftp://example.com/", False),
        ("relative/path", False),
        ("https://exa\nmple.com", False),
        # Invisible or bidi characters (categories Cc, Cf, Zl, Zp), anywhere in the URL.
        ("https://example.org/a\u200eb", False),
        ("https://example.org/a\u200fb", False),
        ("https://example.org/\u061c", False),
        ("https://example.org/a\u2028b", False),
        ("https://example.org/a\u2029b", False),
        ("https://exa\u200bmple.org/", False),
        ("https://exam\u00adple.org/", False),
        ("/docs/\ufeffpage", False),
        ("/docs/\u2060page", False),
        ("https://example.org/\u180e", False),
        ("https://example.org/a\x85b", False),
        ("https://example.org/\U000e0041", False),
        ("https://example.org/caf\u00e9/\u4e2d\u6587", True),
    ],
)
def test_safe_url_allows_only_http_https_and_site_relative(url: str, safe: bool) -> None:
    assert (safe_url(url) is not None) is safe


def test_unsupported_named_file_fails(tmp_path: Path) -> None:
    (tmp_path / "x.pdf").write_bytes(b"%PDF")
    _, err, code = run_ingest(str(tmp_path / "x.pdf"))
    assert code == 1
    assert "unsupported file type" in err


def test_no_arguments_is_an_error() -> None:
    with pytest.raises(CommandError, match="paths"):
        call_command("ingest", stdout=StringIO())


def test_demo_loads_the_python_reference_topics(db: None) -> None:
    out, _, code = run_ingest("--demo")
    assert code == 0
    with_topic = Document.objects.get(key="pydoc:with")
    assert with_topic.title == "The with statement"
    assert with_topic.url.endswith("/reference/compound_stmts.html#with")
    assert with_topic.chunks.exists()
    assert not Document.objects.filter(key="pydoc:else").exists()  # same text as "if"
    count = Document.objects.count()
    assert f"created {count}," in out
    out, _, _ = run_ingest("--demo")
    assert f"unchanged {count}," in out
    assert Document.objects.count() == count


def test_demo_if_empty_skips_a_database_with_documents(db: None) -> None:
    document_upsert(key="mine", title="Mine", url="", body="My own content.")
    out, _, code = run_ingest("--demo", "--if-empty")
    assert code == 0
    assert Document.objects.count() == 1
    assert "not loaded" in out


def test_demo_if_empty_loads_an_empty_database(db: None) -> None:
    run_ingest("--demo", "--if-empty")
    assert Document.objects.filter(key="pydoc:with").exists()


def test_reingest_of_one_key_from_two_sources_keeps_one_document(tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").write_text(json.dumps({"id": "same", "title": "One", "body": "First."}) + "\n")
    (tmp_path / "b.jsonl").write_text(json.dumps({"id": "same", "title": "Two", "body": "Second."}) + "\n")
    out, _, _ = run_ingest(str(tmp_path))
    assert "created 1, updated 1" in out
    assert Document.objects.get(key="same").title == "Two"
