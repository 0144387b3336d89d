"""Document access rules: what an access value means, who may read what, and what a redaction hides."""

from __future__ import annotations

import pytest

from answers.content.validation import InvalidDocument, Rule, parse_access
from answers.models import Document
from answers.retrieval.access import ANONYMOUS, Reader, Redaction, redact_event


class TestParseAccess:
    valid = [
        (None, Rule("public")),
        ("public", Rule("public")),
        (" signed-in ", Rule("signed-in")),
        ("staff", Rule("staff")),
        (["Members"], Rule("groups", ("Members",))),
        (["b", "a", "b"], Rule("groups", ("a", "b"))),
    ]
    invalid = [[], "", "everyone", "Editors,Members", [""], ["ok", 3], 7, {"level": "staff"}, ["x" * 151]]

    @pytest.mark.parametrize(("value", "rule"), valid)
    def test_valid(self, value, rule):
        assert parse_access(value) == rule

    @pytest.mark.parametrize("value", invalid)
    def test_invalid_names_the_field(self, value):
        with pytest.raises(InvalidDocument) as caught:
            parse_access(value)
        assert caught.value.field == "access"

    def test_on_the_command_line_other_text_is_group_names(self):
        assert parse_access("Editors, Members", command_line=True) == Rule("groups", ("Editors", "Members"))
        assert parse_access("staff", command_line=True) == Rule("staff")
        with pytest.raises(InvalidDocument):
            parse_access(" , ", command_line=True)

    def test_the_value_is_written_back_as_the_api_takes_it(self):
        assert parse_access("staff").value == "staff"
        assert parse_access(["Members"]).value == ["Members"]


def test_the_levels_are_the_models_choices():
    assert [*Document.Access.values] == ["public", "signed-in", "staff", "groups"]


MEMBER = Reader(signed_in=True, groups=frozenset({"Members"}))
USER = Reader(signed_in=True)
STAFF = Reader(signed_in=True, staff=True)


@pytest.mark.parametrize(
    ("reader", "level", "groups", "may"),
    [
        (ANONYMOUS, "public", (), True),
        (ANONYMOUS, "signed-in", (), False),
        (ANONYMOUS, "staff", (), False),
        (ANONYMOUS, "groups", ("Members",), False),
        (USER, "signed-in", (), True),
        (USER, "staff", (), False),
        (USER, "groups", ("Members",), False),
        (MEMBER, "groups", ("Editors", "Members"), True),
        (MEMBER, "staff", (), False),
        (STAFF, "staff", (), True),
        (STAFF, "groups", ("Members",), True),
        (STAFF, "a level from a later version", (), True),
        (MEMBER, "a level from a later version", (), False),
    ],
)
def test_who_may_read_what(reader, level, groups, may):
    assert reader.may_read(level, groups) is may


REFERENCE_1 = {"number": 1, "document_id": 10, "title": "Open", "url": "/open", "excerpt": "open text"}
REFERENCE_2 = {"number": 2, "document_id": 20, "title": "Closed", "url": "/closed", "excerpt": "closed text"}


def test_a_redaction_keeps_only_the_number_of_a_withheld_source_in_every_event_that_carries_one():
    hide = Redaction(frozenset({20}))
    references = redact_event("references", {"references": [REFERENCE_1, REFERENCE_2]}, hide)
    done = redact_event(
        "done",
        {"text": "a [1] b [2]", "references": [REFERENCE_1, REFERENCE_2], "quotes": {"1": ["x"], "2": ["y"]}},
        hide,
    )
    cite = redact_event("cite", {"number": 2, "original": 2, "reference": REFERENCE_2}, hide)

    assert references["references"] == [REFERENCE_1, {"number": 2, "withheld": True}]
    assert done["references"] == [REFERENCE_1, {"number": 2, "withheld": True}]
    assert done["quotes"] == {"1": ["x"]}
    assert cite["reference"] == {"number": 2, "withheld": True}
    assert redact_event("delta", {"text": "Closed"}, hide) == {"text": "Closed"}


def test_nothing_withheld_changes_nothing_and_a_deleted_source_is_withheld_only_when_asked():
    event = {"references": [REFERENCE_1, {**REFERENCE_2, "document_id": None}]}
    assert redact_event("references", event, Redaction()) == event
    assert Redaction(deleted=True).withholds(None)
    assert not Redaction().withholds(None)
