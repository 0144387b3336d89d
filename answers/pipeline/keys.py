"""An Idempotency-Key as stored with the answer it created: store.py writes it, idempotency.py looks it up."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass


@dataclass(frozen=True)
class Idempotency:
    """A client's Idempotency-Key, scoped to who asked: one client's keys never meet another's.

    A signed-in user's keys are that user's; an anonymous client's are its session's (only
    that client holds the session cookie), so another client sending the same key never
    reaches, nor learns the id of, an answer it could not read already.
    """

    key: str
    scope: str

    @classmethod
    def for_user(cls, key: str, user_id: int) -> Idempotency:
        return cls(key=key, scope=f"user:{user_id}")

    @classmethod
    def for_session(cls, key: str, session_key: str) -> Idempotency:
        # A digest, not the session key itself: the scope is stored with the answer (and shown
        # in admin), and a session key is a credential.
        digest = hashlib.sha256(session_key.encode()).hexdigest()[:40]
        return cls(key=key, scope=f"session:{digest}")
