"""Rate limits for asking, and for reader feedback: one rate for anonymous clients, one for signed-in users.

Feedback has the same rates as asking, counted apart (sending feedback does not use up questions).
"""

from __future__ import annotations

from typing import Any

from rest_framework.request import Request
from rest_framework.throttling import AnonRateThrottle, UserRateThrottle

from answers.conf import conf


class AskAnonThrottle(AnonRateThrottle):
    scope = "ask_anon"

    def get_rate(self) -> str:
        # Read lazily (not DRF's import-time copy) so the setting can change in tests.
        return conf.ANON_RATE


class AskUserThrottle(UserRateThrottle):
    scope = "ask_user"

    def get_rate(self) -> str:
        return conf.USER_RATE

    def allow_request(self, request: Request, view: Any) -> bool:
        if not request.user or not request.user.is_authenticated:
            return True  # anonymous clients are AskAnonThrottle's business
        return super().allow_request(request, view)


class FeedbackAnonThrottle(AskAnonThrottle):
    scope = "feedback_anon"


class FeedbackUserThrottle(AskUserThrottle):
    scope = "feedback_user"
