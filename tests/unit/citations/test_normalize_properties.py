"""Property tests of normalize_markers(): docs/citations.md's properties; a literal reading agrees."""

from __future__ import annotations

import re
from functools import cache

from hypothesis import given, settings
from hypothesis import strategies as st

from answers.citations import normalize_markers, scan_markers
from answers.citations.normalize import DIALECTS
from tests.fixtures.commonmark import code_brackets

L, R = "\u3010", "\u3011"  # lenticular brackets
FL, FR = "\uff3b", "\uff3d"  # fullwidth square brackets
D = "\u2020"  # dagger

# Pieces that make dialects, near misses, code, escapes and links likely.
TOKENS = [
    "[", "]", "[[", "]]", L, R, FL, FR, D, "^", "[^", "^]", "1", "2", "12", "0", "1-3", "1-60", "3-1",
    ",", ", ", " ", "\t", "\n", "`", "``", "```", "~~~", "\\", "(", ":", "]:", "x", "\uff11",
    "citation", "Cite", "doc", "ID", "ref", "source", "S", "\u017fource",
    f"{L}1{R}", f"{L}{L}2{R}{R}", f"{FL}3{FR}", "[[2]]", "[[ 1 , 2 ]]", "[^1]", "[^2^]", "\n[^1]: x\n",
    "[ref 2]", "[citation: 1-2]", "[doc3]", f"{L}1{D}src{R}", f"[2{D}L3]", f"{L}ID 1{R}",
    "[[Source:3]]", "[[ source : 2 ]]", f"{L}3:0{D}source{R}", f"{L}^1^{R}", f"{L}^2{R}", "[ cite 1]", ":0",
    "[1]", "[2, 3]", "[1](x)", "\\[1]", "`[^1]`",
    f"[1{D}`x`]", f"{L}2{D}a`{R}", "[^1]: note```", "    ```", "```py [^1]",
]  # fmt: skip
# Canonical markers, code and near misses only: no dialect can be made of these.
PLAIN = [
    "[1]", "[2, 3]", "[1-3]", "[ 1 ]", "[1](x)", "\\[1]", "[1]: x", "[", "]", "1", " ", "\n", "`", "```",
    "x", "ref 3", f"{L}ID 1{R}", f"{L}\uff11{R}", "[^a]", "[^1-2]", "[^ 1]", "[[]]", "[[1a]]", "[[1-51]]",
    "[refs 1]", f"{L}1-60{D}x{R}", "(", ":", "^", D,
]  # fmt: skip
LINES = [
    "```", "~~~", "[^1]: a `b`", "[^1]: `a` [[2]]", "[^2]: b", "`", "x [^1]", f"{L}1{R}", "[[1]]", "",
    "[^1]: note```", f"x [1{D}`y`]", "```\\1. [^2] [[7]]~~~", "    ```", f"    ~~~ {L}1{R}",
]  # fmt: skip
# A dialect between brackets: the one-pass corner, `[` + `【1】` + `]`.
cornered = st.tuples(
    st.sampled_from(["[", "[[", "\\["]),
    st.sampled_from([f"{L}1{R}", "[^2]", "[[3]]", "[ref 1]", f"{L}2{D}x{R}", f"{FL}1, 2{FR}"]),
    st.sampled_from(["]", "]]", "](x)"]),
).map("".join)
texts = st.one_of(
    st.lists(st.sampled_from(TOKENS), max_size=30).map("".join),
    st.lists(st.one_of(cornered, st.sampled_from(TOKENS)), max_size=12).map("".join),
    st.lists(
        st.one_of(st.sampled_from(LINES), st.lists(st.sampled_from(TOKENS), max_size=6).map("".join))
    ).map("\n".join),
)
plain_texts = st.lists(st.sampled_from(PLAIN), max_size=30).map("".join)
selections = st.one_of(st.none(), st.sets(st.sampled_from(DIALECTS)))

PROPERTY = settings(max_examples=400, deadline=None, derandomize=True)


# --- A literal reading of the spec, written for clarity, not speed ----------------

