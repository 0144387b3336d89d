"""Middleware with async entry points, so the middleware chain stays async under ASGI.

WhiteNoise's own middleware is sync-only; one sync middleware makes Django run
every async view through async_to_sync, holding a thread for the whole of a
generation. Static files are answered the same way; everything else is awaited.

A MiddlewareMixin (Django's common middleware, django-csp's, django_grip's) is
async-capable, but under ASGI each of its hooks runs in a worker thread through
sync_to_async: two thread trips per middleware per request. Those whose hooks
only read the request and set headers (no database, no network) run them inline
here instead. The session, auth and messages middleware run inline too, except
for a response that has to save the session or the messages (a worker thread,
as before). (Django's SecurityMiddleware, XFrameOptionsMiddleware and
CsrfViewMiddleware stay as they are: `check --deploy` looks for them by their
own names.)
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from asgiref.sync import markcoroutinefunction, sync_to_async
from csp.middleware import CSPMiddleware
from django.conf import settings
from django.contrib.auth.middleware import AuthenticationMiddleware
from django.contrib.messages.middleware import MessageMiddleware
from django.contrib.sessions.middleware import SessionMiddleware
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

    Only for hooks that touch neither the database nor the network (Django would
    refuse a query here: SynchronousOnlyOperation); a subclass whose process_response
    might, for some responses, says so in response_needs_thread.
    """

    sync_capable = False
    async_capable = True

    def __init__(self, get_response: Callable[[HttpRequest], Awaitable[HttpResponseBase]]) -> None:
        super().__init__(get_response)
        markcoroutinefunction(self)

    def response_needs_thread(self, request: HttpRequest, response: HttpResponseBase) -> bool:
        """Whether process_response may touch the database for this response (then: a worker thread)."""
        return False

    async def __call__(self, request: HttpRequest) -> HttpResponseBase:
        response: HttpResponseBase | None = None
        if hasattr(self, "process_request"):
            response = self.process_request(request)
        if response is None:
            pending = self.get_response(request)
            assert not isinstance(pending, HttpResponseBase)  # async_capable only: the chain is async
            response = await pending
        if hasattr(self, "process_response"):
            if self.response_needs_thread(request, response):
                response = await sync_to_async(self.process_response)(request, response)
            else:
                response = self.process_response(request, response)
        assert response is not None
        return response


class AsyncCSPMiddleware(InlineHooks, CSPMiddleware):
    """The Content-Security-Policy header (and the nonce it may carry)."""


class AsyncCommonMiddleware(InlineHooks, CommonMiddleware):
    """Disallowed user agents, APPEND_SLASH / PREPEND_WWW redirects, Content-Length.

    No slash-appending redirect for a POST (or any unsafe method) under /api/: clients follow
    a 301 with a GET and the body is lost, so `POST /api/answers` is the API's JSON 404.
    """

    def should_redirect_with_slash(self, request: HttpRequest) -> bool:
        if request.path_info.startswith("/api/") and request.method not in ("GET", "HEAD"):
            return False
        redirect: bool = super().should_redirect_with_slash(request)
        return redirect


class AsyncSessionMiddleware(InlineHooks, SessionMiddleware):
    """The store is created lazily (no query); only a response that saves it goes to a thread."""

    def response_needs_thread(self, request: HttpRequest, response: HttpResponseBase) -> bool:
        session = getattr(request, "session", None)
        return session is not None and bool(session.modified or settings.SESSION_SAVE_EVERY_REQUEST)


class AsyncAuthenticationMiddleware(InlineHooks, AuthenticationMiddleware):
    """request.user and request.auser, both lazy: no query here."""


class AsyncMessageMiddleware(InlineHooks, MessageMiddleware):
    """The storage is created lazily; only a response that stores messages goes to a thread."""

    def response_needs_thread(self, request: HttpRequest, response: HttpResponseBase) -> bool:
        storage = getattr(request, "_messages", None)
        return storage is not None and bool(storage.used or storage.added_new)


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
