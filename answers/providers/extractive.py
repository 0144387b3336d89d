"""The offline, deterministic provider: answers with the best-matching cited sentences of the sources."""

from __future__ import annotations

import asyncio
import math
import re
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from answers.providers.base import Generation
from answers.providers.prompt import Prompt
from answers.retrieval.types import RetrievedSource

if TYPE_CHECKING:  # the settings reach it as an argument: this module imports without Django
    from answers.conf import AnswersSettings

MODEL = "extractive-v1"

MAX_SENTENCES = 4
MAX_WORDS = 130  # the answer's budget: a paragraph, not a page
MIN_SENTENCE_WORDS = 5
MAX_SENTENCE_WORDS = 70
NEAR_DUPLICATE = 0.6  # Jaccard over terms above which a sentence repeats a chosen one
RELATIVE_FLOOR = 0.45  # a sentence must score at least this share of the best one
SOURCE_FLOOR = 0.6  # a source must cover at least this share of what the best source covers
WORDS_PER_PIECE = 3

NO_ANSWER = "The sources found do not answer this question directly; the closest matches are listed below."
NO_SOURCES = "No sources were found for this question."


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


STOPWORDS = _words(
    """
    a about above after again against all also am an and any are as at be because been before being
    below between both but by can could did do does doing done down during each either else ever every
    few for from further get gets got had has have having he her here hers him his how however i if in
    into is it its itself just let like may me might more most much must my neither no nor not now of
    off on once one only or other our ours out over own per please same shall she should so some such
    than that the their theirs them then there these they this those through thus to too under until up
    upon us use used uses using very via was we were what when where whether which while who whom whose
    why will with within without would yet you your yours explain tell describe mean means meaning
    happen happens work works
    """
)

_ABBREVIATIONS = _words(
    "e.g i.e etc cf vs al approx dr mr mrs ms no fig sec ch vol pp resp incl esp viz st jr sr"
)

_WORD = re.compile(r"[A-Za-z0-9]+")
_TOKEN = re.compile(r"\S+")
_QUOTED = re.compile(r"[\"`“'‘]([A-Za-z_][A-Za-z0-9_]*)(?:\(\))?[\"`”'’]")
_BOUNDARY = re.compile(r"[.!?][\"'”’)\]]*\s+(?=[\"'“‘(]?[A-Z0-9])")
_LIST_MARKER = re.compile(r"^(?:[-*•+]|\d{1,2}[.)]|\(?[a-z][.)]|\([0-9ivx]+\))\s+")
_UNDERLINE = re.compile(r"^\s*([*=~^#\-_+])\1{2,}\s*$")
# Anything the citation grammar would read as a marker; the answer's only markers must be ours.
_MARKERISH = re.compile(r"\s?\\?\[[\s\d,\-–]*\](?!\()")
_CODE_SPAN = re.compile(r"(`+)(?:.+?)(?<!`)\1(?!`)")
_CODE_CHARS = re.compile(r"[=(){}\[\]<>:;|&^%$@\\]")
_POINTING = _words("follows following to example examples below as is are code e.g i.e like this these")
_ANAPHORA = re.compile(r"^(this|these|that|those|it|its|they|also|otherwise|thus|then|hence|so)\b", re.I)
_HEADING_PREFIXES = ("changed in version", "added in version", "new in version", "deprecated since")


@dataclass(frozen=True)
class Sentence:
    source: int  # the source's number
    position: int  # order within its source
    text: str
    terms: frozenset[str]


def stem(word: str) -> str:
    """Light, rule-based suffix stripping: enough to match 'managers' with 'manager'."""
    word = word.lower()
    if len(word) <= 3:
        return word
    for suffix, replacement in (
        ("ies", "y"),
        ("sses", "ss"),
        ("ing", ""),
        ("ed", ""),
        ("es", ""),
        ("s", ""),
        ("ly", ""),
    ):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            if suffix == "s" and word.endswith(("ss", "us", "is")):
                continue
            word = word[: len(word) - len(suffix)] + replacement
            break
    if len(word) > 4 and word.endswith("e"):
        word = word[:-1]
    return word


