"""The offline, deterministic provider: answers the question with cited sentences of its best source first.

Words are compared through the project's one stop-word list and stemmer
(answers.retrieval.query); see compose_answer for how sentences are chosen.
"""

from __future__ import annotations

import asyncio
import math
import re
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from answers.citations import scan_markers
from answers.citations.code import code_regions
from answers.citations.strip import remove_markers
from answers.providers.base import Generation
from answers.providers.prompt import Prompt
from answers.retrieval.query import (
    STOPWORDS,
    WEAK_TERM_WEIGHT,
    WEAK_TERMS,
    kind_nouns,
    quarter_terms,
    query_terms,
    stem,
    subject_terms,
    tokenize,
)
from answers.retrieval.types import RetrievedSource

if TYPE_CHECKING:  # the settings reach it as an argument: this module imports without Django
    from answers.conf import AnswersSettings

MODEL = "extractive-v1"

MAX_SENTENCES = 4
# The primary source is chosen among those retrieval scored at least this share of the best
# source's score (compose_answer, step 1). Chosen on the 267 on-topic and paraphrased questions
# of bench/relevance_*.jsonl (all seven sets): a share from 0.55 to 0.7 changes 3 to 7 answers'
# first page, each to a better one or one no worse ("How does the async for statement work?"
# opens with Coroutines, not The for statement); from 0.75 a page the question names is passed
# over for one merely scored higher ("How do I make my object usable in a with block?" then
# opens on `__eq__`).
PRIMARY_SCORE_SHARE = 2 / 3
PRIMARY_SENTENCES = 2  # sentences from the primary source (the first defines, the second adds)
MAX_WORDS = 130  # the answer's budget: a paragraph, not a page
MIN_SENTENCE_WORDS = 5
MAX_SENTENCE_WORDS = 70
NEAR_DUPLICATE = 0.6  # Jaccard over terms above which a sentence repeats a chosen one
WORDS_PER_PIECE = 3

NO_ANSWER = "The sources found do not answer this question directly; the closest matches are listed below."
NO_SOURCES = "No sources were found for this question."


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_ABBREVIATIONS = _words(
    "e.g i.e etc cf vs al approx dr mr mrs ms no fig sec ch vol pp resp incl esp viz st jr sr"
)

_WORD = re.compile(r"[A-Za-z0-9]+")
_AFTER_TEXT = "x"  # what stands before a sentence in the answer, for the grammar: text on its line
_TOKEN = re.compile(r"\S+")
_BOUNDARY = re.compile(r"[.!?][\"'”’)\]]*\s+(?=[\"'“‘(]?[A-Z0-9])")
_LIST_MARKER = re.compile(r"^(?:[-*•+]|\d{1,2}[.)]|\(?[a-z][.)]|\([0-9ivx]+\))\s+")
_UNDERLINE = re.compile(r"^\s*([*=~^#\-_+])\1{2,}\s*$")
_CODE_CHARS = re.compile(r"[=(){}\[\]<>:;|&^%$@\\]")
_POINTING = _words("follows following to example examples below as is are code e.g i.e like this these")
_ANAPHORA = re.compile(r"^(this|these|that|those|it|its|they|also|otherwise|thus|then|hence|so)\b", re.I)
# A table row or border: cells between pipes ("| a | b |"), "+---+" or "=== ===" rules.
_TABLE = re.compile(r"\|[^|\n]*\||\+[-=]{3,}|^\s*={3,}\s+={3,}", re.M)
_HEADING_PREFIXES = ("changed in version", "added in version", "new in version", "deprecated since")


@dataclass(frozen=True)
class Sentence:
    source: int  # the source's number
    position: int  # order within its source
    text: str
    terms: frozenset[str]
    # It comes right after the sentence before it (position - 1), nothing between them left out
    # (no sentence, code, grammar or table): a "This" or "It" at its start refers to that one.
    continues: bool = False


def terms_of(text: str) -> list[str]:
    """Content terms of ``text``: its words minus the project's stop words, stemmed (retrieval.query's)."""
    return [stem(w) for w in tokenize(text.replace("_", " ")) if w not in STOPWORDS]


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


