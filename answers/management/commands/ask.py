"""`manage.py ask "question" [--stream] [--conversation ID]`: answer on stdout, then the Sources list."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from typing import Any

from asgiref.sync import async_to_sync, sync_to_async
from django.core.management.base import BaseCommand, CommandError, CommandParser

from answers import payloads, selectors
from answers.citations import LiveDisplay
from answers.conf import conf
from answers.conversations.services import Asker, ConversationRefused
from answers.models import Answer, AnswerSource, Conversation
from answers.pipeline import flow, lifecycle
from answers.pipeline.publisher import JSON, Publisher
from answers.questions import question_refusal
from answers.retrieval.types import RetrievedSource


class _PrintedDisplay:
    """One answer's deltas, printed as their display: the text as it will read once finalized
    (docs/citations.md, "The live display"), final numbers from the first marker."""

    def __init__(self, source_count: int, write: Callable[[str], None]) -> None:
        self._live = LiveDisplay(source_count, conf.MARKER_DIALECTS)
        self._write = write
        self._fed = 0
        self._closed = False

    async def add(self, piece: str) -> None:
        self._fed += len(piece)
        self._write(self._live.feed(piece).display)

    async def close(self, final_text: str | None = None) -> None:
        if self._closed:
            return
        self._closed = True
        if final_text is not None and len(final_text) > self._fed:
            self._write(self._live.feed(final_text[self._fed :]).display)
        self._write(self._live.close().display)


class _Printing:
    """The JSON path (generation within the command, no events), printing the display as it
    settles (--stream)."""

    delivery: str = JSON.delivery
    background: bool = False

    def __init__(self, write: Callable[[str], None]) -> None:
        self._write = write

    def references(self, answer_id: uuid.UUID, sources: Sequence[RetrievedSource]) -> None:
        pass

    def deltas(self, answer_id: uuid.UUID, sources: Sequence[RetrievedSource]) -> _PrintedDisplay:
        return _PrintedDisplay(len(sources), self._write)

    async def done(self, answer: Answer) -> None:
        pass

    async def error(self, answer_id: uuid.UUID, message: str) -> None:
        pass


class Command(BaseCommand):
    help = "Answer a question over the site's content, with its Sources list."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("question")
        parser.add_argument(
            "--stream",
            action="store_true",
            help="Print the text as it is written, as it will read once finalized (final numbers).",
        )
        parser.add_argument(
            "--conversation",
            metavar="ID",
            help="Ask a follow-up in this conversation (its id, as printed after an answer); "
            "without it the answer starts a new one.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        question = options["question"].strip()
        refusal = question_refusal(question)
        if refusal:
            raise CommandError(refusal)
        conversation = self._conversation(options["conversation"])
        publisher: Publisher = JSON
        if options["stream"]:

            def write(piece: str) -> None:
                if piece:
                    self.stdout.write(piece, ending="")
                    self.stdout.flush()

            publisher = _Printing(write)
        try:
            answer = async_to_sync(self._ask)(question, publisher, conversation)
        except ConversationRefused as exc:
            raise CommandError(exc.message) from None
        if options["stream"]:
            self.stdout.write("")  # the streamed text is the final text: end its line
        self._print(answer, text=not options["stream"])
        if answer.status == Answer.Status.FAILED:
            raise CommandError(f"The answer failed ({answer.error_kind}): {answer.error_message}")

    def _conversation(self, raw: str | None) -> Conversation | None:
        if raw is None:
            return None
        parsed = selectors.parse_answer_id(raw.strip())
        conversation = Conversation.objects.filter(id=parsed).first() if parsed else None
        if conversation is None:
            raise CommandError(f"No conversation has the id {raw!r}.")
        return conversation

    async def _ask(self, question: str, publisher: Publisher, conversation: Conversation | None) -> Answer:
        # A follow-up is asked on behalf of the conversation's asker (its answers keep their read rules).
        answer = await flow.ask(
            question=question,
            asker_id=conversation.asker_id if conversation else None,
            publisher=publisher,
            conversation_id=conversation.id if conversation else None,
            asker=Asker(operator=True) if conversation else None,
        )
        support = lifecycle.after_done(answer.id)
        if support is not None:
            await support  # its support record, before this loop (and the command) ends
        trail = await sync_to_async(selectors.answer_trail_get)(answer_id=answer.id)
        assert trail is not None
        return trail

    def _print(self, answer: Answer, *, text: bool) -> None:
        if text and answer.status == Answer.Status.DONE:
            self.stdout.write(answer.final_text)
        if answer.declined and answer.status == Answer.Status.DONE:
            self.stdout.write(
                f"\n(Declined: no retrieved source reached the relevance threshold, {answer.min_score:g}; "
                "the provider was not called.)"
            )
            self.stdout.write(f"\nAnswer id: {answer.id}")
            return
        self.stdout.write("\nSources:")
        for reference in payloads.answer_references(answer):
            url = f" <{reference['url']}>" if reference["url"] else ""
            self.stdout.write(f"  [{reference['number']}] {reference['title']}{url}")
        dropped = [s for s in answer.sources.all() if s.status == AnswerSource.Status.DROPPED]
        if dropped:
            self.stdout.write("Dropped (retrieved but not cited):")
            for source in dropped:
                self.stdout.write(f"  was [{source.original_number}] {source.title}")
        if answer.fallback:
            self.stdout.write("(The text cites no source: every retrieved source is listed.)")
        self.stdout.write(f"\nAnswer id: {answer.id}")
        if answer.conversation_id is not None:
            self.stdout.write(f"Conversation: {answer.conversation_id} (turn {answer.turn})")
            if answer.standalone_question:
                self.stdout.write(f"Standalone question: {answer.standalone_question}")
