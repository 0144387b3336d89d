"""The ask form of the web page (the no-JavaScript path; the script posts JSON to the API instead)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.core.validators import MaxLengthValidator

from answers.conf import conf
from answers.questions import NO_VISIBLE_CHARACTER, has_visible_character


class AskForm(forms.Form):
    question = forms.CharField(
        strip=True,
        widget=forms.Textarea(attrs={"rows": 3}),
        error_messages={"required": "Please type a question."},
    )
    # A follow-up's conversation (a hidden field of the thread's form); empty starts a new one.
    conversation = forms.UUIDField(required=False, widget=forms.HiddenInput)

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
