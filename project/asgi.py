"""ASGI entry point: serves the pages, the API and the SSE streams.

`ServerLifecycle` (answers.server) reaps answers a dead process left in flight when the server
starts, and lets in-flight answers finish (or fails them) when it stops.
The GIL's switch interval is shortened so worker threads' CPU work (an answer's HTML, trail and
support record) holds up the event loop less (answers.server.shorten_switch_interval).
"""

import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")

from answers.handler import get_asgi_application

django_application = get_asgi_application()

from answers.server import ServerLifecycle, freeze_startup_heap, shorten_switch_interval  # noqa: E402  (needs the settings configured above)

application = ServerLifecycle(django_application)
freeze_startup_heap()
shorten_switch_interval()
