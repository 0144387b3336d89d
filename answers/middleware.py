"""Middleware with async entry points, so the middleware chain stays async under ASGI.

WhiteNoise's own middleware is sync-only; one sync middleware makes Django run
every async view through async_to_sync, holding a thread for the whole of a
generation. Static files are answered the same way; everything else is awaited.

A MiddlewareMixin (Django's common middleware, django-csp's, django_grip's) is
async-capable, but under ASGI each of its hooks runs in a worker thread through
sync_to_async: two thread trips per middleware per request. Those whose hooks
only read the request and set headers (no database, no network) run them inline
here instead. (Django's SecurityMiddleware and XFrameOptionsMiddleware would
qualify, but `check --deploy` looks for them by their own names.)
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from asgiref.sync import markcoroutinefunction
from csp.middleware import CSPMiddleware
from django.http import HttpRequest, HttpResponseBase
from django.middleware.common import CommonMiddleware
from django.utils.deprecation import MiddlewareMixin
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


class InlineHooks(MiddlewareMixin):
    """Runs a MiddlewareMixin's process_request/process_response inline, on the event loop.

    Only for middleware whose hooks touch neither the database nor the network
    (Django would refuse a query here: SynchronousOnlyOperation).
    """

    sync_capable = False
    async_capable = True

    def __init__(self, get_response: Callable[[HttpRequest], Awaitable[HttpResponseBase]]) -> None:
        super().__init__(get_response)
        markcoroutinefunction(self)

    async def __call__(self, request: HttpRequest) -> HttpResponseBase:
        response: HttpResponseBase | None = None
        if hasattr(self, "process_request"):
            response = self.process_request(request)
        if response is None:
            pending = self.get_response(request)
            assert not isinstance(pending, HttpResponseBase)  # async_capable only: the chain is async
            response = await pending
        if hasattr(self, "process_response"):
            response = self.process_response(request, response)
        assert response is not None
        return response


class AsyncCSPMiddleware(InlineHooks, CSPMiddleware):
    """The Content-Security-Policy header (and the nonce it may carry)."""


class AsyncCommonMiddleware(InlineHooks, CommonMiddleware):
    """Disallowed user agents, APPEND_SLASH / PREPEND_WWW redirects, Content-Length."""


class AsyncGripMiddleware(InlineHooks, GripMiddleware):  # type: ignore[misc]
    """GRIP (Pushpin) headers in and out.

    process_request reads Grip-Sig/Grip-Last (and, for WebSocket-over-HTTP, the
    body, which the ASGI handler has already read into memory); process_response
    turns the view's GRIP instructions into Grip-Hold/Grip-Channel/Grip-Link
    headers.
    """

    async def process_view(
        self, request: HttpRequest, view_func: Any, view_args: Any, view_kwargs: Any
    ) -> HttpResponseBase | None:
        result: HttpResponseBase | None = super().process_view(request, view_func, view_args, view_kwargs)
        return result
