"""The ask form of the web page (the no-JavaScript path; the script posts JSON to the API instead)."""

from __future__ import annotations

import uuid
from typing import Any

from django import forms
from django.core.validators import MaxLengthValidator

from answers.conf import conf
from answers.questions import NO_VISIBLE_CHARACTER, has_visible_character
from answers.selectors import parse_answer_id


class AskForm(forms.Form):
    question = forms.CharField(
        strip=True,
        widget=forms.Textarea(attrs={"rows": 3}),
        error_messages={"required": "Please type a question."},
    )
    # A follow-up's conversation (a hidden field of the thread's form); empty starts a new one.
    # Its id in the one form the API takes (clean_conversation).
    conversation = forms.CharField(required=False, strip=False, widget=forms.HiddenInput)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # The limit is read per form, not at import, so it follows the settings.
        limit = conf.MAX_QUESTION_LENGTH
        field = self.fields["question"]
        field.validators.append(MaxLengthValidator(limit))
        field.widget.attrs["maxlength"] = str(limit)

    def clean_question(self) -> str:
        question: str = self.cleaned_data["question"]
        if not has_visible_character(question):
            raise forms.ValidationError(NO_VISIBLE_CHARACTER)
        return question

    def clean_conversation(self) -> uuid.UUID | None:
        """The id as POST /api/answers/ takes it (selectors.parse_answer_id: lowercase, hyphens), or None."""
        raw: str = self.cleaned_data["conversation"]
        if raw == "":
            return None
        parsed = parse_answer_id(raw)
        if parsed is None:
            raise forms.ValidationError(
                "Enter a conversation id as the API writes it (lowercase, with hyphens)."
            )
        return parsed
