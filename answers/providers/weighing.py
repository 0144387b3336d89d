"""The question and the sentences as the extractive answerer weighs them (pure).

A source's quotable sentence (Sentence: its terms, the code it writes, what kind of sentence
it is: answers.providers.sentence_kinds) and the question weighed against the sentences
(weigh -> Asked: its terms by rarity, the sets of terms the rules test against, and how a
sentence's merit is counted). answers.providers.quoting's rules choose among the sentences by
them. Words are compared through the project's one stop-word list and stemmer
(answers.retrieval.query). Examples from the demo corpus: tests/unit/providers/test_quoting.py.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property

from answers.providers.sentence_kinds import (
    asks_about_rules,
    asks_how_it_works,
    asks_what,
    code_tokens,
    dunders_of,
    emphasized,
    is_note,
    says_what,
    symbol_kinds,
    symbols_of,
)
from answers.retrieval.query import (
    STOPWORDS,
    WEAK_TERM_WEIGHT,
    WEAK_TERMS,
    action_verb,
    kind_nouns,
    quarter_terms,
    query_terms,
    stem,
    subject_terms,
    tokenize,
)

# In a sentence's merit: saying what the subject does or is counts for about a third of the
# question's weight more, a rule of placement or syntax (sentence_kinds) as much less.
SAYS_WHAT_BONUS = 0.3
NOTE_PENALTY = 0.3
# ... and defining a term of the question (setting it in emphasis) for about half of it more.
DEFINES_BONUS = 0.5

# A sentence opening with one of these leans on the sentence before it.
ANAPHORA = re.compile(r"^(this|these|that|those|it|its|they|also|otherwise|thus|then|hence|so)\b", re.I)
# ... with a personal pronoun standing for what the sentence before it was about ("It", "Its").
PRONOUN = re.compile(r"^(it|its|they|their)\b", re.I)


@dataclass(frozen=True)
class Sentence:
    source: int  # the source's number
    position: int  # order within its source
    text: str
    terms: frozenset[str]
    # It comes right after the sentence before it (position - 1), nothing between them left out
    # (no sentence, code, grammar or table): a "This" or "It" at its start refers to that one.
    continues: bool = False
    # The special method whose reference entry this sentence opens (sentence_kinds.signature_of).
    entry: str = ""
    # It is (in) an item of a numbered list: a step of a procedure.
    step: bool = False
    # The terms of the sentence before it, when it continues that one and opens by pointing back
    # ("Its execution binds ..."): what its "It" stands for (the merit counts them).
    carried: frozenset[str] = frozenset()

    @property
    def words(self) -> int:
        return len(self.text.split())

    @property
    def leans(self) -> bool:
        """It reads only after the sentence before it: it continues it and opens by pointing back."""
        return self.continues and bool(ANAPHORA.match(self.text))

    @cached_property
    def code(self) -> frozenset[str]:
        return code_tokens(self.text)

    @cached_property
    def defines(self) -> tuple[frozenset[str], ...]:
        """The terms it defines: each phrase it sets in emphasis, as stems."""
        return tuple(frozenset(stem(word) for word in phrase.split()) for phrase in emphasized(self.text))

    @cached_property
    def note(self) -> bool:
        return is_note(self.text)

    @cached_property
    def says_what(self) -> bool:
        # A pronoun opening a sentence that does not continue the one before stands for something
        # not quoted (code, a signature): what it says is not said of the subject.
        return says_what(self.text) and (self.continues or not ANAPHORA.match(self.text))


def terms_of(text: str) -> list[str]:
    """Content terms of ``text``: its words minus the project's stop words, stemmed (retrieval.query's)."""
    return [stem(w) for w in tokenize(text.replace("_", " ")) if w not in STOPWORDS]


def sentence_terms(text: str) -> frozenset[str]:
    """A sentence's terms: terms_of, and the operator symbols it writes as code ('"&"')."""
    symbols = {t for t in code_tokens(text) if not any(c.isalnum() for c in t)}
    return frozenset(terms_of(text)) | symbols


def question_weights(question: str, sentences: Sequence[Sentence]) -> dict[str, float]:
    """The question's informative terms (query.query_terms), by stem, each weighted by its rarity here.

    Rarity among the sources' sentences (a term in every sentence says little about which to
    quote); a weak term or a how-to question's verb counts a quarter (query.quarter_terms).
    """
    quarter = quarter_terms(question)
    total = len(sentences)
    weights: dict[str, float] = {}
    for term in [*query_terms(question), *symbols_of(question)]:
        key = stem(term)
        found = sum(1 for s in sentences if key in s.terms)
        weight = math.log(1 + total / (1 + found))
        if term in quarter:
            weight *= WEAK_TERM_WEIGHT
        weights[key] = max(weights.get(key, 0.0), weight)
    return weights


