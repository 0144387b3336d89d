"""Table tests of normalize_markers(): each case pins a clause of docs/citations.md ("normalize_markers")."""

from __future__ import annotations

import pytest

from answers.citations import finalize_citations, normalize_markers, strip_out_of_range_markers
from answers.citations.normalize import DIALECTS

FD = "footnote-definition"
L, R = "\u3010", "\u3011"  # lenticular brackets
FL, FR = "\uff3b", "\uff3d"  # fullwidth square brackets
D = "\u2020"  # dagger
ONE = "\uff11"  # fullwidth digit one
LONG_S = "\u017f"  # folds to "s" in Unicode case-insensitive matching

# (text, normalized text, found)
CASES = [
    # The dialect table, row by row
    pytest.param(
        "a\n[^1]: Source one\nb",
        "a\nb",
        [(FD, "[^1]: Source one\n")],
        id="footnote-definition/line-and-break-removed",
    ),
    pytest.param("[^1]: x\nb", "b", [(FD, "[^1]: x\n")], id="footnote-definition/at-text-start"),
    pytest.param("a\n[^2^]: x\n", "a\n", [(FD, "[^2^]: x\n")], id="footnote-definition/caret-form"),
    pytest.param(
        "a\n[^1]: x", "a\n", [(FD, "[^1]: x")], id="footnote-definition/at-text-end-without-line-break"
    ),
    pytest.param("a\n[^1]:", "a\n", [(FD, "[^1]:")], id="footnote-definition/empty-rest-of-line"),
    pytest.param(
        "a\n[^1]: x\n[^2]: y\n",
        "a\n",
        [(FD, "[^1]: x\n"), (FD, "[^2]: y\n")],
        id="footnote-definition/one-line-each",
    ),
    pytest.param(
        "a\n[^1]: x\r\nb", "a\nb", [(FD, "[^1]: x\r\n")], id="footnote-definition/crlf-line-goes-whole"
    ),
    pytest.param(
        "a [^1]: x", "a [1]: x", [("footnote", "[^1]")], id="footnote-definition/mid-line-is-a-footnote"
    ),
    pytest.param(
        " [^1]: x", " [1]: x", [("footnote", "[^1]")], id="footnote-definition/indented-is-a-footnote"
    ),
    pytest.param(
        "[^1]: x (y)\n", "", [(FD, "[^1]: x (y)\n")], id="footnote-definition/never-refused-by-the-paren-rule"
    ),
    pytest.param(
        "[^1]:(x)\n", "", [(FD, "[^1]:(x)\n")], id="footnote-definition/paren-right-after-the-colon"
    ),
    pytest.param("[[2]]", "[2]", [("double", "[[2]]")], id="double/one-member"),
    pytest.param(
        "[[ 2 , 1 ]]", "[ 2 , 1 ]", [("double", "[[ 2 , 1 ]]")], id="double/M-copied-character-for-character"
    ),
    pytest.param("[[1-3]]", "[1-3]", [("double", "[[1-3]]")], id="double/range"),
    pytest.param(
        f"{L}{L}1{R}{R}", "[1]", [("fullwidth", f"{L}{L}1{R}{R}")], id="fullwidth/doubled-lenticular"
    ),
    pytest.param(f"{L}2{R}", "[2]", [("fullwidth", f"{L}2{R}")], id="fullwidth/lenticular"),
    pytest.param(f"{L}1-3{R}", "[1-3]", [("fullwidth", f"{L}1-3{R}")], id="fullwidth/lenticular-range"),
    pytest.param(f"{FL}3{FR}", "[3]", [("fullwidth", f"{FL}3{FR}")], id="fullwidth/fullwidth-square"),
    pytest.param(
        f"{FL} 1,\t2 {FR}", "[ 1,\t2 ]", [("fullwidth", f"{FL} 1,\t2 {FR}")], id="fullwidth/blanks-kept"
    ),
    pytest.param(f"{L}2{D}source{R}", "[2]", [("dagger", f"{L}2{D}source{R}")], id="dagger/lenticular"),
    pytest.param(f"[2{D}L3-L5]", "[2]", [("dagger", f"[2{D}L3-L5]")], id="dagger/square"),
    pytest.param(f"{L}1, 2{D}{R}", "[1, 2]", [("dagger", f"{L}1, 2{D}{R}")], id="dagger/empty-T"),
    pytest.param(f"[1{D}a [b{R}]", "[1]", [("dagger", f"[1{D}a [b{R}]")], id="dagger/T-holds-other-brackets"),
    pytest.param(
        f"{L}1{D}a]{R}", "[1]", [("dagger", f"{L}1{D}a]{R}")], id="dagger/lenticular-T-holds-square"
    ),
    pytest.param(f"[1{D}a\nb]", f"[1{D}a\nb]", [], id="dagger/T-without-line-break"),
    pytest.param(f"[1{D}a", f"[1{D}a", [], id="dagger/unclosed-is-text"),
    pytest.param("[citation:2]", "[2]", [("label", "[citation:2]")], id="label/citation-colon"),
    pytest.param(
        "[Citation : 2]", "[2]", [("label", "[Citation : 2]")], id="label/any-case-blanks-around-colon"
    ),
    pytest.param("[CITE\t2]", "[2]", [("label", "[CITE\t2]")], id="label/cite-tab"),
    pytest.param("[doc2]", "[2]", [("label", "[doc2]")], id="label/no-separator"),
    pytest.param("[document 2]", "[2]", [("label", "[document 2]")], id="label/document-space"),
    pytest.param("[ref 2]", "[2]", [("label", "[ref 2]")], id="label/ref-space"),
    pytest.param("[Reference: 4]", "[4]", [("label", "[Reference: 4]")], id="label/reference"),
    pytest.param("[source:1-3]", "[1-3]", [("label", "[source:1-3]")], id="label/source-range"),
    pytest.param(
        "[sources: 1, 2 ]",
        "[1, 2 ]",
        [("label", "[sources: 1, 2 ]")],
        id="label/sources-S-takes-the-blanks-before-M",
    ),
    pytest.param("[ID:1]", "[1]", [("label", "[ID:1]")], id="label/id"),
    pytest.param("[iD 1]", "[1]", [("label", "[iD 1]")], id="label/mixed-case"),
    pytest.param(f"[{LONG_S}ource 1]", f"[{LONG_S}ource 1]", [], id="label/ascii-case-only"),
    pytest.param("[refs 1]", "[refs 1]", [], id="label/unknown-label-is-text"),
    pytest.param("[ ref 1]", "[1]", [("label", "[ ref 1]")], id="label/blanks-before-the-label"),
    pytest.param("[[Source:3]]", "[3]", [("double", "[[Source:3]]")], id="double/with-a-label"),
    pytest.param(
        "[[ Source : 3 ]]", "[3 ]", [("double", "[[ Source : 3 ]]")], id="double/label-after-blanks"
    ),
    pytest.param(
        "a \u30103:0\u2020source\u3011.",
        "a [0].",
        [("dagger-indexed", "\u30103:0\u2020source\u3011")],
        id="dagger-indexed/openai-file-search-names-no-source",
    ),
    pytest.param("\u3010^1^\u3011", "[1]", [("footnote", "\u3010^1^\u3011")], id="footnote/kimi-full-width"),
    pytest.param(
        "\u3010^2\u3011", "[2]", [("footnote", "\u3010^2\u3011")], id="footnote/full-width-no-caret"
    ),
    pytest.param("[ref::1]", "[ref::1]", [], id="label/one-colon-only"),
    pytest.param("[ref: ]", "[ref: ]", [], id="label/needs-a-member-list"),
    pytest.param("[^2]", "[2]", [("footnote", "[^2]")], id="footnote/plain"),
    pytest.param("[^2^]", "[2]", [("footnote", "[^2^]")], id="footnote/caret-form"),
    pytest.param("[^02]", "[02]", [("footnote", "[^02]")], id="footnote/N-copied"),
    # What is not a dialect
    pytest.param(f"{L}{ONE}{R}", f"{L}{ONE}{R}", [], id="not/fullwidth-digits"),
    pytest.param(f"[[{ONE}]]", f"[[{ONE}]]", [], id="not/fullwidth-digits-doubled"),
    pytest.param(f"{L}ID 1{R}", f"{L}ID 1{R}", [], id="not/label-in-lenticular"),
    pytest.param("see ref 3", "see ref 3", [], id="not/bare-label"),
    pytest.param("[^a]", "[^a]", [], id="not/footnote-with-a-name"),
    pytest.param("[^1-2]", "[^1-2]", [], id="not/footnote-range"),
    pytest.param("[^1,2]", "[^1,2]", [], id="not/footnote-list"),
    pytest.param("[^ 1]", "[^ 1]", [], id="not/footnote-with-a-blank"),
    pytest.param("[[]]", "[[]]", [], id="not/double-empty"),
    pytest.param("[[1a]]", "[[1a]]", [], id="not/double-not-a-member-list"),
    pytest.param("[[1-51]]", "[[1-51]]", [], id="not/range-out-of-bounds-is-no-member-list"),
    pytest.param("[ref 4-2]", "[ref 4-2]", [], id="not/label-reversed-range"),
    pytest.param(f"{L}1-60{D}x{R}", f"{L}1-60{D}x{R}", [], id="not/dagger-range-out-of-bounds"),
    pytest.param(f"{L}{L}1{R}", f"{L}[1]", [("fullwidth", f"{L}1{R}")], id="not/half-doubled-lenticular"),
    pytest.param("[1]", "[1]", [], id="canonical/left-alone"),
    pytest.param("[1, 2-3] [4][5]", "[1, 2-3] [4][5]", [], id="canonical/several-left-alone"),
    pytest.param("[1](x) \\[2] [3]: y", "[1](x) \\[2] [3]: y", [], id="canonical/non-markers-left-alone"),
    # Refusals
    pytest.param(
        f"```\n{L}1{R}\n```\n{L}2{R}",
        f"```\n{L}1{R}\n```\n[2]",
        [("fullwidth", f"{L}2{R}")],
        id="refused/inside-fenced-block",
    ),
    pytest.param("~~~\n[[1]]", "~~~\n[[1]]", [], id="refused/inside-unclosed-fence"),
    pytest.param("`[^1]` [^2]", "`[^1]` [2]", [("footnote", "[^2]")], id="refused/inside-inline-code"),
    pytest.param(f"`a\n{L}1{R}` b", f"`a\n{L}1{R}` b", [], id="refused/inside-inline-code-across-lines"),
    # Only where a dialect marker starts matters: the code its text holds refuses nothing.
    pytest.param(f"[1{D}`x`]", "[1]", [("dagger", f"[1{D}`x`]")], id="code/a-dagger-T-may-hold-a-code-span"),
    pytest.param(
        f"{L}1{D}a`{R} b`",
        "[1] b`",
        [("dagger", f"{L}1{D}a`{R}")],
        id="code/a-dagger-ending-inside-a-code-span",
    ),
    pytest.param(
        f"`x`{L}1{R}`y`", "`x`[1]`y`", [("fullwidth", f"{L}1{R}")], id="refused/next-to-code-is-not-touching"
    ),
    pytest.param(
        "a\n[^1]: see `x`\n",
        "a\n",
        [(FD, "[^1]: see `x`\n")],
        id="code/a-definition-line-may-hold-a-code-span",
    ),
    pytest.param(
        "[^1]: note```\nx``` [1]",
        "x``` [1]",
        [(FD, "[^1]: note```\n")],
        id="code/a-definition-line-goes-whole-with-the-run-it-holds",
    ),
    pytest.param(
        "a\n[^1]: x\n```\n[^2]: y\n```",
        "a\n```\n[^2]: y\n```",
        [(FD, "[^1]: x\n")],
        id="refused/definition-before-a-fence-is-outside",
    ),
    pytest.param(f"\\{L}1{R}", f"\\{L}1{R}", [], id="refused/backslash-before"),
    pytest.param("\\[[1]]", "\\[[1]]", [], id="refused/backslash-before-double"),
    pytest.param("\\[^1]", "\\[^1]", [], id="refused/backslash-before-footnote"),
    pytest.param("[[1]](x)", "[[1]](x)", [], id="refused/paren-after-double"),
    pytest.param(f"{L}1{R}(x)", f"{L}1{R}(x)", [], id="refused/paren-after-fullwidth"),
    pytest.param(f"[1{D}p](x)", f"[1{D}p](x)", [], id="refused/paren-after-dagger"),
    pytest.param("[ref 1](x)", "[ref 1](x)", [], id="refused/paren-after-label"),
    pytest.param("[^1](x)", "[^1](x)", [], id="refused/paren-after-footnote"),
    pytest.param("[[1]] (x)", "[1] (x)", [("double", "[[1]]")], id="refused/paren-only-right-after"),
    pytest.param("[[1]]: x", "[1]: x", [("double", "[[1]]")], id="refused/no-colon-rule-for-dialects"),
    # A refused dialect does not stop the next one at the same position
    pytest.param("`\n[^1]: a`\n", "`\n[^1]: a`\n", [], id="order/definition-in-code-footnote-in-code-too"),
    pytest.param(
        "[^1]: `a` [[2]]\n[[3]]",
        "[3]",
        [(FD, "[^1]: `a` [[2]]\n"), ("double", "[[3]]")],
        id="order/scan-resumes-after-the-definition-line",
    ),
    # One pass
    pytest.param(f"[{L}1{R}]", "[[1]]", [("fullwidth", f"{L}1{R}")], id="one-pass/bracket-around-fullwidth"),
    pytest.param("[[^1]]", "[[1]]", [("footnote", "[^1]")], id="one-pass/bracket-around-footnote"),
    pytest.param("[[[1]]]", "[[1]]", [("double", "[[1]]")], id="one-pass/double-inside-a-bracket"),
    pytest.param(
        f"{L}1{R}{L}2{R}",
        "[1][2]",
        [("fullwidth", f"{L}1{R}"), ("fullwidth", f"{L}2{R}")],
        id="one-pass/adjacent",
    ),
    pytest.param(
        f"[1{D}{L}2{R}]", "[1]", [("dagger", f"[1{D}{L}2{R}]")], id="one-pass/resumes-after-the-dagger-T"
    ),
    # The rows
    pytest.param(
        f"A {L}2{R} b {L}1{R}.",
        "A [2] b [1].",
        [("fullwidth", f"{L}2{R}"), ("fullwidth", f"{L}1{R}")],
        id="issue/lenticular",
    ),
    pytest.param("A [citation:2] b.", "A [2] b.", [("label", "[citation:2]")], id="issue/deepseek"),
    pytest.param("A [doc2] b.", "A [2] b.", [("label", "[doc2]")], id="issue/azure"),
    pytest.param(
        f"A {L}2{D}source{R} b.", "A [2] b.", [("dagger", f"{L}2{D}source{R}")], id="issue/openai-assistants"
    ),
    pytest.param(
        "A [^2] b.\n\n[^2]: Source two\n",
        "A [2] b.\n\n",
        [("footnote", "[^2]"), (FD, "[^2]: Source two\n")],
        id="issue/footnotes-and-their-list",
    ),
]


