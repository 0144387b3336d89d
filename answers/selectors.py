"""Read queries shared by the API, the pages, the event streams and admin."""

from __future__ import annotations

import uuid
from typing import Any

from answers.models import Answer


def answer_readable_by(*, answer_id: uuid.UUID, user: Any) -> bool:
    """Signed-in askers' answers: them and staff. Anonymous answers: whoever holds the id."""
    row = Answer.objects.filter(id=answer_id).values("asker_id").first()
    if row is None:
        return False
    if row["asker_id"] is None:
        return True
    return bool(user is not None and user.is_authenticated and (user.is_staff or user.pk == row["asker_id"]))
