"""A list that completes the sentence introducing it, read as that one sentence (pure).

A reference page often says what its subject does as a sentence ending in a colon and a list
of fragments finishing it: "The basic import statement ... is executed in two steps:" then
"1. find a module, loading and initializing it if necessary" and "2. define a name or names in
the local namespace ...". Neither part alone says it: the introduction is cut off at its colon
and the items, lower-case and unpunctuated, are no sentences the answerer quotes. read_lists
joins them back into the one sentence they are ("... in two steps: find a module, ...; define a
name ..."), when it reads as prose and stays a sentence's length. Items that are sentences of
their own (a procedure's steps, "1. The context expression is evaluated ...") stay as they are.
Examples from the demo corpus: tests/unit/providers/test_lists.py.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

# A paragraph as the extractive answerer reads it: its text (a list item's marker removed),
# whether it is a numbered list's item, whether it is a list's item at all.
Block = tuple[str, bool, bool]

MAX_SENTENCE_WORDS = 70  # a quoted sentence's length at most, joined or not (the answerer reads it from here)
_SENTENCE_END = re.compile(r"[.!?][\"'”’)]*$")


def is_fragment(item: str) -> bool:
    """An item that is no sentence of its own: it opens in lower case or does not end one."""
    return item[:1].islower() or not _SENTENCE_END.search(item)


def one_sentence(items: Sequence[str]) -> bool:
    """Whether the items are one sentence cut at its semicolons: the first opens with a capital,
    the last ends the sentence, none before it does ("If either argument is complex, ...;",
    "otherwise, ...;", "otherwise, both must be integers ...")."""
    return (
        len(items) > 1
        and items[0][:1].isupper()
        and bool(_SENTENCE_END.search(items[-1]))
        and not any(_SENTENCE_END.search(item) for item in items[:-1])
    )


def glued(items: Sequence[str]) -> str:
    """The items as one text: each but the last ending in its own mark or a semicolon, the last
    in a period."""
    parts = [item if item.endswith((";", ",", ":")) else item + ";" for item in items[:-1]]
    last = items[-1] if _SENTENCE_END.search(items[-1]) else items[-1].rstrip(" ;,") + "."
    return " ".join([*parts, last])


def _reads(text: str, is_prose: Callable[[str], bool]) -> bool:
    return len(text.split()) <= MAX_SENTENCE_WORDS and is_prose(text)


def read_lists(blocks: Sequence[Block], is_prose: Callable[[str], bool]) -> list[tuple[str, bool]]:
    """The blocks as (text, numbered item). An introduction ending in a colon and the list of
    fragments right after it (is_fragment, every item) become one block; else a list whose items
    are one sentence (one_sentence) becomes one block after its introduction. Each only when the
    joined text is prose no longer than MAX_SENTENCE_WORDS; every other block stays as it is."""
    out: list[tuple[str, bool]] = []
    i = 0
    while i < len(blocks):
        text, numbered, item = blocks[i]
        end = i + 1
        while end < len(blocks) and blocks[end][2]:
            end += 1
        items = [b[0] for b in blocks[i + 1 : end]]
        if not item and text.endswith(":") and items and all(is_fragment(x) for x in items):
            if _reads(whole := f"{text} {glued(items)}", is_prose):
                out.append((whole, False))
                i = end
                continue
            if one_sentence(items) and _reads(alone := glued(items), is_prose):
                out += [(text, numbered), (alone, False)]
                i = end
                continue
        out.append((text, numbered))
        i += 1
    return out
