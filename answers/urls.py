"""Page routes of the answers app."""

from django.urls import path

from answers import views
from answers.sse.views import answer_events

app_name = "answers"

urlpatterns = [
    path("", views.ask_page, name="ask-page"),
    path("ask/", views.ask_submit, name="ask"),
    path("answers/<uuid:answer_id>/", views.answer_permalink, name="permalink"),
    path("answers/<uuid:answer_id>/events/", answer_events, name="events"),
    path("answers/<uuid:answer_id>/answer.md", views.answer_markdown, name="markdown"),
    path("conversations/<uuid:conversation_id>/", views.conversation_permalink, name="conversation"),
    # An id in any other form (uppercase, no hyphens, braces...) is no answer's: the same 401/404 as
    # an unknown id, from the same checks (selectors.parse_answer_id, docs/reference/access.md).
    path("answers/<str:raw_id>/", views.unknown_answer_page),
    path("answers/<str:raw_id>/events/", views.unknown_answer_events),
]
