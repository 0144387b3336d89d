"""The offline, deterministic provider: answers the question with cited sentences of its best source first.

This module reads the sources' excerpts into quotable sentences (extract_sentences) and
streams the answer; which sentences are quoted is answers.providers.quoting's rules.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING

from answers.citations import scan_markers
from answers.citations.code import code_regions
from answers.citations.strip import remove_markers
from answers.providers.base import Generation
from answers.providers.lists import MAX_SENTENCE_WORDS, Block, read_lists
from answers.providers.prompt import Prompt
from answers.providers.quoting import (
    Quoted,
    by_source,
    compared_pages,
    compares,
    not_quoted_before,
    on_topic,
    primary_candidates,
    primary_source,
    quote_compared,
    quote_further,
    quote_primary,
    reading_order,
)
from answers.providers.sentence_kinds import signature_of
from answers.providers.weighing import PRONOUN, Sentence, sentence_terms, terms_of, weigh
from answers.retrieval.chunking import sentence_spans
from answers.retrieval.types import RetrievedSource

if TYPE_CHECKING:  # the settings reach it as an argument: this module imports without Django
    from answers.conf import AnswersSettings

MODEL = "extractive-v1"

MIN_SENTENCE_WORDS = 5
WORDS_PER_PIECE = 3

NO_ANSWER = "The sources found do not answer this question directly; the closest matches are listed below."
NO_SOURCES = "No sources were found for this question."
NOTHING_NEW = (
    "The sources found add nothing to what the earlier answers of this conversation quoted; "
    "the closest matches are listed below."
)


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_WORD = re.compile(r"[A-Za-z0-9]+")
_AFTER_TEXT = "x"  # what stands before a sentence in the answer, for the grammar: text on its line
_TOKEN = re.compile(r"\S+")
_LIST_MARKER = re.compile(r"^(?:[-*•+]|\d{1,2}[.)]|\(?[a-z][.)]|\([0-9ivx]+\))\s+")
_NUMBERED = re.compile(r"^\d{1,2}[.)]\s")
_UNDERLINE = re.compile(r"^\s*([*=~^#\-_+])\1{2,}\s*$")
_CODE_CHARS = re.compile(r"[=(){}\[\]<>:;|&^%$@\\]")
_POINTING = _words("follows following to example examples below as is are code e.g i.e like this these")
# A table row or border: cells between pipes ("| a | b |"), "+---+" or "=== ===" rules.
_TABLE = re.compile(r"\|[^|\n]*\||\+[-=]{3,}|^\s*={3,}\s+={3,}", re.M)
_HEADING_PREFIXES = ("changed in version", "added in version", "new in version", "deprecated since")


def _is_prose(block: str) -> bool:
    """Whether a paragraph reads as prose rather than code, a grammar production, a table or a heading."""
    if "::=" in block or block.lstrip().startswith((">>>", "...", "$ ", "```", "~~~", "#!")):
        return False
    if _TABLE.search(block):
        return False
    tokens = _TOKEN.findall(block)
    if len(tokens) < MIN_SENTENCE_WORDS:
        return False
    wordy = sum(1 for t in tokens if re.fullmatch(r"[\"'“‘(]?[A-Za-z][a-z’'\-]*[\"'”’),.;:!?]*", t))
    if wordy / len(tokens) < 0.6:
        return False
    code_chars = len(_CODE_CHARS.findall(block))
    # Prose ends sentences; code and grammar rarely contain ". " or a final period.
    return code_chars <= len(tokens) * 0.35 and bool(re.search(r"([.!?][\"'”’)]*(\s|$))|:$", block))


def _join_lines(lines: list[str]) -> str:
    """A paragraph's lines joined by spaces, except after a line ending in a hyphenated word's
    hyphen: wrapped text breaks "built-in" after its hyphen ("built-" / "in ..."), and the
    paragraph reads "built-in" again, not "built- in"."""
    text = lines[0]
    for line in lines[1:]:
        wrapped = len(text) > 1 and text[-1] == "-" and text[-2].isalpha() and line[:1].isalpha()
        text += line if wrapped else " " + line
    return text


def _blocks(excerpt: str) -> list[Block]:
    """Paragraphs of an excerpt, each a run of lines with the same indentation, whitespace collapsed,
    whether it is a numbered list's item (a step: Sentence.step) and whether a list's item at all,
    its marker removed."""
    blocks: list[str] = []
    current: list[str] = []
    indent = -1
    for raw in excerpt.replace("\r\n", "\n").split("\n"):
        line = raw.rstrip()
        if not line.strip() or _UNDERLINE.match(line):
            if current:
                blocks.append(_join_lines(current))
            current, indent = [], -1
            continue
        this_indent = len(line) - len(line.lstrip())
        stripped = line.strip()
        starts_item = bool(_LIST_MARKER.match(stripped))
        # A change of indentation (other than a list item's hanging indent) starts a new paragraph,
        # which keeps an indented code example from merging into the sentence before it.
        if current and (starts_item or (this_indent < indent) or (this_indent > indent + 4)):
            blocks.append(_join_lines(current))
            current = []
        if not current:
            indent = this_indent
        current.append(stripped)
    if current:
        blocks.append(_join_lines(current))
    read = [(re.sub(r"\s+", " ", _LIST_MARKER.sub("", b)).strip(), b) for b in blocks]
    return [(text, bool(_NUMBERED.match(b)), bool(_LIST_MARKER.match(b))) for text, b in read]


def split_sentences(text: str) -> list[str]:
    """Sentences of one prose paragraph, as a source's text is split everywhere (chunking.sentence_spans:
    not after abbreviations such as 'e.g.' or initials)."""
    return [text[start:end] for start, end in sentence_spans(text)]


def _without_markers(sentence: str) -> str:
    """`sentence` made to hold no citation marker but ours, read where the answer puts it: after
    other text on its line (a backtick run opens no fence there, `[3]: x` is a marker).

    A backtick with no partner in the sentence would open a code span that swallows the markers
    after it: then every backtick goes. What the citation grammar reads as a marker ("item[3]")
    goes too, with its blanks as strip takes them; code (`a[1]`) and what is no marker ("c = []",
    a link) stay as written.
    """
    text = _AFTER_TEXT + sentence
    if "`" in text:
        code = code_regions(text)
        if sum(text.count("`", start, end) for start, end in code) < text.count("`"):
            text = text.replace("`", "")
    return remove_markers(text, scan_markers(text))[len(_AFTER_TEXT) :]


def _clean(sentence: str) -> str | None:
    """The sentence made safe to cite, or None when it is not worth quoting."""
    sentence = _without_markers(sentence).strip()
    if sentence.endswith(":"):
        # "X is used to iterate over a sequence:" introduces an example; as a sentence it stands
        # alone once the colon becomes a period, unless it only points at what follows.
        last = sentence[:-1].rsplit(None, 1)[-1].lower()
        if last in _POINTING or "following" in sentence.lower() or len(sentence.split()) < 8:
            return None
        sentence = sentence[:-1] + "."
    words = len(sentence.split())
    if not MIN_SENTENCE_WORDS <= words <= MAX_SENTENCE_WORDS:
        return None
    # Chunk boundaries leave fragments: a sentence must start like one and end like one.
    if not (sentence[0].isupper() or sentence[0] in "\"'“‘(`") or not re.search(r"[.!?][\"'”’)]*$", sentence):
        return None
    if sentence.lower().startswith(_HEADING_PREFIXES):
        return None
    return sentence


def extract_sentences(sources: Sequence[RetrievedSource]) -> list[Sentence]:
    """Every quotable sentence of the sources' excerpts, tagged with its source number and position."""
    out: list[Sentence] = []
    for source in sources:
        position = 0
        after_kept = False  # the last thing read was a sentence kept (see Sentence.continues)
        entry = ""  # the special method whose signature line came last (Sentence.entry)
        # A list finishing the sentence introducing it reads as that sentence (lists.read_lists).
        for block, step in read_lists(_blocks(source.excerpt), _is_prose):
            if not _is_prose(block):
                after_kept = False
                entry = signature_of(block)
                continue
            for raw in split_sentences(block):
                text = _clean(raw)
                if text is None:
                    after_kept = False
                    continue
                terms = sentence_terms(text)
                carried = out[-1].terms if after_kept and PRONOUN.match(text) else frozenset()
                out.append(Sentence(source.number, position, text, terms, after_kept, entry, step, carried))
                position += 1
                after_kept = True
                entry = ""
    return out


