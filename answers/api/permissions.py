"""Who may read citation trails: whoever has the QA reviewers' permission (selectors.may_read_trails).

The admin answer pages ask the same question, so the trail API and admin agree: a QA reviewer
reads both, staff without the permission get `403` from both.
"""

from __future__ import annotations

from typing import Any

from rest_framework.permissions import BasePermission
from rest_framework.request import Request

from answers.selectors import may_read_trails


class CanViewTrail(BasePermission):
    message = "Reading citation trails needs the QA reviewers' permission (answers.view_trail)."

    def has_permission(self, request: Request, view: Any) -> bool:
        return may_read_trails(request.user)
