"""Streams through a GRIP proxy (Pushpin, docs/pushpin.md): every source shown as its reader may see it.

Pushpin holds a stream and writes to it what is published on the answer's channel, the same bytes
to every reader; only the responses Django gives it (the stream's opening, the pages of a long
replay, and each recovery) are made for one reader. So:

- Those responses are built here per reader, as the direct stream is (answers.sse.stream): the
  stored events (or the finished answer's record, answers.sse.replay) with the sources this reader
  may no longer read shown as `{"number", "withheld": true}` (selectors.answer_redaction). The
  reader is the request's user for an opening, and the user named by django-eventstream's signed
  `es-meta` for a recovery or next page (Pushpin sends no credentials then); each is checked
  against the answer again (stream_access).
- An event that carries references (`references`, `cite`, `done`) is published whole only when
  every reader the answer can have may read every source it names, now: its asker (anyone, for an
  anonymous asker's answer) and staff. Otherwise the channel gets a stand-in with no content whose
  `prev-id` matches no event: Pushpin delivers nothing of it and asks Django to recover each stream
  from its last event, which is the per-reader response above. The channel never carries a source
  that some reader of it may not read.
"""

from __future__ import annotations

import json
import logging
import uuid
from typing import Any
from urllib.parse import quote

import django_grip  # type: ignore[import-untyped]
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.serializers.json import DjangoJSONEncoder
from django.http import HttpRequest, HttpResponseBadRequest, HttpResponseBase
from django_eventstream.eventrequest import EventRequest
from django_eventstream.eventresponse import EventResponse
from django_eventstream.eventstream import EventPermissionError
from django_eventstream.utils import add_default_headers, sse_error_response
from django_grip import publish as grip_publish
from gripcontrol import HttpStreamFormat  # type: ignore[import-untyped]

from answers import selectors
from answers.conf import conf
from answers.models import Answer
from answers.retrieval.access import ANONYMOUS, reader_for_id, redact_event, unreadable_documents
from answers.sse import replay, stream
from answers.sse.channels import (
    Admitted,
    answer_id_from_channel,
    channel_for,
    stream_access,
    stream_redaction,
)
from answers.sse.events import CITE, DONE, REFERENCES

logger = logging.getLogger(__name__)

REFERENCE_EVENTS = frozenset({REFERENCES, CITE, DONE})  # the events that carry references
# The `prev-id` of a stand-in: no event has it, so Pushpin never delivers the stand-in and
# recovers the stream from Django instead (its last id is always a stored event's number).
RECOVER = "recover"


def grip_response(request: HttpRequest, answer_id: uuid.UUID) -> HttpResponseBase:
    """The response to a request Pushpin forwarded (an opening, a recovery or a next page), for its reader.

    An opening's reader was authenticated and admitted by the view (request.user); a recovery's
    or a page's is the user its `es-meta` names, admitted here. Reads the database: call it from
    a worker thread.
    """
    channels = [channel_for(answer_id)]
    try:
        event_request = EventRequest(request, view_kwargs={"channels": channels})
    except EventRequest.ResumeNotAllowedError as exc:
        return _headed(HttpResponseBadRequest(f"Invalid request: {exc}.\n"), request)
    except EventRequest.GripError:
        return _headed(sse_error_response("internal-error", "Invalid internal request."), request)
    except get_user_model().DoesNotExist:
        return _forbidden(request, channels)  # es-meta names a user deleted since the stream opened
    except (EventRequest.Error, ValueError) as exc:
        return _headed(sse_error_response("bad-request", f"Invalid request: {exc}."), request)
    user = event_request.user
    linked = bool(request.GET.get("es-meta"))
    if linked and stream_access(answer_id=answer_id, user=user) is not selectors.Access.READ:
        return _forbidden(request, channels)
    reader = Admitted(frozenset(channels), stream_redaction(answer_id=answer_id, user=user))
    try:
        if linked:
            response = stream.read_events(event_request, reader)
        else:
            response = replay.first_read(event_request, reader, answer_id)
    except EventPermissionError:
        return _forbidden(request, channels)
    _redact(response, reader)
    response.user = user  # who the `es-meta` of the next link names (not the Admitted stand-in)
    return _headed(response.to_grip_response(request), request)


