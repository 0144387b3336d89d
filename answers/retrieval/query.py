"""Turn a question into search terms, safely: no user text ever reaches an engine as syntax (pure).

This module holds the project's one stop-word list (STOPWORDS, with WEAK_TERMS)
and its one stemmer (stem): retrieval, the extractive answerer and the support
check all compare words through them.
"""

from __future__ import annotations

import itertools
import math
import re
from dataclasses import dataclass
from functools import lru_cache

from answers.retrieval.english import COMMON_ENGLISH

# Terms are runs of letters and digits; everything else (quotes, operators,
# parentheses, `*`, `:`, `-`, `_`) separates them, as both engines' tokenizers do.
_WORD = re.compile(r"[^\W_]+")

MAX_TERMS = 32

# English function words that carry no topic, and the words that only phrase a
# question ("what should I know about", "can you explain how ... works"): a
# question's terms never include them, so they weigh nothing in its score; the
# documents' text is indexed whole. Words that are also keywords of
# common programming languages ("with", "if", "for", "in", "is", "not", "and",
# "or", "as", "from", "while", "try", "return", ...) are deliberately absent:
# a technical site's readers ask about exactly those.
STOPWORDS = frozenset(
    [
        "a", "about", "above", "after", "again", "against", "all", "am", "an", "any", "are", "aren",
        "at", "be", "because", "been", "before", "being", "below", "between", "both", "but", "by",
        "can", "cannot", "could", "did", "didn", "do", "does", "doesn", "doing", "don", "down",
        "during", "each", "few", "further", "had", "has", "have", "having", "he", "her", "here", "hers",
        "herself", "him", "himself", "his", "how", "i", "into", "it", "its", "itself", "just", "let",
        "me", "more", "most", "my", "myself", "no", "nor", "of", "off", "on", "once", "only", "other",
        "ought", "our", "ours", "ourselves", "out", "over", "own", "same", "she", "should", "so",
        "some", "such", "than", "that", "the", "their", "theirs", "them", "themselves", "then", "there",
        "these", "they", "this", "those", "through", "to", "too", "under", "until", "up", "very", "was",
        "we", "were", "what", "when", "where", "which", "who", "whom", "why", "would", "you", "your",
        "yours", "yourself", "yourselves", "s", "t", "ll", "ve", "re", "d", "m", "o", "please", "tell",
        "explain", "describe", "work", "works", "know", "knowing", "mean", "means", "meaning", "happen",
        "happens", "also", "either", "ever", "get", "gets", "got", "however", "like", "may", "might",
        "much", "must", "shall", "thus", "us", "use", "used", "uses", "using", "via", "whether", "whose",
        "will", "yet", "want", "need", "thing", "things", "really", "anything", "something",
        "understand", "learn", "show", "give", "mine", "okay", "hi", "hello", "thanks", "thank",
    ]
)  # fmt: skip


# Keywords of common programming languages that are also frequent English words.
# They are searched (a question about "the with statement" needs "with") but
# cannot make a passage a candidate on their own when the question has other
# terms, and they count a quarter in the score unless they are its subject
# (see term_weights).
WEAK_TERMS = frozenset(["with", "if", "for", "in", "is", "not", "and", "or", "as", "from", "while", "else"])
WEAK_TERM_WEIGHT = 0.25


def rarity(doc_count: int, total: int) -> float:
    """A term's weight in a question: its inverse document frequency over the corpus's chunks.

    ln(1 + (N - n + 0.5) / (n + 0.5)) for a term in n of N chunks (bm25's form, always
    positive): a term in every chunk weighs almost nothing, a term in none weighs the most
    (a word the corpus never uses is what the question is most about, as far as the corpus
    can tell, and no passage holds it).
    """
    total = max(total, doc_count)
    return math.log(1.0 + (total - doc_count + 0.5) / (doc_count + 0.5))


