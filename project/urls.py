"""Root URLs: the page, the API, its schema and docs, admin and the health probe."""

from django.contrib import admin
from django.urls import include, path

from answers.api.schema_views import DocsView, SchemaView
from answers.metrics import metrics_view
from answers.views import favicon, healthz

# Under /api/ even Django's own errors (no such URL, a crash) answer in JSON (with DEBUG off).
handler400 = "answers.api.errors.bad_request"
handler403 = "answers.api.errors.permission_denied"
handler404 = "answers.api.errors.not_found"
handler500 = "answers.api.errors.server_error"

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("favicon.ico", favicon, name="favicon"),
    path("metrics", metrics_view, name="metrics"),
    path("admin/", admin.site.urls),
    path("api/schema/", SchemaView.as_view(), name="schema"),
    # The split view serves Swagger UI's start-up script from its own URL and the template has
    # no inline style: nothing the CSP would block.
    path(
        "api/docs/",
        DocsView.as_view(url_name="schema", template_name="api/swagger_ui.html"),
        name="api-docs",
    ),
    path("api/", include("answers.api.urls")),
    path("", include("answers.urls")),
]