def _redact(response: EventResponse, reader: Admitted) -> None:
    """The read's events as this reader may see them (what answers.sse.stream writes for a direct one)."""
    if not reader.redaction:
        return
    for items in response.channel_items.values():
        for item in items:
            if item.type in REFERENCE_EVENTS and isinstance(item.data, str):
                visible = redact_event(item.type, json.loads(item.data), reader.redaction)
                item.data = json.dumps(visible, cls=DjangoJSONEncoder)


def _forbidden(request: HttpRequest, channels: list[str]) -> HttpResponseBase:
    text = f"Permission denied to channels: {', '.join(channels)}"
    return _headed(sse_error_response("forbidden", text, {"channels": channels}), request)


def _headed(response: HttpResponseBase, request: HttpRequest) -> HttpResponseBase:
    add_default_headers(response, request=request)
    return response


def proxy_configured() -> bool:
    return bool(conf.GRIP_URL.strip() or getattr(settings, "GRIP_PROXIES", None))


def publish(channel: str, event_type: str, data: str, event_id: int) -> None:
    """Publish a stored event (its payload as JSON text) to the GRIP proxy, or its stand-in (see above)."""
    if not proxy_configured():
        return
    if event_type in REFERENCE_EVENTS and not _whole_for_every_reader(channel, data):
        # A comment, should it ever be delivered; django-eventstream names GRIP channels so.
        stand_in = HttpStreamFormat(":\n\n")
        grip_publish(f"events-{quote(channel)}", stand_in, id=str(event_id), prev_id=RECOVER)
        return
    publish_whole(channel, event_type, data, event_id)


def publish_whole(channel: str, event_type: str, data: str, event_id: int) -> None:
    """django_eventstream.utils.publish_event for a stored event, without its cost on large events.

    The same message (the SSE text with `%` doubled and the `build-id` filter, which writes each
    stream's own id in place of `%I`), but `%` doubled by str.replace: the stock escape copies
    the text a character at a time in Python (0.2 s for a maximal answer's `done`), and the
    text is written as answers.sse.stream.encode_event writes it.
    """
    content = stream.encode_event(event_type.replace("%", "%%"), data.replace("%", "%%"), "%I")
    django_grip.publish(  # looked up when called, as django-eventstream's publish_event does
        f"events-{quote(channel)}",
        HttpStreamFormat(content, content_filters=["build-id"]),
        id=str(event_id),
        prev_id=str(event_id - 1),
        meta={},
    )


def _whole_for_every_reader(channel: str, data: str) -> bool:
    """Whether everyone who may read the channel's answer may read every source the event names, now."""
    ids = _document_ids(json.loads(data))
    if ids is None:
        return False  # a source whose document is gone: withheld from all but staff and QA
    if not ids:
        return True
    answer_id = answer_id_from_channel(channel)
    if answer_id is None:
        return False
    asker = Answer.objects.filter(id=answer_id).values_list("asker_id", "asked_signed_in").first()
    if asker is None:
        return False
    # Who reads an answer (selectors.answer_access): anyone when it was asked anonymously, else its
    # asker and staff, who read every source. The least of them decides.
    least = reader_for_id(asker[0]) if asker[1] else ANONYMOUS
    return not unreadable_documents(least, ids)


def _document_ids(payload: Any) -> set[int] | None:
    """The document ids of the references an event names (None: one has no document any more)."""
    if not isinstance(payload, dict):
        return set()
    references = payload.get("references")
    if not isinstance(references, list):
        references = [payload["reference"]] if isinstance(payload.get("reference"), dict) else []
    ids: set[int] = set()
    for reference in references:
        if not isinstance(reference, dict):
            continue
        if reference.get("document_id") is None:
            return None
        ids.add(int(reference["document_id"]))
    return ids
