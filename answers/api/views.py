"""Answers API views: validate, call the service, serialize. Nothing else."""

from __future__ import annotations

import re
import uuid
from typing import Any

from adrf.views import APIView as AsyncAPIView
from asgiref.sync import iscoroutinefunction, sync_to_async
from django.conf import settings
from django.http import HttpResponseBase
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.exceptions import NotFound, PermissionDenied, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView as SyncAPIView

from answers import selectors
from answers.api.exceptions import (
    AnswerDeletedMeanwhile,
    AnswerNotFinished,
    AskFailed,
    AskNotTaken,
    ConversationBusy,
    IdempotencyKeyReused,
    IdempotentRequestInFlight,
    ProviderFailed,
    ProviderTimedOut,
    ServerStopping,
)
from answers.api.parsers import JSONParser
from answers.api.permissions import CanViewTrail
from answers.api.schema import ErrorSerializer, ProviderErrorSerializer, errors
from answers.api.serializers import (
    AnswerOutputSerializer,
    AskAcceptedSerializer,
    AskInputSerializer,
    ConversationOutputSerializer,
    CurrentFeedbackSerializer,
    FeedbackInputSerializer,
    FeedbackOutputSerializer,
    TrailOutputSerializer,
)
from answers.api.throttles import (
    AskAnonThrottle,
    AskUserThrottle,
    FeedbackAnonThrottle,
    FeedbackUserThrottle,
)
from answers.conf import conf
from answers.conversations.selectors import conversation_get, conversation_turns
from answers.conversations.services import (
    Asker,
    ConversationNotFound,
    ConversationRefused,
    NotConversationOwner,
)
from answers.feedback import AnswerNotDone, FeedbackRefused, anonymous_client, feedback_create
from answers.models import Answer
from answers.pipeline import lifecycle
from answers.pipeline.idempotency import IdempotencyConflict, ask_once
from answers.pipeline.keys import Idempotency
from answers.pipeline.lifecycle import NotAdmitted, Refusal
from answers.pipeline.publisher import JSON
from answers.pipeline.store import AnswerDeleted
from answers.sse.channels import events_url
from answers.sse.publish import SSE

ANSWER_ID = OpenApiParameter(
    "answer_id",
    OpenApiTypes.UUID,
    OpenApiParameter.PATH,
    description=(
        "The answer's id, as `POST` returned it (lowercase, with hyphens: any other spelling of it is "
        "answered as an unknown id, `404`)."
    ),
)


IDEMPOTENCY_HEADER = "Idempotency-Key"
_KEY = re.compile(r"[\x20-\x7e]{1,255}")


class APIView(AsyncAPIView):  # type: ignore[misc]
    """adrf's async APIView, minus a round trip to the event loop per request."""

    def check_throttles(self, request: Request) -> None:
        # adrf always hands async throttles to the event loop (async_to_sync from the
        # worker thread running initial()), even when there are none; these are all sync.
        if any(iscoroutinefunction(throttle.allow_request) for throttle in self.get_throttles()):
            super().check_throttles(request)
        else:
            SyncAPIView.check_throttles(self, request)


async def _serialized(serializer_class: Any, instance: Any, **kwargs: Any) -> Any:
    """`serializer_class(instance, **kwargs).data`, computed in a worker thread: an answer's (or its
    trail's) fields are thousands of objects for a long or flooded answer, and serializing them on
    the event loop stalls every other request and stream of the process (bench/NOTES_by_hand.md)."""
    return await sync_to_async(lambda: serializer_class(instance, **kwargs).data)()


def _parse_id(raw: str) -> uuid.UUID:
    """The id in its one form (selectors.parse_answer_id); any other spelling is an unknown answer."""
    parsed = selectors.parse_answer_id(raw)
    if parsed is None:
        raise NotFound("No answer has this id.")
    return parsed