def terms_of(text: str, keep: frozenset[str] = frozenset()) -> list[str]:
    """Content terms of ``text``: lowercase words minus stopwords (unless in ``keep``), stemmed."""
    out = []
    for word in _WORD.findall(text.replace("_", " ")):
        lower = word.lower()
        if lower in STOPWORDS and lower not in keep:
            continue
        out.append(stem(lower))
    return out


def _is_prose(block: str) -> bool:
    """Whether a paragraph reads as prose rather than code, a grammar production or a heading."""
    if "::=" in block or block.lstrip().startswith((">>>", "...", "$ ", "```", "~~~", "#!")):
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


def _blocks(excerpt: str) -> list[str]:
    """Paragraphs of an excerpt, each a run of lines with the same indentation, whitespace collapsed."""
    blocks: list[str] = []
    current: list[str] = []
    indent = -1
    for raw in excerpt.replace("\r\n", "\n").split("\n"):
        line = raw.rstrip()
        if not line.strip() or _UNDERLINE.match(line):
            if current:
                blocks.append(" ".join(current))
            current, indent = [], -1
            continue
        this_indent = len(line) - len(line.lstrip())
        stripped = line.strip()
        starts_item = bool(_LIST_MARKER.match(stripped))
        # A change of indentation (other than a list item's hanging indent) starts a new paragraph,
        # which keeps an indented code example from merging into the sentence before it.
        if current and (starts_item or (this_indent < indent) or (this_indent > indent + 4)):
            blocks.append(" ".join(current))
            current = []
        if not current:
            indent = this_indent
        current.append(stripped)
    if current:
        blocks.append(" ".join(current))
    return [re.sub(r"\s+", " ", _LIST_MARKER.sub("", b)).strip() for b in blocks]


def split_sentences(text: str) -> list[str]:
    """Sentences of one prose paragraph; does not split after abbreviations ('e.g.') or initials."""
    sentences = []
    start = 0
    for match in _BOUNDARY.finditer(text):
        before = text[start : match.start()].rsplit(None, 1)
        last_word = before[-1].rstrip(".") if before else ""
        last_word = last_word.lstrip("(\"'“‘")
        # A lone capital before the period is an initial ("J. Smith"), not a sentence end.
        if last_word.lower() in _ABBREVIATIONS or (len(last_word) == 1 and last_word.isupper()):
            continue
        sentences.append(text[start : match.end()].strip())
        start = match.end()
    tail = text[start:].strip()
    if tail:
        sentences.append(tail)
    return sentences


def _clean(sentence: str) -> str | None:
    """The sentence made safe to cite, or None when it is not worth quoting."""
    sentence = _MARKERISH.sub("", sentence).strip()
    if "`" in sentence and "`" in _CODE_SPAN.sub("", sentence):
        # An unbalanced backtick would open a code span that swallows the markers after it.
        sentence = sentence.replace("`", "")
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


def extract_sentences(
    sources: Sequence[RetrievedSource], keep: frozenset[str] = frozenset()
) -> list[Sentence]:
    """Every quotable sentence of the sources' excerpts, tagged with its source number and position."""
    out = []
    for source in sources:
        position = 0
        for block in _blocks(source.excerpt):
            if not _is_prose(block):
                continue
            for raw in split_sentences(block):
                text = _clean(raw)
                if text is None:
                    continue
                out.append(Sentence(source.number, position, text, frozenset(terms_of(text, keep))))
                position += 1
    return out


def _keep_terms(question: str, sources: Sequence[RetrievedSource]) -> frozenset[str]:
    """Stopwords that are the subject here: written as code in the question or in the sources.

    In a programming reference "with", "for" or "if" are the topic, not filler.
    """
    words = {w.lower() for w in _WORD.findall(question)} & STOPWORDS
    if not words:
        return frozenset()
    code = {m.lower() for m in _QUOTED.findall(question)}
    for source in sources:
        code.update(m.lower() for m in _QUOTED.findall(source.title))
        code.update(m.lower() for m in _QUOTED.findall(source.excerpt))
    return frozenset(words & code)


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a and b else 0.0


