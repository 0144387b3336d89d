"""Who is asking: one rule for the API, the event streams and the answer pages (docs/reference/access.md).

The API's authenticators (REST_FRAMEWORK's DEFAULT_AUTHENTICATION_CLASSES: the token
first, then the session) decide on every surface, run the same way DRF runs them:

- `Authorization: Token <key>` (the scheme in any case, as DRF's TokenAuthentication
  reads it), when present, decides who asks, whatever session cookie comes with it;
- a bare `Token`, a key with spaces, an unknown key or an inactive user's key is a
  `401` with `WWW-Authenticate: Token`, even beside a valid session (a client that
  sent a token meant it: it is told the token is wrong rather than served as someone
  else);
- without a token header, the session's user (or nobody). Other schemes (`Bearer`,
  `Basic`) are not the app's and are ignored, as DRF ignores them.

Django admin is the exception: it is for staff in a browser, signed in with a session.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from rest_framework.exceptions import AuthenticationFailed
from rest_framework.request import Request
from rest_framework.settings import api_settings

__all__ = ["AuthenticationFailed", "challenge", "request_user"]


def _authenticators() -> list[Any]:
    classes: list[Any] = list(api_settings.DEFAULT_AUTHENTICATION_CLASSES)
    return [cls() for cls in classes]


def request_user(request: HttpRequest) -> Any:
    """The user asking (AnonymousUser for nobody); sets `request.user` to it.

    Raises AuthenticationFailed for a token that does not hold (answer it with
    `challenge()` and status 401). Reads the database: call it from a worker thread.
    """
    return Request(request, authenticators=_authenticators()).user


def challenge() -> str:
    """The `WWW-Authenticate` value of a 401: the first authenticator's scheme, as DRF sends it."""
    header: str = _authenticators()[0].authenticate_header(request=None) or "Token"
    return header