# The most a term the corpus does use weighs: rarity saturates, as bm25's term frequency
# does. ln(1 + 6.4) = 2: a term in fewer than about one chunk in seven (13.5 %) is "rare",
# and among rare terms the rarer is not the more important (a reader's paraphrase uses
# words the corpus holds only a few times: "leave", "send", "bring"). A term the corpus
# never uses is not capped: with rarity(0, N) = ln(1 + 2N + 1) (7.2 over 650 chunks) it
# outweighs any term the corpus holds several times over, which is what makes a question
# about something else ("the capital of France") score low everywhere, unless it is one
# of the most common English words (absent_weight).
# Chosen on the labeled set (bench/relevance_labeled.jsonl, figures in BENCHMARKS.md).
RARITY_CAP = 2.0


def capped_rarity(doc_count: int, total: int) -> float:
    """rarity, at most RARITY_CAP: the weight of a term the corpus uses (one rule, used by
    term_weights and by PostgreSQL's candidate order in answers.retrieval.backends)."""
    return min(rarity(doc_count, total), RARITY_CAP)


# Words, and the marks after which a sentence starts.
_WORD_OR_STOP = re.compile(r"[^\W_]+|[.!?:]")


def name_terms(question: str) -> frozenset[str]:
    """The words the question capitalises where no sentence starts: names, lower-cased.

    "What is the capital of America?" -> {"america"}; "Early exits? Java too." -> {} (both
    start a sentence: a capital there says nothing).
    """
    names = set()
    starts = True
    for word in _WORD_OR_STOP.findall(question):
        if word in ".!?:":
            starts = True
            continue
        if word[0].isupper() and word != "I" and not starts:
            names.add(word.lower())
        starts = False
    return frozenset(names)


def absent_weight(term: str, total: int, names: frozenset[str] = frozenset()) -> float:
    """The weight of a term no chunk of the corpus holds.

    How much a word's absence says depends on how specific the word is. A name or a rare
    word ("France", "photosynthesis", "sourdough") the corpus never uses says the question
    is about something else: rarity(0, total), the most a term can weigh, counting fully
    against every passage. One of the most common English words ("early", "good", "keep":
    COMMON_ENGLISH, Zipf frequency >= 5 in general English, answers.retrieval.english) is
    absent from a reference corpus because of its register, not its topic ("leave a loop
    early" is about `break`): it weighs as a rare term the corpus uses (RARITY_CAP),
    unless the question writes it as a name ("America").
    """
    if term in COMMON_ENGLISH and term not in names:
        return capped_rarity(0, total)
    return rarity(0, total)


def rare_names(question: str, doc_counts: dict[str, int], total: int) -> frozenset[str]:
    """The names the question writes (name_terms) that the corpus uses rarely or never: as rare
    as RARITY_CAP or rarer.

    "How do exceptions work in Java?" over a Python reference -> {"java"} (two chunks of 650
    mention it); "How do comparisons work in Python?" -> {} (a fifth of the chunks say
    "Python": it is the site's subject, not what sets the question apart).
    """
    terms = set(query_terms(question))  # a name that is a stop word ("What Will said") is no term
    return frozenset(
        n for n in name_terms(question) if n in terms and rarity(doc_counts.get(n, 0), total) >= RARITY_CAP
    )


def holds_all(words: frozenset[str], *texts: str) -> bool:
    """Whether the texts together hold every one of `words` (compared by stem)."""
    if not words:
        return True
    held = {stem(w) for text in texts for w in tokenize(text)}
    return all(stem(w) in held for w in words)


# A weak term written before one of these words is the question's subject, not filler:
# "the for statement", "an if clause", "the in operator", "the with block".
SUBJECT_NOUNS = frozenset(
    ["statement", "statements", "loop", "loops", "clause", "clauses", "keyword", "keywords", "operator",
     "operators", "block", "blocks", "expression", "expressions", "test", "tests"]
)  # fmt: skip
_CODE_WORD = re.compile(r"[`\"'“‘]([^\W_]+)[`\"'”’]")