def _cite(sentence: str, number: int) -> str:
    """Put the marker before the sentence's final punctuation: '... context manager [1].'"""
    match = re.search(r"([.!?]+)([\"'”’)\]]*)$", sentence)
    if match is None:
        return f"{sentence} [{number}]."
    body = sentence[: match.start()]
    return f"{body}{match.group(2)} [{number}]{match.group(1)}"


def compose_answer(question: str, sources: Sequence[RetrievedSource]) -> str:
    """The whole answer text: the best few sentences, each cited with its source's number.

    When no sentence shares a term with the question the answer says so without any
    marker, so finalize keeps every retrieved source (its fallback) rather than
    pretending one of them answers.
    """
    if not sources:
        return NO_SOURCES
    keep = _keep_terms(question, sources)
    question_terms = set(terms_of(question, keep)) or set(terms_of(question, STOPWORDS))
    sentences = extract_sentences(sources, keep)
    if not question_terms or not sentences:
        return NO_ANSWER

    total = len(sentences)
    idf = {
        term: math.log(1 + total / (1 + sum(1 for s in sentences if term in s.terms)))
        for term in question_terms
    }
    question_weight = sum(idf.values())
    titles = {src.number: set(terms_of(src.title, keep)) for src in sources}

    def coverage_of(terms: set[str] | frozenset[str]) -> float:
        return sum(idf[t] for t in question_terms & terms) / question_weight

    # A source that as a whole covers much less of the question than the best one only shares
    # a stray word with it ("regular expression" for a question about lambda expressions).
    source_terms: dict[int, set[str]] = {src.number: set(titles[src.number]) for src in sources}
    for s in sentences:
        source_terms[s.source] |= s.terms
    source_coverage = {number: coverage_of(terms) for number, terms in source_terms.items()}
    best_source = max(source_coverage.values())

    scored: list[tuple[float, Sentence]] = []
    for s in sentences:
        matched = question_terms & s.terms
        if not matched or source_coverage[s.source] < SOURCE_FLOOR * best_source:
            continue
        coverage = sum(idf[t] for t in matched) / question_weight
        title_match = len(question_terms & titles.get(s.source, set())) / len(question_terms)
        # Earlier sentences define and summarise; better-ranked sources were judged more relevant.
        score = (
            coverage
            + 0.15 * title_match * coverage
            + 0.12 / (1 + s.position)
            + 0.10 / s.source
            # Dense sentences say more about the question per word.
            + 0.05 * min(1.0, len(matched) / max(1, len(s.terms)) * 4)
            # "This uses ..." leans on a sentence the reader may not get.
            - (0.12 if _ANAPHORA.match(s.text) else 0.0)
        )
        scored.append((score, s))
    if not scored:
        return NO_ANSWER

    scored.sort(key=lambda item: (-item[0], item[1].source, item[1].position))
    best = scored[0][0]
    chosen: list[Sentence] = []
    words = 0
    for score, s in scored:
        if len(chosen) >= MAX_SENTENCES or score < best * RELATIVE_FLOOR:
            break
        if any(_jaccard(s.terms, c.terms) > NEAR_DUPLICATE for c in chosen):
            continue
        length = len(s.text.split())
        if chosen and words + length > MAX_WORDS:
            continue
        chosen.append(s)
        words += length

    # Source order, then the order within the source: the sentences read as a paragraph.
    chosen.sort(key=lambda s: (s.source, s.position))
    return " ".join(_cite(s.text, s.source) for s in chosen)


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
        # A follow-up may only point back ("the second one?"): its standalone question names the subject.
        text = compose_answer(prompt.standalone or prompt.question, prompt.sources)
        for piece in pieces_of(text):
            # Always give the loop a turn, so a cancelled answer stops even with no delay.
            await asyncio.sleep(self.delay_ms / 1000.0)
            yield piece
