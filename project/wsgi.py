"""WSGI entry point, for tools that need one; SSE streaming needs ASGI (project.asgi)."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")

application = get_wsgi_application()