def _cite(sentence: str, number: int) -> str:
    """Put the marker before the sentence's final punctuation: '... context manager [1].'"""
    match = re.search(r"([.!?]+)([\"'”’)\]]*)$", sentence)
    if match is None:
        return f"{sentence} [{number}]."
    body = sentence[: match.start()]
    return f"{body}{match.group(2)} [{number}]{match.group(1)}"


def compose_answer(
    question: str,
    sources: Sequence[RetrievedSource],
    *,
    written: str | None = None,
    earlier: Sequence[str] = (),
) -> str:
    """The answer: cited sentences that speak to the question's terms, from its best source first.

    `written`: the question as the reader wrote it, when `question` is a follow-up's standalone
    question (a comparison is read from it: quoting.compares). `earlier`: the conversation's
    earlier answers (marker-free texts): no sentence they quoted is quoted again, and when they
    quoted all the sources hold on the question the answer says so (NOTHING_NEW).

    The rules, in the order they apply, are answers.providers.quoting's (its docstring lists
    them). Grammar productions (`::=`), code, tables and fragments are never quoted (_is_prose,
    _clean). When no sentence holds a question term (nor any title lends one) the answer says
    so without any marker, so finalize keeps every retrieved source (its fallback) rather than
    pretending one of them answers.
    """
    if not sources:
        return NO_SOURCES
    sentences = extract_sentences(sources)
    titles = {src.number: frozenset(terms_of(src.title)) for src in sources}
    asked = weigh(question, sentences, titles.values())
    if asked is None:
        return NO_ANSWER
    own = by_source(sentences)
    topical = on_topic(own, asked, titles)
    if not topical:
        return NO_ANSWER
    # The page the question is about is chosen on all its sentences; what is quoted from it, and
    # from the others, is what no earlier turn quoted.
    primary = primary_source(sources, topical, asked, titles)
    if earlier:
        own = by_source(not_quoted_before(sentences, earlier))
        topical = on_topic(own, asked, titles)
    # The primary's title says what every sentence of it is about: its terms are held, and no
    # further source is sought for them.
    quoted = Quoted(asked, have=set(titles[primary] & asked.weights.keys()))
    if primary in topical:
        quote_primary(quoted, primary_candidates(topical[primary], own[primary], asked, set(quoted.have)))
    if compares(written or question):
        quote_compared(quoted, topical, own, compared_pages(primary, titles, asked))
    quote_further(quoted, topical, primary)
    if not quoted.sentences:  # only when earlier turns quoted all there was
        return NOTHING_NEW
    return " ".join(_cite(s.text, s.source) for s in reading_order(quoted.sentences, primary))


