"""What a source's sentence is and what a question asks (answers.providers.sentence_kinds), on demo text."""

from __future__ import annotations

import pytest

from answers.providers.sentence_kinds import (
    asks_about_rules,
    asks_how_it_works,
    asks_what,
    code_tokens,
    dunders_of,
    emphasized,
    is_note,
    says_what,
    signature_of,
    symbol_kinds,
    symbols_of,
)


@pytest.mark.parametrize(
    ("text", "note", "says"),
    [
        # What the subject does or is.
        ("It terminates the nearest enclosing loop, skipping the optional else clause.", False, True),
        ("They shift the first argument to the left or right by the number of bits.", False, True),
        ("Its execution binds the function name in the current local namespace.", False, True),
        ('The "with" statement is used to wrap the execution of a block.', False, True),
        ('"pass" is a null operation — when it is executed, nothing happens.', False, True),
        (
            "Lambda expressions (sometimes called lambda forms) are used to create anonymous functions.",
            False,
            True,
        ),
        ('The "&" operator yields the bitwise AND of its arguments.', False, True),
        ('"return" leaves the current function call with the expression list.', False, True),
        # Rules of placement or syntax.
        ('"break" may only occur syntactically nested in a "for" or "while" loop.', True, False),
        ('A "yield" statement is semantically equivalent to a yield expression.', True, False),
        ("The shifting operations have lower priority than the arithmetic operations.", True, False),
        ("The power operator binds more tightly than unary operators on its left.", True, False),
        ("A function definition is an executable statement.", True, False),
        ("The yield statement can be used to omit the parentheses otherwise required.", True, False),
        # Neither: a pointer, a condition first, a plain fact.
        ("The following table summarizes the operator precedence in Python.", True, False),
        (
            "If a positional argument is given and it is a mapping object, a dictionary is created.",
            False,
            False,
        ),
        ("A Python program is constructed from code blocks.", False, False),
        ("They are integers.", False, False),
        ("It is worth noting.", False, False),
    ],
)
def test_notes_and_sentences_saying_what_their_subject_does(text: str, note: bool, says: bool) -> None:
    assert (is_note(text), says_what(text)) == (note, says)


def test_code_a_sentence_writes() -> None:
    text = 'The operators "in" and "not in" test; see “~”, `x` and the "__enter__()" method.'
    assert code_tokens(text) == {"in", "~", "x", "__enter__"}
    assert emphasized("A *block* is a piece; *dictionary unpacking* too.") == [
        "block",
        "dictionary unpacking",
    ]


@pytest.mark.parametrize(
    ("question", "symbols", "kinds", "dunders"),
    [
        ("What does the & operator do?", ["&"], {"operator"}, []),
        ("What does the shift operator << do?", ["<<"], set(), []),
        ("What is the @ operator for?", ["@"], {"operator"}, []),
        ("Tell me about augmented assignment like +=.", ["+="], set(), []),
        ("What does x-y mean?", [], set(), []),
        ("What does __enter__ do?", [], set(), ["__enter__"]),
    ],
)
def test_the_code_a_question_names(
    question: str, symbols: list[str], kinds: set[str], dunders: list[str]
) -> None:
    assert symbols_of(question) == symbols
    assert symbol_kinds(question) == kinds
    assert dunders_of(question) == dunders


@pytest.mark.parametrize(
    ("block", "name"),
    [
        ("object.__enter__(self)", "__enter__"),
        ("object.__call__(self[, args...])", "__call__"),
        ("class.__mro__", "__mro__"),
        ("foo(x)", ""),
        ("The __enter__() method is called.", ""),
    ],
)
def test_a_reference_entrys_signature_line(block: str, name: str) -> None:
    assert signature_of(block) == name


@pytest.mark.parametrize(
    ("question", "what", "process", "rules"),
    [
        ("What does yield do?", True, False, False),
        ("What is a code block?", True, False, False),
        ("What should I know about exceptions?", True, False, False),
        ("Please explain assignment statements.", True, False, False),
        ("How does the with statement work?", False, True, False),
        ("What happens when an exception is not handled?", False, True, False),
        ("How are duplicate keys handled in a dictionary display?", False, False, False),
        ("What does raise do when there is no active exception?", False, False, False),
        ("Which operators bind tighter than others?", False, False, True),
        ("Where may break be written?", False, False, True),
    ],
)
def test_what_a_question_asks(question: str, what: bool, process: bool, rules: bool) -> None:
    assert (asks_what(question), asks_how_it_works(question), asks_about_rules(question)) == (
        what,
        process,
        rules,
    )
