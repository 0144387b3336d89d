"""Web views: the health probe (the ask page and permalinks join it)."""

from __future__ import annotations

from asgiref.sync import sync_to_async
from django.db import DatabaseError, connection
from django.http import HttpRequest, JsonResponse


def _ping_database() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.fetchone()


async def healthz(request: HttpRequest) -> JsonResponse:
    """200 once the database answers; 503 with the reason when it does not."""
    try:
        await sync_to_async(_ping_database)()
    except DatabaseError as exc:
        return JsonResponse(
            {"status": "unavailable", "reason": f"database: {exc.__class__.__name__}: {exc}".strip()},
            status=503,
        )
    return JsonResponse({"status": "ok"})