M = r"([ \t]*[0-9]+(?:[-\u2013][0-9]+)?(?:[ \t]*,[ \t]*[0-9]+(?:[-\u2013][0-9]+)?)*[ \t]*)"
LABELS = ["citation", "cite", "source", "sources", "ref", "reference", "doc", "document", "id"]
FORMS = {
    "footnote-definition": [re.compile(r"\[\^[0-9]+\^?\]:[^\n]*\n?")],
    "double": [re.compile(r"\[\[" + M + r"\]\]")],
    "fullwidth": [re.compile(f"{L}{L}{M}{R}{R}"), re.compile(f"{L}{M}{R}"), re.compile(f"{FL}{M}{FR}")],
    "dagger": [re.compile(f"{L}{M}{D}[^{R}\\n]*{R}"), re.compile(M.join([r"\[", D + r"[^\]\n]*\]"]))],
    "dagger-indexed": [re.compile(f"{L}[0-9]+:[0-9]+{D}[^{R}\\n]*{R}")],
    "footnote": [re.compile(r"\[\^([0-9]+)\^?\]"), re.compile(f"{L}\\^([0-9]+)\\^?{R}")],
}


def is_member_list(members: str) -> bool:
    """Exactly the bracket content of a canonical marker, bounds included."""
    return [(m.start, m.end) for m in scan_markers("[" + members + "]")] == [(0, len(members) + 2)]


def label_at(text: str, i: int) -> tuple[int, str] | None:
    """`[` L S M `]` at i: its end and M."""
    return labelled_at(text, i, "[", "]")


def labelled_at(text: str, i: int, opening: str, closing: str) -> tuple[int, str] | None:
    """`opening` W L S M `closing` at i (W: blanks; L a label in any ASCII case): its end and M."""
    if not text.startswith(opening, i):
        return None
    w = i + len(opening)
    while text[w : w + 1] in (" ", "\t") and text[w : w + 1]:
        w += 1
    for label in LABELS:
        written = text[w : w + len(label)]
        if written.isascii() and written.lower() == label:
            j = w + len(label)
            while text[j : j + 1] in (" ", "\t"):
                j += 1
            if text.startswith(":", j):
                j += 1
                while text[j : j + 1] in (" ", "\t"):
                    j += 1
            match = re.compile(M + re.escape(closing)).match(text, j)
            if match and match[1][:1] not in (" ", "\t"):
                return match.end(), match[1]
    return None


def literal_normalize(text: str, dialects: set[str] | None) -> tuple[str, list[tuple[str, str]]]:
    # Where a dialect marker starts in code, as CommonMark renders the text: it is refused there.
    in_code = code_brackets(text, "[" + L + FL)
    out: list[str] = []
    found: list[tuple[str, str]] = []
    i = 0
    while i < len(text):
        for name in DIALECTS:
            if dialects is not None and name not in dialects:
                continue
            candidates: list[tuple[int, str | None]] = []
            if name == "label":
                at = label_at(text, i)
                candidates = [at] if at else []
            elif name == "double":
                at = labelled_at(text, i, "[[", "]]")
                candidates = [(m.end(), m[1]) for f in FORMS[name] if (m := f.match(text, i))]
                candidates += [at] if at else []
            elif name == "dagger-indexed":
                candidates = [(m.end(), "0") for f in FORMS[name] if (m := f.match(text, i))]
            elif name != "footnote-definition" or i == 0 or text[i - 1] == "\n":
                candidates = [
                    (m.end(), m[1] if m.groups() else None) for f in FORMS[name] if (m := f.match(text, i))
                ]
            rewritten = False
            for end, members in candidates:
                if members is not None and not is_member_list(members):
                    continue
                if i in in_code:
                    continue
                if name != "footnote-definition" and (text[i - 1 : i] == "\\" or text[end : end + 1] == "("):
                    continue
                out.append("" if members is None else "[" + members + "]")
                found.append((name, text[i:end]))
                i = end
                rewritten = True
                break
            if rewritten:
                break
        else:
            out.append(text[i])
            i += 1
    return "".join(out), found


# --- What a rewrite must be, read from its text alone ---------------------------------


def member_list(name: str, written: str) -> str | None:
    """The M of a dialect marker, by stripping its wrapper; None for a footnote definition."""
    if name == "footnote-definition":
        return None
    if name == "dagger-indexed":
        return "0"
    if name == "double":
        label = re.match(r"\[\[[ \t]*[A-Za-z]+[ \t]*(?::[ \t]*)?", written)
        return written[label.end() : -2] if label else written[2:-2]
    if written.startswith(L + L):
        return written[2:-2]
    if name == "fullwidth":
        return written[1:-1]
    if name == "dagger":
        return written[1 : written.index(D)]
    if name == "label":
        label = re.match(r"\[[ \t]*[A-Za-z]+[ \t]*(?::[ \t]*)?", written)
        assert label is not None
        return written[label.end() : -1]
    return written[2:-1].removesuffix("^")


