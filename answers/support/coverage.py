"""Coverage: which of the question's informative terms the answer's cited sources contain (pure).

    {"terms": [str...], "covered": [str...], "missing": [str...], "key": [str...], "flag": bool}

- `terms`: the question's informative terms, as retrieval searched them
  (answers.retrieval.query.query_terms: stop words and words that only phrase a question left
  out), in the question's order.
- `covered`: the terms some cited source contains, in its title or in the excerpt the model was
  shown; `missing`: the others. Words are compared by their stem
  (answers.retrieval.query.stem), so "exceptions" is covered by a source saying "exception".
  The cited sources are those of the final list (a fallback answer's final list is every
  retrieved source).
- `key`: the terms whose absence matters: every term that does not count a quarter in
  retrieval (answers.retrieval.query.quarter_terms, the one rule: a weak term such as "is",
  "with", "for" unless it is the question's subject, as in "the for statement"; the verb of
  a how-to question, which readers put in their own words, "leave a loop early"; a noun
  naming the kind of the subject, "the nonlocal keyword") and that occurs in the site's
  corpus (some chunk holds it). A term in no document at all cannot be covered by any
  source: it already weighs against every passage in retrieval, and when nothing is left
  the answer is declined. Without corpus statistics (no search index) every term that does
  not count a quarter is key.
- `flag`: the answer may not address the question: a key term is missing. A declined answer
  is never flagged: it says itself that the documents do not cover the question.

So "How do exceptions work in Java?" answered from Python pages only, on a site that has a
page about Java, is flagged ("java" is key and missing); on a site without any Java page it is
not ("java" is in no document: that is retrieval's part). Cheap and deterministic: a few set
look-ups per term, and the corpus counts the support record already reads.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from answers.retrieval.query import stem
from answers.support.lexical import excerpt_stems


def coverage_record(
    *,
    terms: Sequence[str],
    cited_texts: Iterable[str],
    in_corpus: Callable[[str], bool],
    quarter: frozenset[str],
    declined: bool = False,
) -> dict[str, Any]:
    """The coverage record of an answer whose cited sources are `cited_texts` (titles and excerpts).

    `in_corpus(term)`: whether some chunk of the site's corpus holds the term; `quarter`: the
    question's terms that count a quarter (query.quarter_terms), never key.
    """
    stems: set[str] = set()
    for text in cited_texts:
        stems |= excerpt_stems(text)
    covered = [t for t in terms if stem(t) in stems]
    missing = [t for t in terms if stem(t) not in stems]
    key = [t for t in terms if t not in quarter and in_corpus(t)]
    return {
        "terms": list(terms),
        "covered": covered,
        "missing": missing,
        "key": key,
        "flag": not declined and any(t in missing for t in key),
    }