def _blocks(excerpt: str) -> list[str]:
    """Paragraphs of an excerpt, each a run of lines with the same indentation, whitespace collapsed."""
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
    out = []
    for source in sources:
        position = 0
        after_kept = False  # the last thing read was a sentence kept (see Sentence.continues)
        for block in _blocks(source.excerpt):
            if not _is_prose(block):
                after_kept = False
                continue
            for raw in split_sentences(block):
                text = _clean(raw)
                if text is None:
                    after_kept = False
                    continue
                out.append(Sentence(source.number, position, text, frozenset(terms_of(text)), after_kept))
                position += 1
                after_kept = True
    return out


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a and b else 0.0


def _cite(sentence: str, number: int) -> str:
    """Put the marker before the sentence's final punctuation: '... context manager [1].'"""
    match = re.search(r"([.!?]+)([\"'”’)\]]*)$", sentence)
    if match is None:
        return f"{sentence} [{number}]."
    body = sentence[: match.start()]
    return f"{body}{match.group(2)} [{number}]{match.group(1)}"


def question_weights(question: str, sentences: Sequence[Sentence]) -> dict[str, float]:
    """The question's informative terms (query.query_terms), by stem, each weighted by its rarity here.

    Rarity among the sources' sentences (a term in every sentence says little about which to
    quote); a weak term or a how-to question's verb counts a quarter (query.quarter_terms).
    """
    quarter = quarter_terms(question)
    total = len(sentences)
    weights: dict[str, float] = {}
    for term in query_terms(question):
        key = stem(term)
        found = sum(1 for s in sentences if key in s.terms)
        weight = math.log(1 + total / (1 + found))
        if term in quarter:
            weight *= WEAK_TERM_WEIGHT
        weights[key] = max(weights.get(key, 0.0), weight)
    return weights


def _going_on(first: Sentence, sentences: Sequence[Sentence]) -> Sentence | None:
    """The sentence right after `first` when it goes on about the same thing: it follows with
    nothing left out between them (Sentence.continues) and opens by pointing back ("It ...",
    "This ...", _ANAPHORA), so it reads as the next sentence of one paragraph."""
    for s in sentences:
        if s.position == first.position + 1:
            return s if s.continues and _ANAPHORA.match(s.text) else None
    return None


