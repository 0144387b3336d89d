"""The middleware chain stays async, so an answer being generated holds no server thread."""

from __future__ import annotations

import pytest
from django.conf import settings
from django.utils.module_loading import import_string


@pytest.mark.parametrize("path", settings.MIDDLEWARE)
def test_every_middleware_is_async_capable(path):
    assert getattr(import_string(path), "async_capable", False), (
        f"{path} would force async views into a thread"
    )


@pytest.mark.django_db
def test_static_files_are_still_served(client):
    response = client.get("/static/answers/answer.js")
    assert response.status_code == 200
    assert b"EventSource" in b"".join(response.streaming_content)


def thread_spy(middleware: type, threads: list[int]) -> type:
    """`middleware` recording the thread each of its process_response calls runs in."""
    import threading

    class Spy(middleware):  # type: ignore[misc,valid-type]
        def process_response(self, request, response):
            threads.append(threading.get_ident())
            return super().process_response(request, response)

    return Spy


async def test_header_only_middleware_runs_on_the_event_loop_and_still_does_its_work(rf):
    """CSP and common middleware hooks run inline (no worker thread) and keep their effects."""
    import threading

    from django.http import HttpResponse, HttpResponseNotFound

    from answers.middleware import AsyncCommonMiddleware, AsyncCSPMiddleware

    loop_thread = threading.get_ident()
    hook_threads: list[int] = []

    Spy = thread_spy(AsyncCSPMiddleware, hook_threads)

    async def view(request):
        return HttpResponseNotFound() if request.path == "/api/answers" else HttpResponse("hello")

    chain = Spy(AsyncCommonMiddleware(view))
    ok = await chain(rf.get("/"))
    redirect = await chain(rf.get("/api/answers"))

    assert hook_threads == [loop_thread, loop_thread]
    assert "default-src 'self'" in ok["Content-Security-Policy"]
    assert ok["Content-Length"] == "5"
    assert redirect.status_code == 301  # APPEND_SLASH: the URL with a slash exists
    assert redirect["Location"] == "/api/answers/"


@pytest.mark.django_db(transaction=True)
async def test_session_middleware_saves_in_a_thread_and_otherwise_stays_on_the_event_loop(rf):
    """A response that must save the session goes to a worker thread; the rest run inline."""
    import threading

    from django.contrib.sessions.models import Session
    from django.http import HttpResponse

    from answers.middleware import (
        AsyncAuthenticationMiddleware,
        AsyncMessageMiddleware,
        AsyncSessionMiddleware,
    )

    loop_thread = threading.get_ident()
    threads: list[int] = []

    Spy = thread_spy(AsyncSessionMiddleware, threads)

    async def view(request):
        if request.path == "/remember/":
            await request.session.aset("colour", "blue")
        user = await request.auser()  # the auth middleware's lazy user still works
        return HttpResponse(f"anonymous={user.is_anonymous}")

    chain = Spy(AsyncAuthenticationMiddleware(AsyncMessageMiddleware(view)))
    plain = await chain(rf.get("/"))
    remembered = await chain(rf.get("/remember/"))

    assert plain.content == b"anonymous=True"
    assert threads[0] == loop_thread  # nothing to save: inline
    assert threads[1] != loop_thread  # the session is saved in a worker thread
    cookie = remembered.cookies[settings.SESSION_COOKIE_NAME].value
    stored = await Session.objects.aget(session_key=cookie)
    assert stored.get_decoded() == {"colour": "blue"}
    assert settings.SESSION_COOKIE_NAME not in plain.cookies
