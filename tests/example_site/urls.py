"""The example site's URLs: its admin, and the answers app's API and pages."""

from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/", include("answers.api.urls")),
    path("", include("answers.urls")),
]