def pieces_of(text: str, words_per_piece: int = WORDS_PER_PIECE) -> list[str]:
    """The text cut into small pieces of a few words each, whitespace kept, concatenating back to it."""
    tokens = re.findall(r"\s*\S+\s*", text) or ([text] if text else [])
    pieces = ["".join(tokens[i : i + words_per_piece]) for i in range(0, len(tokens), words_per_piece)]
    return pieces


class ExtractiveProvider:
    """Offline and deterministic: the same prompt always streams the same pieces."""

    name = "extractive"
    native_citations = False

    def __init__(self, *, delay_ms: float = 0.0, model: str = MODEL) -> None:
        self.model = model
        self.delay_ms = max(0.0, delay_ms)

    @classmethod
    def from_settings(cls, conf: AnswersSettings) -> ExtractiveProvider:
        return cls(delay_ms=conf.EXTRACTIVE_DELAY_MS)

    async def stream(self, prompt: Prompt, generation: Generation | None = None) -> AsyncIterator[str]:
        # A follow-up may only point back ("the second one?"): its standalone question names the
        # subject; what earlier turns said (their marker-free texts) is not said again.
        text = compose_answer(
            prompt.standalone or prompt.question,
            prompt.sources,
            written=prompt.question,
            earlier=[answered for _, answered in prompt.history],
        )
        for piece in pieces_of(text):
            # Always give the loop a turn, so a cancelled answer stops even with no delay.
            await asyncio.sleep(self.delay_ms / 1000.0)
            yield piece