@pytest.mark.parametrize(("text", "expected", "found"), CASES)
def test_normalize_markers(text: str, expected: str, found: list[tuple[str, str]]) -> None:
    result = normalize_markers(text)
    assert (result.text, result.found) == (expected, found)


# (text, dialects, normalized text)
SELECTION_CASES = [
    pytest.param("\u30101\u3011 [[2]]", None, "[1] [2]", id="selection/none-means-all"),
    pytest.param("\u30101\u3011 [[2]]", set(DIALECTS), "[1] [2]", id="selection/all-names"),
    pytest.param("\u30101\u3011 [[2]]", set(), "\u30101\u3011 [[2]]", id="selection/empty-is-the-identity"),
    pytest.param("\u30101\u3011 [[2]]", {"double"}, "\u30101\u3011 [2]", id="selection/only-the-named"),
    pytest.param("[^1]: x\n[^2]", ["footnote"], "[1]: x\n[2]", id="selection/footnote-without-definition"),
    pytest.param("\u30101\u2020s\u3011", {"fullwidth"}, "\u30101\u2020s\u3011", id="selection/dagger-off"),
    pytest.param(
        "`x\n[^1]: a` [[2]]\n",
        {"footnote-definition", "double"},
        "`x\n[^1]: a` [2]\n",
        id="selection/refused-definition-line-is-scanned-on",
    ),
]


