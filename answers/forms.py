"""The ask form of the web page (the no-JavaScript path; the script posts JSON to the API instead)."""

from __future__ import annotations

import uuid
from typing import Any

from django import forms

from answers.questions import MAX_LENGTH, question_refusal
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
        self.fields["question"].widget.attrs["maxlength"] = str(MAX_LENGTH)

    def clean_question(self) -> str:
        question: str = self.cleaned_data["question"]
        refusal = question_refusal(question)
        if refusal:
            raise forms.ValidationError(refusal)
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
