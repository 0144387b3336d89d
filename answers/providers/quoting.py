"""Which sentences the offline answer quotes: the extractive answerer's rules, one function each (pure).

answers.providers.extractive reads the sources' excerpts into Sentences and applies these
rules in this order (compose_answer):

1. weigh: the question's terms, each weighted by its rarity among the sentences, the sets
   of terms the later rules test against, the code it names and what it asks (Asked).
2. on_topic: per source, the sentences holding a term the question is about; a page whose
   title names all the question seeks lends its title to its sentences (title_lends).
3. primary_source: the page quoted first (for a question about code, a page writing it).
4. primary_candidates, then quote_primary: its opening (opening: the first sentence on the
   topic that is no rule of placement or syntax), the one going on from it (going_on), a
   procedure's steps when the question asks how something works, its best others by merit;
   PRIMARY_SENTENCES at most.
5. quote_compared: in a comparison, each other subject from the page whose title names it.
6. quote_further: while a sought term is still missing, one sentence per further source.
7. reading_order: the chosen sentences as one paragraph.

A follow-up quotes nothing an earlier turn quoted (not_quoted_before); a sentence drawing on
the one before it is quoted only where it reads (Quoted.may_follow). Step 1, and what a
sentence and a question are as the rules see them, are answers.providers.weighing's and
answers.providers.sentence_kinds'. The demo corpus's examples of each rule are in
tests/unit/providers/test_quoting.py.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from answers.providers.weighing import ANAPHORA, Asked, Sentence
from answers.retrieval.query import tokenize
from answers.retrieval.types import RetrievedSource

MAX_SENTENCES = 4
# The primary source is chosen among those retrieval scored at least this share of the best
# source's score (primary_source). Chosen on the 267 on-topic and paraphrased questions of
# bench/relevance_*.jsonl (all seven sets, so for this rule none of them is held out): a share
# from 0.55 to 0.7 changes 3 to 7 answers' first page, each to a better one or one no worse;
# from 0.75 a page the question names is passed over for one merely scored higher.
PRIMARY_SCORE_SHARE = 2 / 3
PRIMARY_SENTENCES = 2  # sentences from the primary source (the first defines, the second adds)
MAX_WORDS = 130  # the answer's budget: a paragraph, not a page
NEAR_DUPLICATE = 0.6  # Jaccard over terms above which a sentence repeats a chosen one


def by_source(sentences: Iterable[Sentence]) -> dict[int, list[Sentence]]:
    """Every sentence, by the number of its source, in page order."""
    own: dict[int, list[Sentence]] = {}
    for s in sentences:
        own.setdefault(s.source, []).append(s)
    return own


def title_lends(asked: Asked, title: frozenset[str], sentences: Sequence[Sentence]) -> bool:
    """Whether a page's title speaks for its sentences: it names all the question seeks, and the
    page has sentences, none holding an eligible term. A reference entry rarely repeats its
    title, and is about it throughout; it is then quoted from its opening."""
    return bool(sentences) and asked.sought <= title and not any(s.terms & asked.eligible for s in sentences)


def on_topic(
    own: Mapping[int, list[Sentence]], asked: Asked, titles: Mapping[int, frozenset[str]]
) -> dict[int, list[Sentence]]:
    """Per source, its sentences holding an eligible term; a page none of whose sentences does keeps
    them all when its title lends them its words (title_lends)."""
    topical: dict[int, list[Sentence]] = {}
    for sentences in own.values():
        for s in sentences:
            if s.terms & asked.eligible:
                topical.setdefault(s.source, []).append(s)
    for number, title in titles.items():
        if title_lends(asked, title, own.get(number, [])):
            topical[number] = own[number]
    return topical


def primary_source(
    sources: Sequence[RetrievedSource],
    topical: Mapping[int, list[Sentence]],
    asked: Asked,
    titles: Mapping[int, frozenset[str]],
) -> int:
    """The page quoted first: among the sources retrieval scored at least PRIMARY_SCORE_SHARE of
    the best (a page scored far lower covers far less of the question, whatever its title names),
    the one whose title names most of the question (by weight), the better ranked on a tie (the
    document about the topic, not one mentioning it).

    A question about code (Asked.code) is first answered from the pages surest to be about it
    (Asked.evidence): those writing it as code, before a page whose title names only the kind of
    thing it is; for a symbol or a special method, which nothing but code means, among all sources.
    """
    named = {number: asked.covered(title) for number, title in titles.items()}
    best_score = max(src.score for src in sources)
    near = {src.number for src in sources if src.score >= PRIMARY_SCORE_SHARE * best_score}
    pool = [number for number in topical if number in near]
    surest = {number: max(asked.evidence(s) for s in sentences) for number, sentences in topical.items()}
    best = max(surest.values(), default=0)
    if best:
        # ... and beside them the pages whose titles name what the question seeks.
        wide = list(topical) if asked.exact else pool
        pool = [number for number in wide if surest[number] == best or titles[number] & asked.sought]
    # The page documenting a special method the question names (its entry) comes before any.
    return min(
        pool,
        key=lambda number: (surest[number] < 2, -named.get(number, 0.0), -surest[number], number),
        default=min(topical),
    )


def going_on(first: Sentence, sentences: Sequence[Sentence]) -> Sentence | None:
    """The sentence right after `first` when it goes on about the same thing: it follows with
    nothing left out between them (Sentence.continues) and opens by pointing back (ANAPHORA),
    so it reads as the next sentence of one paragraph."""
    for s in sentences:
        if s.position == first.position + 1:
            return s if s.continues and ANAPHORA.match(s.text) else None
    return None


def opening(topical: Sequence[Sentence], own: Sequence[Sentence], asked: Asked) -> Sentence:
    """The primary page's first sentence: its first on the topic (a reference page defines first);
    for a question about code, its first surest about it (Asked.evidence). A rule of placement or
    syntax opens only when the sentence going on from it says what the subject does, or the
    question asks about such rules (Asked.rules); otherwise the first on the topic that is neither
    such a rule nor leaning on a sentence before it opens."""
    surest = max(asked.evidence(s) for s in topical)
    if surest:
        first = next(s for s in topical if asked.evidence(s) == surest)
        # One leaning on the sentence before it opens with that one, which it then follows.
        return next((s for s in own if first.leans and s.position == first.position - 1), first)
    first = topical[0]
    if not first.note or asked.rules:
        return first
    after = going_on(first, own)
    if after is not None and after.says_what:
        return first
    return next((s for s in topical if not s.note and not s.leans and not _connective(s)), first)


_CONNECTIVE = re.compile(r"^(otherwise|thus|then|hence|so)\b", re.I)


def _connective(s: Sentence) -> bool:
    """It opens with a word drawing on what came before ("Thus", "Hence")."""
    return bool(_CONNECTIVE.match(s.text))


def primary_candidates(
    topical: Sequence[Sentence], own: Sequence[Sentence], asked: Asked, held: set[str]
) -> list[Sentence]:
    """The primary page's sentences in the order they are tried: its opening, then the sentence
    going on from it (going_on), then the others by merit. The going-on sentence yields to the
    best of the others when that one adds more of the question's terms (those `held` aside); when
    it says what the subject does, only to one adding more of the subject's (Asked.subject). A
    question asking how something works gets the page's numbered steps right after the opening."""
    first = opening(topical, own, asked)
    others = sorted((s for s in topical if s is not first), key=lambda s: (-asked.merit(s), s.position))
    after = going_on(first, own)
    if after is not None and after.note:
        after = None
    beyond = held | first.terms
    if after is not None and others:
        counted = asked.subject if after.says_what else asked.weights.keys()
        best = others[0]
        if asked.covered((after.terms & counted) - beyond) < asked.covered((best.terms & counted) - beyond):
            after = None
    if after is not None:
        others.insert(0, after)
    if asked.process:
        # How it works: the page's steps, in order, right after its opening.
        steps = [s for s in own if s.step and s is not first]
        others = steps + [s for s in others if not s.step]
    return [first, *others]


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a and b else 0.0


