"""What a source's sentence is, beyond its words, for the extractive answerer (pure).

A rule of placement or syntax (is_note), a sentence saying what its subject does or is
(says_what), the code it writes (code_tokens), and the reference entry a signature line opens
(signature_of), the terms it emphasizes as it defines them (emphasized); and of the question:
the operator symbols and special method names it names (symbols_of, dunders_of), and whether
it asks how something works (asks_how_it_works). answers.providers.quoting weighs sentences by them; the demo
corpus's examples of each are in tests/unit/providers/test_sentence_kinds.py.
"""

from __future__ import annotations

import re

from answers.retrieval.query import SUBJECT_NOUNS

# A word or symbol written as code: between straight or curly double quotes or backticks, with
# the "()" of a call dropped.
_QUOTED = re.compile(r"[\"“`]([^\"”`\s]{1,30}?)(?:\(\))?[\"”`]")
# An operator symbol standing alone in a question, between spaces (or before its final mark).
_SYMBOL = re.compile(r"(?<!\S)([-+*/%@&|^~<>=!]{1,3})(?=[\s?.,!;:]|$)")
_SYMBOL_KIND = re.compile(r"(?<!\S)[-+*/%@&|^~<>=!]{1,3}\s+([a-z]+)")
_DUNDER = re.compile(r"__[a-z][a-z0-9_]*?__")
# A reference entry's signature line: "object.__enter__(self)", "class.__mro__", "__call__(...)".
_SIGNATURE = re.compile(r"^(?:[A-Za-z_]+\.)?(__[a-z][a-z0-9_]*?__)(?:\(|\s*$)")

# Where a construct may be written, how it binds, what it is equivalent to: true, and rarely what
# a reader asking what it does wants first.
_NOTE = re.compile(
    r"\b(?:may|can|must)(?: not)? only\b|\bonly (?:occur|appear)s?\b|\bsyntactically\b"
    r"|\bsemantically equivalent\b|\bparenthes[ie]s\b|\bsyntax error\b|\bSyntaxError\b|\bis illegal\b"
    r"|\bpriority\b|\bprecedence\b"
    r"|\bbinds? (?:more|less) tightly\b|\bis an? (?:executable |compound |simple )?statement\b",
    re.IGNORECASE,
)

# Verbs by which a sentence says what its subject does.
_DOES = (
    "yields|returns|defines|causes|creates|selects|specifies|terminates|removes|represents|tests|"
    "evaluates|binds|leaves|allows|provides|denotes|produces|implements|converts|computes|"
    "continues|executes|suspends|determines|declares|deletes|raises|stops|shifts|repeats"
)
# "It terminates ...", "They shift ...", "Its execution binds ...": the sentence before named the
# subject, this one says what it does.
_AUXILIARY = r"(?:is|are|was|were|has|have|does|do|can|may|must|should|will|would)\b"
_PRONOUN_DOES = re.compile(
    rf"^(?:it (?!{_AUXILIARY})[a-z]+s|they (?!{_AUXILIARY})[a-z]+|its [a-z]+ [a-z]+s)\b"
)
# A sentence opening with a condition or a circumstance ("If ...", "When ...") puts its subject later.
_CLAUSE = (
    r"(?:if|when|whenever|unless|although|though|while|because|since|for|in|on|at|as|after|before|once)\b"
)
# "The with statement is used to ...", "pass is a null operation", "A block is a piece of ...",
# "The & operator yields ...": a short subject (no clause break), then what it is or does.
_SUBJECT_DOES = re.compile(
    rf"^(?!the following\b|{_CLAUSE})[^,;:.]{{0,60}}?\s"
    rf"(?:(?:is|are) (?:used (?:to|for)|a|an)\b|(?:{_DOES})\b)",
    re.IGNORECASE,
)


def is_note(text: str) -> bool:
    """A rule of placement or syntax: where the construct may occur, how it binds, what it is
    equivalent to."""
    return bool(_NOTE.search(text))


def says_what(text: str) -> bool:
    """The sentence says what its subject does or is: a subject (or a pronoun for the one the
    sentence before named) and what it does, or "is used to", "is a"."""
    return bool(_PRONOUN_DOES.match(text.lower()) or _SUBJECT_DOES.match(text)) and not is_note(text)


# "How does X work?", "How is X evaluated?", "What happens when ...?": the question asks for a
# procedure, which a reference page gives as numbered steps.
_PROCESS = re.compile(
    r"^\s*how (?:does|do|is|are) .+? (?:work|works|evaluated|executed|run|proceed)\b"
    r"|^\s*what happens (?:when|if)\b",
    re.IGNORECASE,
)


# "What does X do?", "What is X?", "What should I know about X?", "Explain X": the question asks
# what its subject is or does, not about one aspect of it.
_WHAT = re.compile(
    r"^\s*(?:what (?:does|do|is|are)\b(?![^?]*\b(?:when|if|where|why|how)\b)|what should i know about\b"
    r"|(?:please |can you )?(?:explain|describe|tell me about)\b)",
    re.IGNORECASE,
)


def asks_what(question: str) -> bool:
    """Whether the question asks what its subject is or does."""
    return bool(_WHAT.match(question))


# A question about where a construct may be written or how it binds: the rules is_note finds
# are then what it asks.
_ASKS_RULES = re.compile(
    r"\b(?:priority|precedence|binds?|tight(?:er|ly)?|syntax|parenthes[ie]s|where|allowed|illegal|equivalent)\b",
    re.IGNORECASE,
)


def asks_about_rules(question: str) -> bool:
    """Whether the question asks where something may be written, how it binds or what it is
    equivalent to (then a rule of placement or syntax is no lesser answer)."""
    return bool(_ASKS_RULES.search(question))


def asks_how_it_works(question: str) -> bool:
    """Whether the question asks how something works: for the steps it takes."""
    return bool(_PROCESS.match(question))


# A term set in emphasis, as a reference page sets the term it defines ("A *block* is a piece ...").
_EMPHASIS = re.compile(r"(?<![*\w])\*([A-Za-z][\w ]{0,40}?)\*(?![*\w])")


def emphasized(text: str) -> list[str]:
    """The phrases `text` sets in emphasis (*term*), as written."""
    return list(_EMPHASIS.findall(text))


def code_tokens(text: str) -> frozenset[str]:
    """The words and symbols `text` writes as code, lower-cased ('"&"', '"not"', '"__enter__()"')."""
    return frozenset(token.lower() for token in _QUOTED.findall(text))


def symbols_of(question: str) -> list[str]:
    """The operator symbols a question names standing alone ("&", "<<", "~"), in order."""
    return list(dict.fromkeys(_SYMBOL.findall(question)))


def symbol_kinds(question: str) -> frozenset[str]:
    """The nouns naming the kind of a symbol the question names, written right after it ("the &
    *operator*"): query.kind_nouns for what its words cannot see."""
    return frozenset(_SYMBOL_KIND.findall(question.lower())) & SUBJECT_NOUNS


def dunders_of(question: str) -> list[str]:
    """The special method names a question names ("__enter__"), in order."""
    return list(dict.fromkeys(_DUNDER.findall(question.lower())))


def signature_of(block: str) -> str:
    """The special method name a reference entry's signature line opens ("object.__enter__(self)"
    -> "__enter__"), or ""."""
    match = _SIGNATURE.match(block.strip())
    return match.group(1) if match else ""
