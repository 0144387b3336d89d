"""The file and feed readers turn files into records (key, title, url, body) without a database."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from answers.content.readers import (
    PARSERS,
    UnreadableSource,
    feed_fields,
    html_to_text,
    parse_html,
    parse_json,
    parse_jsonl,
    parse_markdown,
    parse_text,
)
from answers.content.validation import InvalidDocument


def test_the_readers_import_no_django() -> None:
    code = "import sys, answers.content.readers; sys.exit(any(m.startswith('django') for m in sys.modules))"
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


@pytest.mark.parametrize(
    ("text", "title"),
    [
        pytest.param("# Brewing tea\n\nBoil.\n", "Brewing tea", id="atx_heading"),
        pytest.param("Intro.\n\n## Real title ##\n\nText.\n", "Real title", id="first_heading_anywhere"),
        pytest.param("Setext title\n============\n\nText.\n", "Setext title", id="setext_heading"),
        pytest.param("---\ntitle: From front\n---\n# Heading\n", "From front", id="front_matter_wins"),
        pytest.param("No heading at all.\n", "My notes file", id="file_name_otherwise"),
    ],
)
def test_markdown_title(tmp_path: Path, text: str, title: str) -> None:
    path = tmp_path / "my-notes_file.md"
    path.write_text(text)
    [record] = parse_markdown(path)
    assert record.fields["title"] == title
    assert record.where == str(path)


def test_markdown_key_is_the_file_uri_unless_front_matter_names_one(tmp_path: Path) -> None:
    plain, named, linked = tmp_path / "a.md", tmp_path / "b.md", tmp_path / "c.md"
    plain.write_text("# A\n\nText.\n")
    named.write_text("---\nkey: my-key\nurl: https://example.com/b\n---\n# B\n\nText.\n")
    linked.write_text("---\nurl: https://example.com/c\ntype: guide\n---\nText.\n")
    assert parse_markdown(plain)[0].fields["key"] == plain.resolve().as_uri()
    assert parse_markdown(named)[0].fields["key"] == "my-key"
    fields = parse_markdown(linked)[0].fields
    assert (fields["key"], fields["url"], fields["doc_type"]) == (
        "https://example.com/c",
        fields["url"],
        "guide",
    )
    assert fields["body"] == "Text.\n"  # the front matter is not part of the body


def test_text_file_is_titled_after_its_name(tmp_path: Path) -> None:
    path = tmp_path / "tea_storage.txt"
    path.write_text("Keep it dark.\n")
    [record] = parse_text(path)
    assert (record.fields["title"], record.fields["body"], record.fields["doc_type"]) == (
        "Tea storage",
        "Keep it dark.\n",
        "text",
    )


def test_html_drops_scripts_and_styles_and_keeps_headings_as_lines() -> None:
    title, text, canonical = html_to_text(
        "<html><head><title>Kettles</title><style>.x{color:red}</style>"
        '<link rel="canonical" href="https://example.com/k"></head>'
        "<body><script>var s = 'scriptword';</script><h1>Kettle guide</h1><p>Boils fast.</p></body></html>"
    )
    assert (title, canonical) == ("Kettles", "https://example.com/k")
    assert "scriptword" not in text
    assert "color:red" not in text
    assert text == "# Kettle guide\n\nBoils fast."


def test_html_key_is_the_canonical_link_only_when_it_is_safe(tmp_path: Path) -> None:
    safe, unsafe = tmp_path / "safe.html", tmp_path / "unsafe.html"
    safe.write_text('<link rel="canonical" href="/docs/k/"><h1>K</h1><p>x</p>')
    unsafe.write_text('<link rel="canonical" href="javascript:alert(1)"><h1>K</h1><p>x</p>')
    assert (parse_html(safe)[0].fields["key"], parse_html(safe)[0].fields["url"]) == ("/docs/k/", "/docs/k/")
    fields = parse_html(unsafe)[0].fields
    assert (fields["key"], fields["url"], fields["title"]) == (unsafe.resolve().as_uri(), "", "K")


@pytest.mark.parametrize(
    ("item", "expected"),
    [
        pytest.param(
            {"url": "https://e.com/a", "title": "A", "body": "x"},
            {"key": "https://e.com/a", "url": "https://e.com/a", "body": "x"},
            id="url_is_the_key",
        ),
        pytest.param({"id": 7, "title": "A", "content": "x"}, {"key": "7", "body": "x"}, id="numeric_id"),
        pytest.param({"id": "a", "title": "A", "content_text": "x"}, {"body": "x"}, id="json_feed_text"),
        pytest.param(
            {"id": "a", "title": "A", "content_html": "<p>Hi <b>there</b></p>"},
            {"body": "Hi there"},
            id="json_feed_html",
        ),
    ],
)
def test_feed_item_fields(item: dict[str, object], expected: dict[str, object]) -> None:
    fields = feed_fields(item)
    assert {name: fields[name] for name in expected} == expected


@pytest.mark.parametrize(
    ("item", "field"),
    [
        pytest.param(["a list"], "item", id="not_an_object"),
        pytest.param({"title": "No key", "body": "x"}, "id", id="no_url_or_id"),
    ],
)
def test_feed_item_refused(item: object, field: str) -> None:
    with pytest.raises(InvalidDocument) as refused:
        feed_fields(item)
    assert refused.value.field == field


def test_json_array_records_carry_the_line_each_item_starts_on(tmp_path: Path) -> None:
    path = tmp_path / "feed.json"
    path.write_text(json.dumps([{"id": "a"}, {"id": "b"}], indent=2))
    assert [r.where for r in parse_json(path)] == [f"{path}:2", f"{path}:5"]


def test_json_feed_object_items_are_read(tmp_path: Path) -> None:
    path = tmp_path / "feed.json"
    path.write_text(json.dumps({"version": "1.1", "items": [{"id": "a"}, {"id": "b"}]}))
    assert [r.fields["item"] for r in parse_json(path)] == [{"id": "a"}, {"id": "b"}]


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        pytest.param('[{"id": "a"},\n  {oops}\n]', "invalid JSON", id="broken_json"),
        pytest.param('"just a string"', "expected an array", id="not_a_feed"),
    ],
)
def test_unreadable_json_names_the_reason(tmp_path: Path, text: str, reason: str) -> None:
    path = tmp_path / "feed.json"
    path.write_text(text)
    with pytest.raises(UnreadableSource, match=reason):
        parse_json(path)


def test_jsonl_bad_line_fails_alone(tmp_path: Path) -> None:
    path = tmp_path / "feed.jsonl"
    path.write_text('{"id": "a"}\nnot json\n\n{"id": "b"}\n')
    records = parse_jsonl(path)
    assert [r.where for r in records] == [f"{path}:1", f"{path}:2", f"{path}:4"]
    assert isinstance(records[1].fields["item"], InvalidDocument)


def test_non_utf8_file_is_unreadable(tmp_path: Path) -> None:
    path = tmp_path / "binary.txt"
    path.write_bytes(b"\xff\xfe\x00bad")
    with pytest.raises(UnreadableSource, match="not UTF-8"):
        parse_text(path)


def test_every_supported_suffix_has_a_reader() -> None:
    assert set(PARSERS) == {".md", ".markdown", ".txt", ".html", ".htm", ".json", ".jsonl"}