def strong_terms(question: str, weights: Mapping[str, float]) -> frozenset[str]:
    """The terms a quoted sentence must hold one of: the question's strong ones when it has some (a
    weak word such as "is" alone makes no sentence an answer), else all its weighed terms."""
    strong = {stem(t) for t in query_terms(question) if t not in WEAK_TERMS or t in subject_terms(question)}
    return frozenset(strong | set(symbols_of(question)) or weights)


def sought_terms(question: str, eligible: frozenset[str]) -> frozenset[str]:
    """The terms a further source must add one of: the noun naming the kind of the subject
    (query.kind_nouns) is matched where it is, never sought from another page."""
    kinds = kind_nouns(question) | symbol_kinds(question)
    return (eligible - {stem(noun) for noun in kinds}) or eligible


def subject_of(question: str, sought: frozenset[str]) -> frozenset[str]:
    """The terms a further sentence must hold one of: those the question is about, without the
    how-to verb or weak words (query.quarter_terms), which say nothing of the subject alone."""
    quarter = {stem(t) for t in quarter_terms(question)}
    return (sought - quarter) or sought


@dataclass(frozen=True)
class Asked:
    """The question as the rules weigh it."""

    weights: dict[str, float]  # question_weights
    eligible: frozenset[str]  # strong_terms
    sought: frozenset[str]  # sought_terms
    subject: frozenset[str]  # subject_of
    code: frozenset[str] = frozenset()  # code_subjects
    # The code names only code can mean (symbols, special methods): they outweigh retrieval's scores.
    exact: frozenset[str] = frozenset()
    process: bool = False  # it asks how something works (sentence_kinds.asks_how_it_works)
    what: bool = False  # it asks what its subject is or does (sentence_kinds.asks_what)
    rules: bool = False  # it asks where or how a thing may be written (sentence_kinds.asks_about_rules)

    @property
    def total(self) -> float:
        return sum(self.weights.values()) or 1.0

    def covered(self, terms: frozenset[str] | set[str]) -> float:
        """The share of the question's weight that `terms` hold."""
        return sum(w for t, w in self.weights.items() if t in terms) / self.total

    def adds(self, s: Sentence, held: set[str]) -> float:
        """The share of the question's weight `s` holds beyond the terms `held`."""
        return self.covered((s.terms & self.weights.keys()) - held)

    def merit(self, s: Sentence) -> float:
        """How well a sentence answers: the question's weight it holds, then an earlier place in
        its page, then density; a sentence leaning on the one before it loses a little."""
        matched = s.terms & self.weights.keys()
        return (
            self.covered(matched | (s.carried & self.weights.keys()))
            + 0.3 / (1 + s.position)
            # Dense sentences say more about the question per word.
            + 0.05 * min(1.0, len(matched) / max(1, len(s.terms)) * 4)
            # "This uses ..." leans on a sentence the reader may not get.
            - (0.12 if ANAPHORA.match(s.text) else 0.0)
            + (SAYS_WHAT_BONUS if s.says_what and (self.what or self.process) else 0.0)
            + (DEFINES_BONUS if any(phrase <= self.weights.keys() for phrase in s.defines) else 0.0)
            - (NOTE_PENALTY if s.note and not self.rules else 0.0)
        )

    def evidence(self, s: Sentence) -> int:
        """How surely `s` is about the question's code: 2 when it opens the reference entry of a
        special method the question names, 1 when it writes one of its code subjects as code."""
        if s.entry and s.entry in self.code:
            return 2
        return 1 if s.code & self.code else 0


def weigh(
    question: str, sentences: Sequence[Sentence], titles: Iterable[frozenset[str]] = ()
) -> Asked | None:
    """The question weighed against the sentences; None when it has no term to weigh, or there is
    no sentence to weigh it on. `titles`: the sources' titles' terms (terms_of)."""
    weights = question_weights(question, sentences)
    if not weights or not sentences:
        return None
    eligible = strong_terms(question, weights)
    sought = sought_terms(question, eligible)
    exact = frozenset(symbols_of(question) + dunders_of(question))
    # A how-to question's verb names the construct that does it when a page's title names the verb
    # too (a page on the statement of that name): the pages writing it as code are about it.
    verb = action_verb(question)
    if verb is not None and not any(stem(verb) in title for title in titles):
        verb = None
    return Asked(
        weights=weights,
        eligible=eligible,
        sought=sought,
        subject=subject_of(question, sought),
        code=exact | subject_terms(question) | ({verb} if verb else set()),
        exact=exact,
        process=asks_how_it_works(question),
        what=asks_what(question),
        rules=asks_about_rules(question),
    )
