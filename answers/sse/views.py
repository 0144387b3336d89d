"""The answers' event-stream view: authenticate, decide access once, then stream (answers.sse.stream)."""

from __future__ import annotations

import re
import uuid

import jwt
from django.conf import settings
from django.http import (
    HttpRequest,
    HttpResponseBase,
    JsonResponse,
    StreamingHttpResponse,
)
from django_eventstream.eventrequest import EventRequest
from django_eventstream.eventresponse import EventResponse
from django_eventstream.eventstream import EventPermissionError
from django_eventstream.utils import add_default_headers, sse_error_response

from answers.sse import replay, stream
from answers.sse.channels import Admitted, channel_for, stream_redaction, stream_refusal
from answers.sse.grip import grip_response


async def answer_events(request: HttpRequest, answer_id: uuid.UUID) -> HttpResponseBase:
    """SSE stream of one answer. Access is checked here, so a stranger gets a plain JSON 401/404.

    Who asks is decided as on the API (answers.auth: a token first, else the session). The stream itself
    is answers.sse.stream.stream; a request through a GRIP proxy (Pushpin) gets an immediate
    GRIP response made for its reader instead (answers.sse.grip).
    """
    refused = method_refusal(request)
    if refused is not None:
        return refused
    listener = stream.listen({channel_for(answer_id)})
    try:
        opened = await stream.run_db(_open_stream, request, answer_id)
    except BaseException:
        stream.unlisten(listener)
        raise
    if isinstance(opened, HttpResponseBase):
        stream.unlisten(listener)
        return opened
    event_request, reader, first = opened
    response = StreamingHttpResponse(
        stream.stream(event_request, listener, reader, first), content_type="text/event-stream"
    )
    add_default_headers(response, request=request)
    return response


def method_refusal(request: HttpRequest) -> HttpResponseBase | None:
    """A JSON `405` for any method but GET: only GET opens a stream (not OPTIONS, TRACE, HEAD...)."""
    if request.method == "GET":
        return None
    refused = JsonResponse(
        {"detail": f'Method "{request.method}" not allowed: an event stream is read with GET.'}, status=405
    )
    refused["Allow"] = "GET"
    return refused


def _open_stream(
    request: HttpRequest, answer_id: uuid.UUID
) -> tuple[EventRequest, Admitted, EventResponse | None] | HttpResponseBase:
    """Authenticate, check access, parse the stream request and read the store once (one connection)."""
    grip_request = getattr(request, "grip", None)
    proxied = grip_request is not None and grip_request.proxied
    problem = resume_problem(request, proxied=proxied)
    if problem is not None:
        return JsonResponse({"detail": problem}, status=400)
    if proxied and request.GET.get("es-meta"):
        # Pushpin recovering a held stream, or paging its replay: it sends no credentials, only
        # the `es-meta` token django-eventstream signed (SECRET_KEY) when the stream opened, which
        # names the user; answers.sse.grip checks that user's access and redacts for them.
        return grip_response(request, answer_id)
    refused = stream_refusal(request, answer_id)
    if refused is not None:
        return refused
    if proxied:
        return grip_response(request, answer_id)
    channels = [channel_for(answer_id)]
    try:
        event_request = EventRequest(request, view_kwargs={"channels": channels})
    except EventRequest.ResumeNotAllowedError as exc:
        return JsonResponse({"detail": f"Invalid request: {exc}."}, status=400)
    except EventRequest.Error as exc:
        error: HttpResponseBase = sse_error_response("bad-request", f"Invalid request: {exc}.")
        return error
    reader = Admitted(frozenset(channels), stream_redaction(answer_id=answer_id, user=request.user))
    try:
        first = replay.first_read(event_request, reader, answer_id)
    except EventPermissionError:
        return event_request, reader, None  # the stream reports it in its own wire format
    return event_request, reader, first


# One `channel:id` pair of a Last-Event-ID, as answers.sse.stream writes them: the id is the
# number of the last event received (ASCII digits; django-eventstream counts from 1).
_LAST_ID_PART = re.compile(r"[^:,]+:[0-9]{1,18}")


def resume_problem(request: HttpRequest, *, proxied: bool) -> str | None:
    """Why the request's resume parameters cannot be honoured (a 400), or None when they can.

    A client resumes with `Last-Event-ID` (or `?lastEventId=`), as the event ids it received
    say: `answer-<id>:<n>`. `es-meta` and `recover` are Pushpin's, between it and this app
    (answers.sse through GRIP); from anyone else they are refused, as is an `es-meta` whose
    signature does not hold. Read as django-eventstream reads them (the header first, else
    the last non-empty `lastEventId`), so what passes here parses there.
    """
    if not proxied:
        for name in ("es-meta", "recover"):
            if name in request.GET:
                return (
                    f"`{name}` is for the GRIP proxy only; a client resumes a stream with "
                    "Last-Event-ID (or ?lastEventId=) set to the last event id it received."
                )
    elif request.GET.get("es-meta"):
        try:
            jwt.decode(
                request.GET["es-meta"],
                settings.SECRET_KEY.encode(),
                algorithms=["HS256"],
                options={"require": ["exp"]},
            )
        except jwt.InvalidTokenError:
            return "`es-meta` is not a valid (or no longer a valid) stream token."
    last_event_id = request.META.get("HTTP_LAST_EVENT_ID") or next(
        (value for value in reversed(request.GET.getlist("lastEventId")) if value), ""
    )
    if not last_event_id or last_event_id == "error":  # "error": django-eventstream's own 400
        return None
    if not all(_LAST_ID_PART.fullmatch(part) for part in last_event_id.split(",")):
        return (
            "Last-Event-ID (or lastEventId) must be the id of an event received, "
            "like answer-<id>:<n> with n a whole number; leave it out to replay from the start."
        )
    return None
