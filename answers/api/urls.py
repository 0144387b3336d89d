"""REST API routes (mounted under /api/)."""

from django.urls import URLPattern

app_name = "api"

urlpatterns: list[URLPattern] = []
