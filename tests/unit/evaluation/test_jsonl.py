"""JSON Lines of items: every line checked before anything is kept; the bench's labeled form read too."""

from __future__ import annotations

import pytest

from answers.evaluation.jsonl import ItemSpec, ItemsRefused, dump_items, parse_items


def test_items_round_trip() -> None:
    items = [
        ItemSpec(question="Q1?", expected_documents=("https://a", "key:b")),
        ItemSpec(question="Q2?", expect_decline=True, notes="off topic — «unicode»"),
    ]
    assert parse_items(dump_items(items)) == items


def test_defaults_and_duplicate_keys_in_a_line() -> None:
    (item,) = parse_items(['  {"question": "  Spaced?  ", "expected_documents": ["a", "a", " b "]}  '])
    assert item == ItemSpec(question="Spaced?", expected_documents=("a", "b"))


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ("not json", "not JSON"),
        ("[1, 2]", "not a JSON object"),
        ('{"question": ""}', '"question" must be a non-empty string'),
        ('{"question": "Q?", "expected_documents": "https://a"}', "must be a list of non-empty strings"),
        ('{"question": "Q?", "expected_documents": [""]}', "must be a list of non-empty strings"),
        ('{"question": "Q?", "expect_decline": "yes"}', '"expect_decline" must be true or false'),
        ('{"question": "Q?", "notes": 3}', '"notes" must be a string'),
        ('{"question": "Q?", "expected": []}', "unknown key 'expected'"),
    ],
)
def test_a_malformed_line_is_refused_with_its_number(line: str, reason: str) -> None:
    with pytest.raises(ItemsRefused) as refused:
        parse_items(['{"question": "Fine?"}', "", line])
    assert refused.value.line == 3
    assert reason in refused.value.reason


def test_a_question_twice_is_refused() -> None:
    with pytest.raises(ItemsRefused) as refused:
        parse_items(['{"question": "Same?"}', '{"question": "Same?"}'])
    assert refused.value.line == 2
    assert "already on line 1" in str(refused.value)


def test_the_relevance_labeled_form() -> None:
    items = parse_items(
        [
            '{"kind": "on-topic", "question": "What is X?", "documents": ["pydoc:x"]}',
            '{"kind": "off-topic", "question": "What is Paris?", "documents": []}',
        ]
    )
    assert items == [
        ItemSpec(question="What is X?", expected_documents=("pydoc:x",), notes="on-topic"),
        ItemSpec(question="What is Paris?", expect_decline=True, notes="off-topic"),
    ]
