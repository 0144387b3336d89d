"""REST API routes (mounted under /api/)."""

from django.urls import path

from answers.api import documents, views

app_name = "api"

urlpatterns = [
    path("answers/", views.AnswerAskView.as_view(), name="answer-ask"),
    path("answers/<str:answer_id>/", views.AnswerDetailView.as_view(), name="answer-detail"),
    path("answers/<str:answer_id>/feedback/", views.AnswerFeedbackView.as_view(), name="answer-feedback"),
    path("answers/<str:answer_id>/trail/", views.AnswerTrailView.as_view(), name="answer-trail"),
    path(
        "conversations/<str:conversation_id>/",
        views.ConversationDetailView.as_view(),
        name="conversation-detail",
    ),
    path("documents/", documents.DocumentUpsertView.as_view(), name="document-upsert"),
    path("documents/<int:document_id>/", documents.DocumentDetailView.as_view(), name="document-detail"),
]