@dataclass
class Quoted:
    """The answer as it is built: the sentences chosen, the question's terms they (and the primary
    page's title) hold, and their words."""

    asked: Asked
    have: set[str]
    sentences: list[Sentence] = field(default_factory=list)
    words: int = 0

    def take(self, s: Sentence) -> None:
        self.sentences.append(s)
        self.have.update(s.terms & self.asked.weights.keys())
        self.words += s.words

    def fits(self, s: Sentence) -> bool:
        """Whether `s` stays within the answer's budget of MAX_WORDS."""
        return self.words + s.words <= MAX_WORDS

    def may_follow(self, s: Sentence) -> bool:
        """Whether `s` reads in the answer. One opening with a connective ("Thus") follows the
        sentence before it, already chosen; one whose pronoun stands for the question's terms
        (Sentence.carried) follows it too, or a chosen sentence of its page, before it, holding
        them all. Any other does."""
        subject = s.carried & self.asked.weights.keys()
        if not _connective(s) and not (s.leans and subject):
            return True
        mine = [c for c in self.sentences if c.source == s.source and c.position < s.position]
        if any(c.position == s.position - 1 for c in mine):
            return True
        return bool(subject) and any(subject <= c.terms for c in mine)

    def repeats(self, s: Sentence) -> bool:
        """Whether `s` says nearly what a chosen sentence says (NEAR_DUPLICATE)."""
        return any(jaccard(s.terms, c.terms) > NEAR_DUPLICATE for c in self.sentences)


