"""The answers' event-stream view: authenticate, decide access once, then stream (answers.sse.stream)."""

from __future__ import annotations

import uuid

from django.http import (
    HttpRequest,
    HttpResponseBadRequest,
    HttpResponseBase,
    JsonResponse,
    StreamingHttpResponse,
)
from django_eventstream.eventrequest import EventRequest
from django_eventstream.eventresponse import EventResponse
from django_eventstream.eventstream import EventPermissionError
from django_eventstream.utils import add_default_headers, sse_error_response
from django_eventstream.views import events as eventstream_events
from rest_framework.authentication import TokenAuthentication
from rest_framework.exceptions import AuthenticationFailed

from answers import selectors
from answers.sse import stream
from answers.sse.channels import Admitted, channel_for, stream_access


async def answer_events(request: HttpRequest, answer_id: uuid.UUID) -> HttpResponseBase:
    """SSE stream of one answer. Access is checked here, so a stranger gets a plain 401/403/404.

    Token auth (`Authorization: Token ...`) works as on the API. The stream itself
    is answers.sse.stream.stream; a request through a GRIP proxy (Pushpin) gets
    django-eventstream's immediate GRIP response instead.
    """
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


def _open_stream(
    request: HttpRequest, answer_id: uuid.UUID
) -> tuple[EventRequest, Admitted, EventResponse | None] | HttpResponseBase:
    """Authenticate, check access, parse the stream request and read the store once (one connection)."""
    grip = getattr(request, "grip", None)
    if grip is not None and grip.proxied and request.GET.get("es-meta"):
        # Pushpin catching a held stream up: it sends no credentials, only the `es-meta` token
        # django-eventstream signed (SECRET_KEY) when the stream opened; that names the user,
        # whose access to the channel django-eventstream asks the channel manager (stream_access).
        linked: HttpResponseBase = eventstream_events(request, channels=[channel_for(answer_id)])
        return linked
    if request.headers.get("Authorization", "").startswith("Token "):
        try:
            authenticated = TokenAuthentication().authenticate(request)  # type: ignore[arg-type]
        except AuthenticationFailed as exc:
            return JsonResponse({"detail": str(exc.detail)}, status=401)
        if authenticated is not None:
            request.user = authenticated[0]
    access = stream_access(answer_id=answer_id, user=request.user)
    if access is selectors.Access.SIGN_IN:
        return JsonResponse({"detail": "Sign in to read this answer."}, status=403)
    if access is selectors.Access.MISSING:
        return JsonResponse({"detail": "No answer has this id."}, status=404)
    channels = [channel_for(answer_id)]
    if grip is not None and grip.proxied:
        response: HttpResponseBase = eventstream_events(request, channels=channels)
        return response
    try:
        event_request = EventRequest(request, view_kwargs={"channels": channels})
    except EventRequest.ResumeNotAllowedError as exc:
        return HttpResponseBadRequest(f"Invalid request: {exc}.\n")
    except EventRequest.Error as exc:
        error: HttpResponseBase = sse_error_response("bad-request", f"Invalid request: {exc}.")
        return error
    reader = Admitted(frozenset(channels))
    try:
        first = stream.read_events(event_request, reader)
    except EventPermissionError:
        return event_request, reader, None  # the stream reports it in its own wire format
    return event_request, reader, first
