"""Who may read citation trails: staff, or users with the QA reviewers' permission."""

from __future__ import annotations

from typing import Any

from rest_framework.permissions import BasePermission
from rest_framework.request import Request


class CanViewTrail(BasePermission):
    message = "Reading citation trails needs staff status or the QA reviewers' permission."

    def has_permission(self, request: Request, view: Any) -> bool:
        user = request.user
        return bool(user and user.is_authenticated and (user.is_staff or user.has_perm("answers.view_trail")))