class AnswerAskView(APIView):
    """POST /api/answers/: ask a question (JSON path, or SSE with `stream: true`)."""

    parser_classes = [JSONParser]

    def finalize_response(
        self, request: Request, response: HttpResponseBase, *args: Any, **kwargs: Any
    ) -> HttpResponseBase:
        finalized: HttpResponseBase = super().finalize_response(request, response, *args, **kwargs)
        _send_new_session_cookie(request, finalized)
        return finalized

    def get_throttles(self) -> list[Any]:
        if self.request.method == "POST":
            return [AskAnonThrottle(), AskUserThrottle()]
        return []

    @extend_schema(
        request=AskInputSerializer,
        parameters=[
            OpenApiParameter(
                IDEMPOTENCY_HEADER,
                {"type": "string", "pattern": "^[\\x20-\\x7e]{1,255}$"},
                OpenApiParameter.HEADER,
                description=(
                    "Optional, 1-255 printable ASCII characters, unique per request you mean. A retry "
                    "with the same key (and the same body) gets the first attempt's answer, with "
                    "`Idempotent-Replayed: true`, instead of a second answer; the JSON path waits for "
                    "it to finish. Keys are scoped to the signed-in user; an anonymous client's to "
                    "its session (the `sessionid` cookie, set on its first keyed request: send it "
                    "back with retries)."
                ),
            )
        ],
        responses={
            201: AnswerOutputSerializer,
            202: AskAcceptedSerializer,
            **errors(400, 401, 415, 429),
            403: OpenApiResponse(
                ErrorSerializer,
                description="`conversation` names a conversation you may read but did not start: only its "
                "asker (or, anonymous, the same session) adds turns.",
            ),
            404: OpenApiResponse(
                ErrorSerializer, description="`conversation` names no conversation you may read."
            ),
            409: OpenApiResponse(
                ProviderErrorSerializer,
                description="The first request with this Idempotency-Key is still being answered; or the "
                "conversation's last turn is still pending or streaming, or it holds "
                "ANSWERS_CONVERSATION_TURNS turns already.",
            ),
            422: OpenApiResponse(
                ProviderErrorSerializer,
                description="This Idempotency-Key was used for a different question or delivery.",
            ),
            502: OpenApiResponse(
                ProviderErrorSerializer, description="The provider failed; the answer is stored as failed."
            ),
            504: OpenApiResponse(
                ProviderErrorSerializer, description="The provider timed out; the answer is stored as failed."
            ),
            503: OpenApiResponse(
                ProviderErrorSerializer,
                description="The server stopped before the answer was finished; it is stored as failed "
                "(with its `id`). Or, with no `id`, the question was not taken, on either path: the server "
                "is stopping (`server_stopping`) or answering ANSWERS_MAX_GENERATING questions already "
                "(`server_busy`); nothing was stored, ask again after `Retry-After` seconds.",
            ),
        },
    )
    async def post(self, request: Request) -> Response:
        data = AskInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        stream = data.validated_data["stream"]
        user = request.user
        asker_id = user.pk if user.is_authenticated else None
        key = _idempotency_key(request)
        try:
            # A question the process will not take is refused before its asker's session is made.
            lifecycle.check_admission(limit=conf.MAX_GENERATING)
            # An anonymous asker's session owns the conversation it starts
            # (docs/explanation/conversations.md).
            session_key = None if asker_id is not None else await _anonymous_session(request)
            asked = await ask_once(
                question=data.validated_data["question"],
                asker_id=asker_id,
                publisher=SSE if stream else JSON,
                idempotency=await _idempotency(request, key, asker_id) if key else None,
                conversation_id=data.validated_data["conversation"],
                asker=Asker.of(user, session_key),
            )
        except IdempotencyConflict as exc:
            raise IdempotencyKeyReused(answer_id=exc.answer_id) from None
        except AnswerDeleted as exc:
            raise AnswerDeletedMeanwhile(answer_id=exc.answer_id) from None
        except ConversationRefused as exc:
            raise conversation_error(exc) from None
        except NotAdmitted as exc:
            raise AskNotTaken(exc.message, code=_REFUSAL_CODES[exc.reason], wait=exc.retry_after) from None
        answer = asked.answer
        headers = {"Idempotent-Replayed": "true"} if asked.replayed else {}
        if stream:
            accepted = {
                "id": answer.id,
                "status": answer.status,
                "conversation": answer.conversation_id,
                "turn": answer.turn,
                "url": request.build_absolute_uri(f"/api/answers/{answer.id}/"),
                "events_url": request.build_absolute_uri(events_url(answer.id)),
            }
            return Response(
                AskAcceptedSerializer(accepted).data, status=status.HTTP_202_ACCEPTED, headers=headers
            )
        if answer.status == Answer.Status.FAILED:
            error_class = _FAILURES.get(answer.error_kind, ProviderFailed)
            raise error_class(answer.error_message or None, answer_id=answer.id, headers=headers)
        if answer.status != Answer.Status.DONE:
            raise IdempotentRequestInFlight(answer_id=answer.id)
        # A replay may come after the access of its sources changed: read as GET shows it.
        context = (
            {"redactions": await sync_to_async(selectors.answer_redactions)(answers=[answer], user=user)}
            if asked.replayed
            else {}
        )
        data = await _serialized(AnswerOutputSerializer, answer, context=context)
        return Response(data, status=status.HTTP_201_CREATED, headers=headers)