def rewritten(name: str, written: str) -> str:
    members = member_list(name, written)
    return "" if members is None else "[" + members + "]"


def align(before: str, after: str, found: list[tuple[str, str]]) -> tuple[tuple[int, int], ...] | None:
    """Where each rewrite sits (in `before`, in `after`), the text between them unchanged; None if nowhere."""
    rewrites = [(written, rewritten(name, written)) for name, written in found]

    @cache
    def rest(k: int, i: int, o: int) -> tuple[tuple[int, int], ...] | None:
        if k == len(rewrites):
            return () if before[i:] == after[o:] else None
        written, replacement = rewrites[k]
        p = before.find(written, i)
        while p >= 0 and before[i:p] == after[o : o + p - i]:
            if after.startswith(replacement, o + p - i):
                later = rest(k + 1, p + len(written), o + p - i + len(replacement))
                if later is not None:
                    return ((p, o + p - i), *later)
            p = before.find(written, p + 1)
        return None

    return rest(0, 0, 0)


# --- The properties --------------------------------------------------------------------


@PROPERTY
@given(texts, selections)
def test_agrees_with_the_literal_reading(text: str, dialects: set[str] | None) -> None:
    result = normalize_markers(text, dialects)
    assert (result.text, result.found) == literal_normalize(text, dialects)


@PROPERTY
@given(plain_texts)
def test_a_text_without_dialects_is_returned_unchanged(text: str) -> None:
    assert normalize_markers(text) == normalize_markers(text, set())
    result = normalize_markers(text)
    assert (result.text, result.found) == (text, [])


@PROPERTY
@given(texts)
def test_nothing_found_means_nothing_changed(text: str) -> None:
    result = normalize_markers(text)
    if not result.found:
        assert result.text == text


@PROPERTY
@given(texts)
def test_no_dialects_selected_is_the_identity(text: str) -> None:
    result = normalize_markers(text, set())
    assert (result.text, result.found) == (text, [])


@PROPERTY
@given(texts, selections)
def test_every_rewrite_keeps_its_member_list_byte_for_byte(text: str, dialects: set[str] | None) -> None:
    for name, written in normalize_markers(text, dialects).found:
        members = member_list(name, written)
        assert members is None or is_member_list(members), (name, written)


@PROPERTY
@given(texts, selections)
def test_the_found_rewrites_applied_in_order_give_the_output(text: str, dialects: set[str] | None) -> None:
    result = normalize_markers(text, dialects)
    assert align(text, result.text, result.found) is not None


@PROPERTY
@given(texts)
def test_only_the_one_pass_corner_is_left(text: str) -> None:
    """What may remain: a `double` `[[M]]` whose inner `[M]` is a rewrite's output.

    A rewrite's output `[M]` can only form a new dialect with the text around
    it when that text is `[` before and `]` after (`[` + `【1】` + `]`, `[[^1]]`);
    the text outside the rewrites is unchanged and was scanned, and code is
    where it was, unless a rewrite took a backtick with it (one in a dagger's
    text or on a definition's line: only where a dialect starts is judged), and
    then what was code may hold a dialect now. So normalizing twice changes
    nothing unless that corner is there or a backtick went.
    """
    first = normalize_markers(text)
    if any("`" in written for _, written in first.found):
        return
    places = align(text, first.text, first.found)
    assert places is not None
    outputs = {(o, o + len(rewritten(*rewrite))) for (_, o), rewrite in zip(places, first.found, strict=True)}
    second = normalize_markers(first.text)
    again = align(first.text, second.text, second.found)
    assert again is not None
    for (p, _), (name, written) in zip(again, second.found, strict=True):
        assert name == "double", (name, written)
        assert (p + 1, p + len(written) - 1) in outputs, written
    cornered = any(first.text[s - 1 : s] == "[" and first.text[e : e + 1] == "]" for s, e in outputs)
    if not cornered:
        assert second == normalize_markers(first.text, set())  # idempotent
