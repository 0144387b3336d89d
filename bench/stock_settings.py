"""The project's settings with django-eventstream as shipped: the baseline of the SSE benchmarks.

DjangoModelStorage (every event saved through the ORM, a trim query after
each) and the package's own events view behind the project's access check
(bench/stock_urls.py), whatever the project itself now uses. Selected in a
benchmark server's environment only: DJANGO_SETTINGS_MODULE=bench.stock_settings.
"""

from project.settings import *  # noqa: F403

EVENTSTREAM_STORAGE_CLASS = "django_eventstream.storage.DjangoModelStorage"
ROOT_URLCONF = "bench.stock_urls"
