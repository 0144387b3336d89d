"""`manage.py ask "question" [--stream]`: answer on stdout, then the Sources list."""

from __future__ import annotations

from typing import Any

from asgiref.sync import async_to_sync, sync_to_async
from django.core.management.base import BaseCommand, CommandError, CommandParser

from answers import selectors
from answers.conf import conf
from answers.models import Answer, AnswerSource
from answers.pipeline import flow, lifecycle
from answers.pipeline.publisher import JSON
from answers.providers.base import Generation, Provider
from answers.providers.prompt import Prompt
from answers.providers.registry import get_provider


class _Echo:
    """Wraps a provider to print each piece as it arrives (the --stream view)."""

    def __init__(self, provider: Provider, write: Any) -> None:
        self.name = provider.name
        self.model = provider.model
        self.native_citations = provider.native_citations
        self._provider = provider
        self._write = write

    async def stream(self, prompt: Prompt, generation: Generation | None = None) -> Any:
        async for piece in self._provider.stream(prompt, generation):
            self._write(piece)
            yield piece


class Command(BaseCommand):
    help = "Answer a question over the site's content, with its Sources list."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("question")
        parser.add_argument("--stream", action="store_true", help="Print the raw text as it is written.")

    def handle(self, *args: Any, **options: Any) -> None:
        question = options["question"].strip()
        if not question:
            raise CommandError("The question is empty.")
        if len(question) > conf.MAX_QUESTION_LENGTH:
            raise CommandError(f"The question is longer than {conf.MAX_QUESTION_LENGTH} characters.")
        provider: Provider = get_provider()
        if options["stream"]:

            def write(piece: str) -> None:
                self.stdout.write(piece, ending="")
                self.stdout.flush()

            provider = _Echo(provider, write)
        answer = async_to_sync(self._ask)(question, provider)
        if options["stream"]:
            self.stdout.write("\n\n--- corrected text ---")
        self._print(answer)
        if answer.status == Answer.Status.FAILED:
            raise CommandError(f"The answer failed ({answer.error_kind}): {answer.error_message}")

    async def _ask(self, question: str, provider: Provider) -> Answer:
        answer = await flow.ask(question=question, asker_id=None, publisher=JSON, provider=provider)
        support = lifecycle.after_done(answer.id)
        if support is not None:
            await support  # its support record, before this loop (and the command) ends
        trail = await sync_to_async(selectors.answer_trail_get)(answer_id=answer.id)
        assert trail is not None
        return trail

    def _print(self, answer: Answer) -> None:
        if answer.status == Answer.Status.DONE:
            self.stdout.write(answer.final_text)
        self.stdout.write("\nSources:")
        for reference in selectors.answer_references(answer):
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
