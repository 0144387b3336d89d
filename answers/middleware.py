"""WhiteNoise with an async entry point, so the middleware chain stays async under ASGI.

WhiteNoise's own middleware is sync-only; one sync middleware makes Django run
every async view through async_to_sync, holding a thread for the whole of a
generation. Static files are answered the same way; everything else is awaited.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from asgiref.sync import markcoroutinefunction
from django.http import HttpRequest, HttpResponseBase
from whitenoise.middleware import WhiteNoiseMiddleware


class AsyncWhiteNoiseMiddleware(WhiteNoiseMiddleware):  # type: ignore[misc]
    sync_capable = False
    async_capable = True

    def __init__(
        self, get_response: Callable[[HttpRequest], Awaitable[HttpResponseBase]], **kwargs: Any
    ) -> None:
        super().__init__(get_response, **kwargs)
        markcoroutinefunction(self)

    async def __call__(self, request: HttpRequest) -> HttpResponseBase:
        if self.autorefresh:
            static_file = self.find_file(request.path_info)
        else:
            static_file = self.files.get(request.path_info)
        if static_file is not None:
            response: HttpResponseBase = self.serve(static_file, request)
            return response
        passed_on: HttpResponseBase = await self.get_response(request)
        return passed_on