def subject_terms(question: str) -> frozenset[str]:
    """The weak terms that are what the question is about: written as code, or naming a construct.

    "How does the `with` statement work?" and "How does the for loop iterate?" are about
    "with" and "for"; "How do I loop for a while?" is not about "for" or "while".
    """
    words = tokenize(question)
    subjects = {w.lower() for w in _CODE_WORD.findall(question)}
    subjects.update(w for w, after in itertools.pairwise(words) if after in SUBJECT_NOUNS)
    return frozenset(subjects & WEAK_TERMS)


# "How do I <verb>", "how can we <verb>", "how to <verb>": the action a how-to question asks
# about, in the reader's words ("leave a loop early", "send a value back", "bring a module
# in"), where the documents name it in theirs ("break", "return", "import").
_HOW_TO = re.compile(
    r"\bhow\s+(?:do|can|could|should|would|shall|may|might)\s+(?:i|we|you|one)\s+([^\W_]+)"
    r"|\bhow\s+to\s+([^\W_]+)",
    re.IGNORECASE,
)


def action_verb(question: str) -> str | None:
    """The verb of a how-to question, lower-cased, unless written as code ("How do I `import` ...")."""
    match = _HOW_TO.search(question)
    if match is None:
        return None
    verb = (match.group(1) or match.group(2)).lower()
    if verb in STOPWORDS or verb in {w.lower() for w in _CODE_WORD.findall(question)}:
        return None
    return verb


def kind_nouns(question: str) -> frozenset[str]:
    """The SUBJECT_NOUNS written right after another of the question's terms: the kind of
    thing the question is about, the term before them naming which one.

    "What does the nonlocal keyword mean?" -> {"keyword"} (the question is about `nonlocal`:
    the page listing every keyword covers both words, the page on `nonlocal` is the answer);
    "How do I leave a loop early?" -> {} ("a" is no term: the loop is what it is about).
    """
    words = tokenize(question)
    return frozenset(
        after for word, after in itertools.pairwise(words) if after in SUBJECT_NOUNS and word not in STOPWORDS
    )


def quarter_terms(question: str) -> frozenset[str]:
    """The question's terms that count a quarter (WEAK_TERM_WEIGHT) wherever its terms are weighed.

    A weak term (WEAK_TERMS) that is not the question's subject (subject_terms), the verb
    of a how-to question (action_verb) and a noun naming the kind of the question's subject
    (kind_nouns): all are searched and matched, but a passage is about the question through
    its other terms. The one rule retrieval (term_weights) and the extractive answerer
    (providers.quoting.question_weights) apply.
    """
    words = set(tokenize(question))
    quarter = {t for t in words & WEAK_TERMS if t not in subject_terms(question)}
    verb = action_verb(question)
    if verb is not None:
        quarter.add(verb)
    return frozenset(quarter | kind_nouns(question))


def term_weights(question: str, terms: list[str], doc_counts: dict[str, int], total: int) -> dict[str, float]:
    """Each term's weight in the question's score (docs/explanation/relevance.md).

    Its rarity (rarity), at most RARITY_CAP for a term the corpus uses; absent_weight for
    one it never uses; a quarter of that for a term of quarter_terms.
    """
    quarter = quarter_terms(question)
    names = name_terms(question)
    weights = {}
    for t in terms:
        count = doc_counts.get(t, 0)
        weight = capped_rarity(count, total) if count > 0 else absent_weight(t, total, names)
        weights[t] = weight * (WEAK_TERM_WEIGHT if t in quarter else 1.0)
    return weights


def tokenize(text: str) -> list[str]:
    """Lower-cased words of a text, in order."""
    return _WORD.findall(text.lower())


def query_terms(question: str) -> list[str]:
    """The question's informative terms: distinct, in order of appearance, stop and phrasing words dropped.

    "What should I know about exceptions?" → ["exceptions"]. Weak terms (WEAK_TERMS) stay:
    "How does the with statement work?" → ["with", "statement"].
    """
    seen: dict[str, None] = {}
    for word in tokenize(question):
        if word in STOPWORDS or word in seen:
            continue
        seen[word] = None
        if len(seen) >= MAX_TERMS:
            break
    return list(seen)


