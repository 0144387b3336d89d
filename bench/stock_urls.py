"""The project's routes, with an answer's event stream served by django-eventstream's own view (baseline)."""

from __future__ import annotations

import uuid

from django.http import HttpRequest, HttpResponseBase
from django.urls import include, path
from django_eventstream.views import events as eventstream_events

from answers.sse.channels import channel_for, stream_refusal


def stock_answer_events(request: HttpRequest, answer_id: uuid.UUID) -> HttpResponseBase:
    """The project's access check, then the package's view as shipped (a sync view; its stream is async)."""
    refused = stream_refusal(request, answer_id)
    if refused is not None:
        return refused
    response: HttpResponseBase = eventstream_events(request, channels=[channel_for(answer_id)])
    return response


urlpatterns = [
    path("answers/<uuid:answer_id>/events/", stock_answer_events),
    path("", include("project.urls")),
]
