"""Payload shaping: an answer's references, quotes, backing passages and html as clients see them
(the `references` and `done` events, the API and the pages), with a reader's redaction applied."""

from __future__ import annotations

from typing import Any

from answers.citations.trail import final_markers
from answers.excerpts import quote_spans, readable
from answers.models import Answer, AnswerSource
from answers.rendering import render_answer_html
from answers.retrieval.access import NOTHING_WITHHELD, Redaction, withheld_reference
from answers.retrieval.types import RetrievedSource
from answers.support.passages import best_passage
from answers.support.sentences import split_sentences


def reference_payload(
    source: AnswerSource | RetrievedSource, number: int, redaction: Redaction = NOTHING_WITHHELD
) -> dict[str, Any]:
    """A numbered source as clients see it: in `references`, `done`, the API and the pages."""
    payload = {
        "number": number,
        "document_id": source.document_id,
        "title": source.title,
        "url": source.url,
        "excerpt": source.excerpt,
    }
    return withheld_reference(payload) if redaction.withholds(source.document_id) else payload


def answer_references(answer: Answer, redaction: Redaction = NOTHING_WITHHELD) -> list[dict[str, Any]]:
    """Done: the final references in final order. Otherwise: every retrieved source, retrieval order."""
    sources = sorted(answer.sources.all(), key=lambda s: s.original_number)
    if answer.status != Answer.Status.DONE:
        return [reference_payload(s, s.original_number, redaction) for s in sources]
    final = sorted((s for s in sources if s.final_number is not None), key=lambda s: s.final_number or 0)
    return [reference_payload(s, s.final_number or 0, redaction) for s in final]


def answer_quotes(answer: Answer, redaction: Redaction = NOTHING_WITHHELD) -> dict[str, list[str]]:
    """Done: the native-citation quotes of each final source that has any, by final number (as a string)."""
    if answer.status != Answer.Status.DONE:
        return {}
    return {
        str(s.final_number): list(s.quotes)
        for s in sorted(answer.sources.all(), key=lambda s: s.final_number or 0)
        if s.final_number is not None and s.quotes and not redaction.withholds(s.document_id)
    }


def source_passages(answer: Answer) -> dict[int, list[tuple[int, int]]]:
    """Done: by final number, the spans of each source's excerpt that back the answer.

    Its native-citation quotes found in the excerpt, and the passages the support record
    names for the sentences that cite it; until the record is computed (it comes after
    `done`), the excerpt's sentence that best matches each sentence citing it (the record's
    own fallback, answers.support.passages), so the live page and the permalink mark the
    same passage from the start.
    """
    if answer.status != Answer.Status.DONE:
        return {}
    spans: dict[int, list[tuple[int, int]]] = {}
    excerpts: dict[int, str] = {}
    for source in answer.sources.all():
        if source.final_number is not None:
            spans[source.final_number] = quote_spans(source.excerpt, source.quotes or [])
            excerpts[source.final_number] = source.excerpt
    if answer.support is not None:
        for sentence in answer.support.get("sentences", []):
            for number, span in (sentence.get("passages") or {}).items():
                if int(number) in spans and len(span) == 2:
                    spans[int(number)].append((int(span[0]), int(span[1])))
    elif not answer.fallback:
        for sentence in split_sentences(answer.final_text):
            for number in sentence.cited:
                if number in excerpts and not spans[number]:
                    passage = best_passage(sentence, excerpts[number])
                    if passage is not None:
                        spans[number].append(passage)
    return {number: found for number, found in spans.items() if found}


def same_passages(references: list[dict[str, Any]]) -> dict[int, int]:
    """By number, the earlier source whose excerpt reads the same (the same passage under two titles):
    the Sources list shows it once, naming both."""
    first: dict[str, int] = {}
    same: dict[int, int] = {}
    for ref in references:
        if ref.get("withheld"):
            continue  # a source this reader may no longer read shows nothing to compare
        text = readable(ref["excerpt"])[0]
        if not text:
            continue
        if text in first:
            same[ref["number"]] = first[text]
        else:
            first[text] = ref["number"]
    return same


def answer_done_payload(*, answer: Answer, redaction: Redaction = NOTHING_WITHHELD) -> dict[str, Any]:
    """The `done` event: the finalized pair, equal to what GET /api/answers/<id>/ returns,
    plus `html`: the final text rendered and sanitized by the server, markers linked to their source
    (`#source-N`, or in a conversation's turn T > 1 `#turn-T-source-N`: rendering.source_anchor).
    `truncated`: the provider stopped at its length limit (the page says the answer was cut short).
    `quotes`: the native-citation quotes of the final sources, by final number (the page marks them).
    `declined`: no source reached the threshold; the text is ANSWERS_DECLINE_TEXT, `references` empty.
    """
    references = answer_references(answer, redaction)
    return {
        "text": answer.final_text,
        "references": references,
        "fallback": answer.fallback,
        "declined": answer.declined,
        "truncated": answer.truncated,
        "quotes": answer_quotes(answer, redaction),
        # By final number, the spans of each excerpt that back the answer, and the sources whose
        # excerpt is an earlier one's (the page marks the first, and names the second beside it).
        "passages": {str(n): [list(span) for span in spans] for n, spans in source_passages(answer).items()},
        "same_passage": {str(n): earlier for n, earlier in same_passages(references).items()},
        "html": answer_html(answer, reference_count=len(references)),
    }


def answer_html(answer: Answer, *, reference_count: int, turn: int | None = None) -> str:
    """A done answer's final text as sanitized HTML: stored when it was completed (answer.html), or
    rendered for an answer stored before the html was (`reference_count`: its final references).

    `turn`: whose source anchors its links point at (answers.rendering.source_anchor); the stored
    html has its own turn's, so another (a follow-up shown on its own permalink: 1) renders anew.
    """
    turn = answer.turn if turn is None else turn
    if not answer.final_text or (answer.html and turn == answer.turn):
        return answer.html
    return render_answer_html(
        answer.final_text,
        reference_count=reference_count,
        markers=final_markers(answer.markers) or None,
        turn=turn,
    )
