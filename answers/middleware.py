"""Middleware with async entry points, so the middleware chain stays async under ASGI.

WhiteNoise's own middleware is sync-only; one sync middleware makes Django run
every async view through async_to_sync, holding a thread for the whole of a
generation. Static files are answered the same way; everything else is awaited.

django_grip's GripMiddleware (added only when GRIP_URL is set, docs/pushpin.md)
is a MiddlewareMixin: async-capable, but each of its hooks would run in a worker
thread through sync_to_async. Its hooks only parse and set headers, so they run
inline here.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from asgiref.sync import markcoroutinefunction
from django.http import HttpRequest, HttpResponseBase
from django_grip import GripMiddleware  # type: ignore[import-untyped]
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


class AsyncGripMiddleware(GripMiddleware):  # type: ignore[misc]
    """GRIP (Pushpin) headers in and out, without a thread hop per request.

    process_request reads Grip-Sig/Grip-Last (and, for WebSocket-over-HTTP, the
    body, which the ASGI handler has already read into memory); process_response
    turns the view's GRIP instructions into Grip-Hold/Grip-Channel/Grip-Link
    headers. Neither touches the database or the network.
    """

    sync_capable = False
    async_capable = True

    def __init__(self, get_response: Callable[[HttpRequest], Awaitable[HttpResponseBase]]) -> None:
        super().__init__(get_response)
        markcoroutinefunction(self)

    async def __call__(self, request: HttpRequest) -> HttpResponseBase:
        response: HttpResponseBase | None = self.process_request(request)
        if response is None:
            response = await self.get_response(request)
        result: HttpResponseBase = self.process_response(request, response)
        return result

    async def process_view(
        self, request: HttpRequest, view_func: Any, view_args: Any, view_kwargs: Any
    ) -> HttpResponseBase | None:
        result: HttpResponseBase | None = super().process_view(request, view_func, view_args, view_kwargs)
        return result
