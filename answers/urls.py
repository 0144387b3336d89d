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
]
