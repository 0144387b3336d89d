"""What a failed generation keeps as its raw text (answers/pipeline/generate.py): the failed answer's
text that a reader and the trail see."""

from __future__ import annotations

import pytest
from django.test import override_settings

from answers.failures import ErrorKind
from answers.pipeline.generate import _kept_text, _Progress
from answers.providers.base import ProviderError

# (pieces streamed before the failure, the provider's partial text, the text kept)
TABLE = [
    (["Half an "], "Half an answer", "Half an answer"),  # the provider received more than it yielded
    (["Half an answer"], "Half an", "Half an answer"),  # the stream got further
    (["Half"], "", "Half"),  # no partial text: what was streamed
    (["Half"], "Half an\x07 answer", "Half an answer"),  # control characters removed, as when streamed
    (["A smile "], "A smile \ud83d\ude00", "A smile \U0001f600"),  # a surrogate pair is one character
    (["A smile "], "A smile \ud83d and more", "A smile "),  # half a character: not text, the stream's text
    (["Short"], "x" * 30, "x" * 20),  # never more than ANSWERS_MAX_ANSWER_CHARS
]


@override_settings(ANSWERS_MAX_ANSWER_CHARS=20)
@pytest.mark.parametrize(("pieces", "partial", "kept"), TABLE)
def test_a_provider_failure_keeps_the_longer_text_that_is_text(
    pieces: list[str], partial: str, kept: str
) -> None:
    progress = _Progress(pieces=pieces)
    error = ProviderError(ErrorKind.UPSTREAM, "The provider failed.", partial_text=partial)
    assert _kept_text(error, progress) == kept