# A question not taken, as the API names why (`code`); the same on both paths.
_REFUSAL_CODES = {Refusal.STOPPING: "server_stopping", Refusal.BUSY: "server_busy"}

# How a failed answer reads on the JSON path, by its error kind; any other kind is a 502.
_FAILURES: dict[str, type[AskFailed]] = {
    Answer.ErrorKind.TIMEOUT: ProviderTimedOut,
    Answer.ErrorKind.SHUTDOWN: ServerStopping,
}


def _idempotency_key(request: Request) -> str | None:
    key = request.headers.get(IDEMPOTENCY_HEADER)
    if key is None:
        return None
    if not _KEY.fullmatch(key):
        raise ValidationError({IDEMPOTENCY_HEADER: ["Must be 1 to 255 printable ASCII characters."]})
    return key


async def _idempotency(request: Request, key: str, asker_id: int | None) -> Idempotency:
    """The key in its asker's scope: the user's, or for an anonymous client its session's.

    An anonymous client without a session gets one (its cookie comes with the response): its
    retries replay only while it sends that cookie back; a client that keeps no cookies gets a
    fresh scope each time (no replay, and no one else's answer).
    """
    if asker_id is not None:
        return Idempotency.for_user(key, asker_id)
    return Idempotency.for_session(key, await _anonymous_session(request))


async def _anonymous_session(request: Request) -> str:
    """The anonymous client's session key, its session created (and its cookie sent) if it has none.

    A cookie naming no stored session is no credential (any client could make one up and
    share it): only a session this server created scopes keys and owns conversations. (Session
    authentication has usually loaded the session already, which forgets such a key; this holds
    without it too.)
    """
    session = request.session
    if session.session_key is None or not await session.aexists(session.session_key):
        await session.acreate()
        request._request.answers_new_session = True  # type: ignore[attr-defined]
    assert session.session_key is not None
    return session.session_key


def conversation_error(exc: ConversationRefused) -> Exception:
    """A refused follow-up as the API answers it: 404, 403 or 409 (docs/explanation/conversations.md)."""
    if isinstance(exc, ConversationNotFound):
        return NotFound(exc.message)
    if isinstance(exc, NotConversationOwner):
        return PermissionDenied(exc.message)
    return ConversationBusy(exc.message, code=exc.code)


def _send_new_session_cookie(request: Request, response: HttpResponseBase) -> None:
    """The cookie of a session _idempotency() created, on a 5xx too (502, 504: a retry is likely).

    Django's session middleware sets the cookie on responses under 500 only; the session is
    already stored here, and without its cookie the client's retry could not be replayed.
    """
    if response.status_code < 500 or not getattr(request._request, "answers_new_session", False):
        return
    session = request.session
    assert session.session_key is not None
    max_age = None if session.get_expire_at_browser_close() else session.get_expiry_age()
    response.set_cookie(
        settings.SESSION_COOKIE_NAME,
        session.session_key,
        max_age=max_age,
        domain=settings.SESSION_COOKIE_DOMAIN,
        path=settings.SESSION_COOKIE_PATH,
        secure=settings.SESSION_COOKIE_SECURE,
        httponly=settings.SESSION_COOKIE_HTTPONLY,
        samesite=settings.SESSION_COOKIE_SAMESITE,
    )


class AnswerDetailView(APIView):
    """GET /api/answers/<id>/: the answer object (the finalized pair once done)."""

    @extend_schema(parameters=[ANSWER_ID], responses={200: AnswerOutputSerializer, **errors(401, 404)})
    async def get(self, request: Request, answer_id: str) -> Response:
        parsed = _parse_id(answer_id)
        answer = await sync_to_async(selectors.answer_get)(answer_id=parsed, user=request.user)
        if answer is None:
            raise NotFound("No answer has this id.")
        redactions = await sync_to_async(selectors.answer_redactions)(answers=[answer], user=request.user)
        return Response(await _serialized(AnswerOutputSerializer, answer, context={"redactions": redactions}))


