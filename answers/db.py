"""Database connection hygiene for long-lived async work (streams, generations)."""

from __future__ import annotations

from django.db import connection


def release_connection() -> None:
    """Close this thread's database connection unless a transaction (a test's, say) is open.

    Connections are not persistent (CONN_MAX_AGE=0), but Django closes them only
    when a request ends; streams and generations outlive that by minutes, and
    would otherwise keep one each while they wait.
    """
    if not connection.in_atomic_block:
        connection.close()