# A stem keeps its word's first three characters (every rule below leaves at least
# three in place): a word can only stem to X if it starts with X[:3] (rerank's filter).
STEM_KEEPS = 3


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """A light suffix-stripping stemmer, used only to compare words in Python (rerank).

    Both sides of a comparison go through it, so it only needs to be consistent:
    "statements"/"statement", "defined"/"define"/"defining", "classes"/"class".
    For a lower-case word, stem(word)[:STEM_KEEPS] == word[:STEM_KEEPS].
    """
    w = word.lower()
    if len(w) <= 3:
        return w
    # "ings" before "ing": "slicings" stems as "slicing" does ("slic"), not to "slicing".
    for suffix, replacement in (
        ("ies", "y"),
        ("sses", "ss"),
        ("ings", ""),
        ("ing", ""),
        ("ed", ""),
        ("ly", ""),
    ):
        if w.endswith(suffix) and len(w) - len(suffix) >= 3:
            w = w[: -len(suffix)] + replacement
            break
    else:
        if w.endswith("es") and w[-3:-2] in ("s", "x", "z", "h") and len(w) > 4:
            w = w[:-2]
        elif w.endswith("s") and not w.endswith(("ss", "us", "is")):
            w = w[:-1]
    if w.endswith("e") and len(w) > 4:
        w = w[:-1]
    return w


def split_terms(terms: list[str], subjects: frozenset[str] = frozenset()) -> tuple[list[str], list[str]]:
    """(strong, weak): a candidate must match a strong term when there is one (subject_terms are strong)."""
    strong = [t for t in terms if t not in WEAK_TERMS or t in subjects]
    weak = [t for t in terms if t in WEAK_TERMS and t not in subjects]
    return strong, weak


@dataclass(frozen=True)
class MatchPlan:
    """Which terms a row must contain to be a candidate; every term still counts in the ranking.

    Ranking every row that contains a very common word is what makes full-text
    search slow on a large corpus (both engines score each matching row). So a
    row must contain one of the question's *rare* strong terms (found in fewer
    than `common_docs` chunks); when every strong term is common, it must
    contain all the terms (and the engine ranks a bounded number of rows).
    """

    required: list[str]
    all_required: bool
    common: list[str]


def plan_match(
    terms: list[str], doc_counts: dict[str, int], *, common_docs: int, subjects: frozenset[str] = frozenset()
) -> MatchPlan:
    strong, weak = split_terms(terms, subjects)
    pool = strong or weak
    rare = [t for t in pool if doc_counts.get(t, 0) < common_docs]
    common = [t for t in terms if doc_counts.get(t, 0) >= common_docs]
    if rare:
        return MatchPlan(rare, False, common)
    return MatchPlan(list(terms), True, common)


def fts5_quote(term: str) -> str:
    """A term as an FTS5 string: whatever it holds, it is never syntax."""
    return '"' + term.replace('"', '""') + '"'


def fts5_match(terms: list[str], plan: MatchPlan | None = None) -> str:
    """An FTS5 MATCH expression built only from quoted terms.

    Rows must match `plan.required` (any of them, or all); the other terms are
    OR-ed in with AND so they count in bm25 without widening the match:
    `(r1 OR r2) AND (r1 OR r2 OR t3 OR t4)` matches the same rows as `r1 OR r2`.
    Without a plan: the strong terms are required, weak ones rank.
    """
    if plan is None:
        strong, _ = split_terms(terms)
        plan = MatchPlan(strong or list(terms), False, [])
    joiner = " AND " if plan.all_required else " OR "
    required = joiner.join(fts5_quote(t) for t in plan.required)
    if set(plan.required) == set(terms):
        return required
    every = " OR ".join(fts5_quote(t) for t in terms)
    return f"({required}) AND ({every})"
