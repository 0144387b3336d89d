"""Who may continue a conversation, and the next turn's plan: its number, history and standalone question.

The rules (docs/explanation/conversations.md): a conversation is read by whoever may read its answers;
only whoever started it (the signed-in asker, or for an anonymous one the same session) adds a
turn; a turn asked while the previous one is pending or streaming, or past
ANSWERS_CONVERSATION_TURNS, is refused. The checks run again, under a lock on the
conversation, when the turn is stored (turn_claim): two follow-ups sent at once cannot both
pass.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Max, Prefetch, QuerySet

from answers import db
from answers.citations.trail import final_markers
from answers.conf import conf
from answers.conversations.history import History, PastTurn, assemble, marker_free
from answers.conversations.standalone import standalone
from answers.models import Answer, AnswerSource, Conversation
from answers.questions import MAX_LENGTH as MAX_QUESTION_LENGTH
from answers.selectors import documents_redaction

IN_FLIGHT = (Answer.Status.PENDING, Answer.Status.STREAMING)


class ConversationRefused(Exception):
    """A follow-up that may not be asked; `code` names why (the API maps it to its status)."""

    code = "refused"
    message = "This conversation cannot take a follow-up."

    def __init__(self, message: str | None = None) -> None:
        super().__init__(message or self.message)
        self.message = message or self.message


class ConversationNotFound(ConversationRefused):
    code = "not_found"
    message = "No conversation has this id."


class NotConversationOwner(ConversationRefused):
    code = "not_owner"
    message = "Only whoever started this conversation may add to it."


class TurnInFlight(ConversationRefused):
    code = "turn_in_flight"
    message = "The conversation's last answer is still being written: wait for it, then ask again."


class TurnOvertaken(ConversationRefused):
    code = "turn_overtaken"
    message = (
        "Another turn was added to this conversation while this follow-up was being asked: "
        "read it, then ask again."
    )


class TurnLimitReached(ConversationRefused):
    code = "turn_limit"

    def __init__(self, limit: int) -> None:
        super().__init__(f"This conversation has reached its limit of {limit} turns: start a new one.")


@dataclass(frozen=True)
class Asker:
    """Who asks: the signed-in user (and whether staff), and for anyone their session, if they have one."""

    user_id: int | None = None
    staff: bool = False
    session_key: str = ""
    # The command line (`ask --conversation ID`): whoever runs it speaks for the conversation's owner.
    operator: bool = False

    @classmethod
    def of(cls, user: Any, session_key: str | None = None) -> Asker:
        signed_in = bool(user is not None and user.is_authenticated)
        return cls(
            user_id=user.pk if signed_in else None,
            staff=bool(signed_in and user.is_staff),
            session_key=session_key or "",
        )

    def may_read(self, conversation: Conversation) -> bool:
        """The answers' read rule (selectors._may_read): anonymous by anyone, else the asker and staff.

        A deleted user's conversation (started signed in, no asker left) is staff's only.
        """
        owner = conversation.asker_id
        return (
            not conversation.started_signed_in
            or self.staff
            or self.operator
            or (self.user_id is not None and self.user_id == owner)
        )

    def owns(self, conversation: Conversation) -> bool:
        if conversation.started_signed_in:
            # Nobody speaks for a deleted user (the command line neither: its turn would be anonymous).
            owner = conversation.asker_id
            return owner is not None and (self.operator or self.user_id == owner)
        if self.operator:
            return True
        return (
            self.user_id is None and bool(self.session_key) and self.session_key == conversation.session_key
        )


def reader_conversations() -> QuerySet[Conversation, Any]:
    """Conversations readers asked: not those of an evaluation run's answers (each starts its own),
    which no reader sees nor continues."""
    return Conversation.objects.exclude(turns__origin=Answer.Origin.EVALUATION).values("pk")


@dataclass(frozen=True)
class TurnPlan:
    """The turn an answer will be: in which conversation (None: a new one), and for a follow-up how
    its retrieval question was made and what history its prompt carries."""

    conversation_id: uuid.UUID | None = None
    turn: int = 1
    asker: Asker = field(default_factory=Asker)
    standalone_question: str = ""
    rewrite: dict[str, Any] | None = None
    history: History | None = None

    @property
    def follow_up(self) -> bool:
        return self.conversation_id is not None

    def prompt_history(self) -> tuple[tuple[str, str], ...]:
        return tuple((t.question, t.text) for t in self.history.turns) if self.history else ()


@dataclass(frozen=True)
class _Context:
    turn: int
    history: History
    previous_question: str
    # The previous turn's question as written, when it was a follow-up (heuristic's argument).
    previous_follow_up: str = ""


def _context(*, conversation_id: uuid.UUID, asker: Asker) -> _Context:
    """The checks, then what the next turn needs: its number, the history within budget, the last question."""
    conversation = (
        Conversation.objects.select_related("asker")
        .filter(id=conversation_id, pk__in=reader_conversations())
        .first()
    )
    if conversation is None or not asker.may_read(conversation):
        raise ConversationNotFound
    if not asker.owns(conversation):
        raise NotConversationOwner
    cited = Prefetch(
        "sources",
        queryset=AnswerSource.objects.filter(final_number__isnull=False).only("answer_id", "document_id"),
        to_attr="cited",
    )
    turns = list(
        Answer.objects.filter(conversation=conversation)
        .order_by("turn")
        .only("turn", "status", "question", "standalone_question", "final_text", "markers")
        .prefetch_related(cited)
    )
    _check_next(turns[-1].status if turns else None, len(turns))
    last = turns[-1] if turns else None
    past = _past_turns(turns, reader=conversation.asker)
    return _Context(
        turn=(last.turn if last else 0) + 1,
        history=assemble(past, budget=conf.CONVERSATION_HISTORY_CHARS),
        previous_question=(last.standalone_question or last.question) if last else "",
        previous_follow_up=last.question if last and last.standalone_question else "",
    )


def _past_turns(turns: Sequence[Answer], *, reader: Any) -> list[PastTurn]:
    """The done turns as the prompt carries them, for `reader` (whose the next turn is: the
    conversation's asker). A turn that cited a source `reader` may no longer read (its access
    changed, or it was deleted) enters as its question alone: its text may quote that source."""
    done = [t for t in turns if t.status == Answer.Status.DONE]
    cited = {t.turn: [s.document_id for s in getattr(t, "cited", [])] for t in done}
    redaction = documents_redaction(
        document_ids={d for ids in cited.values() for d in ids if d is not None}, user=reader
    )
    return [
        PastTurn(
            turn=t.turn,
            question=t.question,
            text=""
            if any(redaction.withholds(d) for d in cited[t.turn])
            else marker_free(t.final_text, final_markers(t.markers)),
        )
        for t in done
    ]


def _check_next(last_status: str | None, count: int) -> None:
    if last_status in IN_FLIGHT:
        raise TurnInFlight
    if count >= conf.CONVERSATION_TURNS:
        raise TurnLimitReached(conf.CONVERSATION_TURNS)


async def turn_plan(
    *, question: str, conversation_id: uuid.UUID | None, asker: Asker, provider: Any
) -> TurnPlan:
    """A first turn's plan, or a follow-up's: checked, with its history and standalone question.

    Raises a ConversationRefused for a follow-up that may not be asked.
    """
    if conversation_id is None:
        return TurnPlan(asker=asker)
    context = await db.run_db(
        _context, gate="pipeline", size=conf.PIPELINE_DB_WORKERS, conversation_id=conversation_id, asker=asker
    )
    made = await standalone(
        provider=provider,
        history=context.history,
        follow_up=question,
        previous_question=context.previous_question,
        max_length=MAX_QUESTION_LENGTH,
        previous_follow_up=context.previous_follow_up,
    )
    return TurnPlan(
        conversation_id=conversation_id,
        turn=context.turn,
        asker=asker,
        standalone_question=made.question,
        rewrite=made.record(),
        history=context.history,
    )


def turn_claim(plan: TurnPlan, *, asker_id: int | None) -> tuple[uuid.UUID, int]:
    """Inside the transaction that stores the answer: its conversation (created for a first turn) and
    turn number, the follow-up checks made again under a lock on the conversation."""
    if plan.conversation_id is None:
        conversation = Conversation.objects.create(
            asker_id=asker_id,
            started_signed_in=asker_id is not None,
            session_key="" if asker_id is not None else plan.asker.session_key,
        )
        return conversation.id, 1
    # The row lock orders concurrent follow-ups on PostgreSQL (SQLite writes one at a time anyway);
    # the unique (conversation, turn) constraint is the last word either way.
    Conversation.objects.select_for_update().filter(id=plan.conversation_id).first()
    turns = Answer.objects.filter(conversation_id=plan.conversation_id)
    last = turns.order_by("-turn").values("turn", "status").first()
    _check_next(last["status"] if last else None, turns.count())
    # The history, read again under the lock that gives the turn its number: the turns done now must
    # be those its prompts were made from (sent or cut), else a turn finished meanwhile would be
    # missing from them (two follow-ups planned at once, the first done before the second is stored).
    if plan.history is not None:
        done = set(turns.filter(status=Answer.Status.DONE).values_list("turn", flat=True))
        if done != {*(turn.turn for turn in plan.history.turns), *plan.history.cut}:
            raise TurnOvertaken
    latest = turns.aggregate(latest=Max("turn"))["latest"] or 0
    return plan.conversation_id, latest + 1