@pytest.mark.parametrize(("text", "dialects", "expected"), SELECTION_CASES)
def test_dialects_select_what_applies(text: str, dialects: set[str] | None, expected: str) -> None:
    assert normalize_markers(text, dialects).text == expected


def test_an_unknown_dialect_name_is_an_error() -> None:
    with pytest.raises(ValueError, match="nope"):
        normalize_markers("[[1]]", {"double", "nope"})


SOURCES = ["s1", "s2", "s3"]


# (a reply written in a dialect, the same reply written in [n])
SAME_REPLY = [
    pytest.param("A \u30102\u3011 b \u30101\u3011.", "A [2] b [1].", id="lenticular"),
    pytest.param("A [citation:2] b.", "A [2] b.", id="deepseek"),
    pytest.param("A [doc2] b.", "A [2] b.", id="azure"),
    pytest.param("A \u30102\u2020source\u3011 b.", "A [2] b.", id="openai-assistants"),
    # The model's own source list goes; the blank line before it stays.
    pytest.param("A [^2] b [^3^].\n\n[^2]: Two\n[^3]: Three\n", "A [2] b [3].\n\n", id="footnotes"),
    pytest.param(
        "A [[3, 1]] b \uff3b9\uff3d.", "A [3, 1] b [9].", id="double-and-fullwidth-square-out-of-range"
    ),
]


@pytest.mark.parametrize(("dialect", "canonical"), SAME_REPLY)
def test_a_reply_in_a_dialect_gives_the_final_pair_of_the_same_reply_in_n(
    dialect: str, canonical: str
) -> None:
    def final(text: str) -> tuple[str, list[str], bool]:
        stripped = strip_out_of_range_markers(normalize_markers(text).text, len(SOURCES))
        result = finalize_citations(stripped.text, SOURCES)
        return result.text, result.references, result.fallback

    assert final(dialect) == final(canonical)
    assert not final(dialect)[2]  # cited, not a fallback