class AnswerTrailView(APIView):
    """GET /api/answers/<id>/trail/: the whole citation trail, for QA reviewers (may_read_trails)."""

    permission_classes = [CanViewTrail]

    @extend_schema(parameters=[ANSWER_ID], responses={200: TrailOutputSerializer, **errors(401, 403, 404)})
    async def get(self, request: Request, answer_id: str) -> Response:
        answer = await sync_to_async(selectors.answer_trail_get)(answer_id=_parse_id(answer_id))
        if answer is None:
            raise NotFound("No answer has this id.")
        return Response(await _serialized(TrailOutputSerializer, answer))


class AnswerFeedbackView(APIView):
    """POST /api/answers/<id>/feedback/: a reader's verdict on a done answer, maybe flagging a source
    (replacing the reader's earlier one); GET: the reader's current feedback."""

    parser_classes = [JSONParser]
    throttle_classes = [FeedbackAnonThrottle, FeedbackUserThrottle]

    def get_throttles(self) -> list[Any]:
        # Reading back one's own feedback is not sending it: only POST counts against the rates.
        return super().get_throttles() if self.request.method == "POST" else []

    @extend_schema(parameters=[ANSWER_ID], responses={200: CurrentFeedbackSerializer, **errors(401, 404)})
    async def get(self, request: Request, answer_id: str) -> Response:
        """The feedback this reader sent on the answer as it stands (a later verdict replaced the earlier)."""
        answer = await sync_to_async(selectors.answer_get)(answer_id=_parse_id(answer_id), user=request.user)
        if answer is None:
            raise NotFound("No answer has this id.")
        current = await sync_to_async(selectors.feedback_current)(
            answer=answer,
            user=request.user,
            client=anonymous_client(FeedbackAnonThrottle().get_ident(request)),
        )
        return Response(CurrentFeedbackSerializer(current).data)

    @extend_schema(
        parameters=[ANSWER_ID],
        request=FeedbackInputSerializer,
        responses={
            201: FeedbackOutputSerializer,
            **errors(400, 401, 403, 404, 415),
            409: OpenApiResponse(ErrorSerializer, description="The answer is not done (yet, or ever)."),
            429: OpenApiResponse(
                ErrorSerializer,
                description="Too much feedback in a short time; `Retry-After` says when to send again.",
            ),
        },
    )
    async def post(self, request: Request, answer_id: str) -> Response:
        # The answer's own read rules first: whoever may not read it learns nothing, whatever the body.
        answer = await sync_to_async(selectors.answer_get)(answer_id=_parse_id(answer_id), user=request.user)
        if answer is None:
            raise NotFound("No answer has this id.")
        data = FeedbackInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            feedback = await sync_to_async(feedback_create)(
                answer=answer,
                verdict=data.validated_data["verdict"],
                source_number=data.validated_data["source"],
                comment=data.validated_data["comment"],
                user=request.user,
                client=anonymous_client(FeedbackAnonThrottle().get_ident(request)),
            )
        except AnswerNotDone as exc:
            raise AnswerNotFinished(exc.message) from None
        except FeedbackRefused as exc:
            raise ValidationError({exc.field or "non_field_errors": [exc.message]}) from None
        created = {
            "id": feedback.pk,
            "verdict": feedback.verdict,
            "source": feedback.source.final_number if feedback.source else None,
            "created_at": feedback.created_at,
        }
        return Response(FeedbackOutputSerializer(created).data, status=status.HTTP_201_CREATED)


CONVERSATION_ID = OpenApiParameter(
    "conversation_id",
    OpenApiTypes.UUID,
    OpenApiParameter.PATH,
    description="The conversation's id, as the answer object's `conversation` gives it (lowercase, hyphens).",
)


class ConversationDetailView(APIView):
    """GET /api/conversations/<id>/: the conversation's answers in turn order."""

    @extend_schema(
        parameters=[CONVERSATION_ID], responses={200: ConversationOutputSerializer, **errors(401, 404)}
    )
    async def get(self, request: Request, conversation_id: str) -> Response:
        parsed = selectors.parse_answer_id(conversation_id)
        conversation = (
            await sync_to_async(conversation_get)(conversation_id=parsed, user=request.user)
            if parsed
            else None
        )
        if conversation is None:
            raise NotFound("No conversation has this id.")
        turns = conversation_turns(conversation)
        # Each turn as GET /api/answers/<id>/ shows it: the sources this reader may no longer read withheld.
        redactions = await sync_to_async(selectors.answer_redactions)(answers=turns, user=request.user)
        payload = {"id": conversation.id, "created_at": conversation.created_at, "answers": turns}
        return Response(
            await _serialized(ConversationOutputSerializer, payload, context={"redactions": redactions})
        )