def quote_page(quoted: Quoted, candidates: Iterable[Sentence], limit: int = PRIMARY_SENTENCES) -> None:
    """Up to `limit` of one page's candidates, in their order: those that fit the budget (the
    answer's first sentence always does) and repeat no chosen one."""
    taken = 0
    for s in candidates:
        if taken >= limit or len(quoted.sentences) >= MAX_SENTENCES:
            break
        if quoted.sentences and not quoted.fits(s):
            continue
        if quoted.repeats(s) or not quoted.may_follow(s):
            continue
        quoted.take(s)
        taken += 1


def quote_primary(quoted: Quoted, candidates: Iterable[Sentence]) -> None:
    """PRIMARY_SENTENCES of the primary page's candidates (quote_page), the answer's opening."""
    quote_page(quoted, candidates)


# Words by which a question asks for a comparison ("how is that different from ...").
_COMPARING = frozenset(
    ["different", "difference", "differences", "differ", "differs", "compare", "compared", "comparison",
     "versus", "vs", "unlike", "distinguish"]
)  # fmt: skip


def compares(question: str) -> bool:
    """Whether the question, as the reader wrote it, asks how things differ."""
    return not _COMPARING.isdisjoint(tokenize(question))


def compared_pages(
    primary: int, titles: Mapping[int, frozenset[str]], asked: Asked
) -> dict[int, frozenset[str]]:
    """In a comparison, the other pages each subject is quoted from: when the primary's title names
    a subject the question seeks, each further subject another page's title names is that page's
    (the first in rank order), by page number. A mention of a subject on the primary page does not
    stand for the subject's own page."""
    named = titles[primary] & asked.subject
    if not named:
        return {}
    pages: dict[int, frozenset[str]] = {}
    for number in sorted(titles):
        subjects = (titles[number] & asked.subject) - named
        if number != primary and subjects:
            pages[number] = subjects
            named |= subjects
    return pages


def quote_compared(
    quoted: Quoted,
    topical: Mapping[int, list[Sentence]],
    own: Mapping[int, list[Sentence]],
    pages: Mapping[int, frozenset[str]],
) -> None:
    """Each compared page (compared_pages) quoted as the primary is, from its first sentence on
    its subject: a comparison speaks of each side on its own page."""
    for number, subjects in pages.items():
        on_subject = [s for s in topical.get(number, []) if s.terms & subjects]
        if on_subject:
            quote_page(quoted, primary_candidates(on_subject, own[number], quoted.asked, set(quoted.have)))


def not_quoted_before(sentences: Iterable[Sentence], earlier: Sequence[str]) -> list[Sentence]:
    """The sentences none of the `earlier` texts (a conversation's earlier answers) already holds:
    a follow-up says something new. Compared as words, so an earlier answer's text without its
    markers, quotes or final punctuation still holds the sentence it quoted."""
    said = [f" {' '.join(tokenize(text))} " for text in earlier]
    return [s for s in sentences if not any(f" {' '.join(tokenize(s.text))} " in text for text in said)]


def adding_sentences(sentences: Iterable[Sentence], asked: Asked, have: set[str]) -> list[Sentence]:
    """The sentences of a further page worth quoting: each adds a sought term not yet held and
    holds a term of the subject (subject_of)."""
    return [s for s in sentences if (s.terms & asked.sought) - have and s.terms & asked.subject]


def quote_further(quoted: Quoted, topical: Mapping[int, list[Sentence]], primary: int) -> None:
    """While a sought term is missing and there is room, each further source in rank order gives its
    sentence adding the most of what is missing (adding_sentences), when it fits the budget."""
    asked = quoted.asked
    for number in sorted(topical):
        if number == primary or not asked.sought - quoted.have or len(quoted.sentences) >= MAX_SENTENCES:
            continue
        adding = [s for s in adding_sentences(topical[number], asked, quoted.have) if quoted.may_follow(s)]
        if not adding:
            continue
        best = max(adding, key=lambda s: (asked.adds(s, quoted.have), asked.merit(s), -s.position))
        if quoted.fits(best):
            quoted.take(best)


def reading_order(sentences: Iterable[Sentence], primary: int) -> list[Sentence]:
    """Source order (the primary first), then the order within the source: they read as a paragraph."""
    return sorted(sentences, key=lambda s: (s.source != primary, s.source, s.position))
