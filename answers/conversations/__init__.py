"""Conversations: follow-up questions, each answered as its own turn (docs/api.md, "Conversations")."""