def compose_answer(question: str, sources: Sequence[RetrievedSource]) -> str:
    """The answer: cited sentences that speak to the question's terms, from its best source first.

    1. The primary source is the one whose title names most of the question (by weight),
       the better-ranked one on a tie: the document about the topic, not one mentioning it;
       among the sources retrieval scored at least PRIMARY_SCORE_SHARE of the best one's (a
       page scored far lower covers far less of the question, whatever its title names).
    2. From it, its first sentence holding a question term (a reference page defines first),
       then its best others holding one, PRIMARY_SENTENCES in all; the sentence right after
       the first comes before those when it goes on about it ("It terminates the nearest
       enclosing loop" after "break may only occur syntactically nested in a loop", _going_on),
       unless the best of them adds more of the question's terms. A page whose title names
       all the question seeks (step 3) is about it throughout: when none of its sentences
       repeats the title's words ("Await expression" opens "Suspend the execution of
       coroutine on an awaitable object."), its title lends them, and it is quoted from its
       opening.
    3. While some question term is still uncovered, the other sources in rank order each
       give their best sentence holding an uncovered term: a second source only when it
       adds terms the first lacked (not its title's: it is about them). It stops as soon as
       every term is covered. The noun naming the kind of the subject (query.kind_nouns:
       "operator" in "the shift operator") is not sought from further sources: "What does
       the shift operator << do?" is answered from Shifting operations alone, not also with
       a sentence on `&` for its "operator". Nor is a further sentence quoted that holds
       none of the question's full-weight terms: one sharing only the how-to verb ("emulate"
       in "How do I emulate container types?", from Emulating numeric types) says nothing of
       the subject.
    Grammar productions (`::=`), code, tables and fragments are never quoted (_is_prose,
    _clean). When no sentence holds a question term (nor any title lends one) the answer
    says so without any marker, so finalize keeps every retrieved source (its fallback)
    rather than pretending one of them answers.
    """
    if not sources:
        return NO_SOURCES
    sentences = extract_sentences(sources)
    weights = question_weights(question, sentences)
    if not weights or not sentences:
        return NO_ANSWER
    question_weight = sum(weights.values()) or 1.0

    def covered(terms: frozenset[str] | set[str]) -> float:
        return sum(w for t, w in weights.items() if t in terms) / question_weight

    def merit(s: Sentence) -> float:
        matched = s.terms & weights.keys()
        return (
            covered(matched)
            + 0.3 / (1 + s.position)
            # Dense sentences say more about the question per word.
            + 0.05 * min(1.0, len(matched) / max(1, len(s.terms)) * 4)
            # "This uses ..." leans on a sentence the reader may not get.
            - (0.12 if _ANAPHORA.match(s.text) else 0.0)
        )

    # A sentence must hold one of the question's strong terms when it has some: "is" alone
    # ("What is the capital of France?") makes no sentence an answer.
    strong = {stem(t) for t in query_terms(question) if t not in WEAK_TERMS or t in subject_terms(question)}
    eligible = strong or set(weights)
    by_source: dict[int, list[Sentence]] = {}
    own: dict[int, list[Sentence]] = {}
    for s in sentences:
        own.setdefault(s.source, []).append(s)
        if s.terms & eligible:
            by_source.setdefault(s.source, []).append(s)
    # A further source must add a term the question is about: the noun naming the kind of its
    # subject ("operator" in "the shift operator", query.kind_nouns) is matched, never sought.
    sought = (eligible - {stem(noun) for noun in kind_nouns(question)}) or eligible
    title_terms = {src.number: frozenset(terms_of(src.title)) for src in sources}
    # A page whose title names all the question seeks ("Await expression", "Emulating callable
    # objects") is about it throughout, and a reference entry rarely repeats its title: when
    # none of its sentences does, they are quoted from its opening (its title's terms are then
    # held as the primary's always are, below).
    for number, title in title_terms.items():
        if number not in by_source and number in own and sought <= title:
            by_source[number] = own[number]
    if not by_source:
        return NO_ANSWER
    titles = {number: covered(title) for number, title in title_terms.items()}
    # ... among the sources retrieval scored near the best: a page it scored far lower covers far
    # less of the question, whatever its title says ("The with statement" for "How does the
    # async with statement work?", beside Coroutines, which holds "async" too).
    best_score = max(src.score for src in sources)
    near = {src.number for src in sources if src.score >= PRIMARY_SCORE_SHARE * best_score}
    primary = min(
        (number for number in by_source if number in near),
        key=lambda number: (-titles.get(number, 0.0), number),
        default=min(by_source),
    )

    chosen: list[Sentence] = []
    # The primary's title says what every sentence of it is about: its terms are held, and no
    # further source is sought for them ("termination model" in Exceptions for "What should I
    # know about the execution model?", whose page never writes "model" in its opening).
    have: set[str] = set(title_terms[primary] & weights.keys())
    words = 0

    def take(s: Sentence) -> None:
        nonlocal words
        chosen.append(s)
        have.update(s.terms & weights.keys())
        words += len(s.text.split())

    # Its first sentence on the topic (a reference page defines first), then its best others;
    # the sentence right after the first goes before them when it goes on about it (it opens
    # with "It", "This"...: "It terminates the nearest enclosing loop" after "break may only
    # occur ... in a loop") and the best of them adds no more of the question than it does.
    first, *rest = by_source[primary]
    others = sorted(rest, key=lambda s: (-merit(s), s.position))
    after = _going_on(first, own[primary])
    if after is not None:

        def adds(s: Sentence) -> float:
            return covered((s.terms & weights.keys()) - first.terms - have)

        if not others or adds(after) >= adds(others[0]):
            others.insert(0, after)
    for s in [first, *others]:
        if len(chosen) >= PRIMARY_SENTENCES:
            break
        if chosen and words + len(s.text.split()) > MAX_WORDS:
            continue
        if any(_jaccard(s.terms, c.terms) > NEAR_DUPLICATE for c in chosen):
            continue
        take(s)
    # ... and speak of what it is about: a sentence holding only the how-to verb ("emulate" in
    # "How do I emulate container types?") or a weak word says nothing of the subject.
    quarter = {stem(t) for t in quarter_terms(question)}
    subject = (sought - quarter) or sought
    for number in sorted(by_source):
        if number == primary or not sought - have or len(chosen) >= MAX_SENTENCES:
            continue
        adding = [s for s in by_source[number] if (s.terms & sought) - have and s.terms & subject]
        if not adding:
            continue
        best = max(adding, key=lambda s: (covered((s.terms & weights.keys()) - have), merit(s), -s.position))
        if words + len(best.text.split()) > MAX_WORDS:
            continue
        take(best)

    # Source order (the primary first), then the order within the source: they read as a paragraph.
    chosen.sort(key=lambda s: (s.source != primary, s.source, s.position))
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
