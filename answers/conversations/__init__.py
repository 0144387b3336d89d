"""Conversations: follow-up questions, each answered as its own turn (docs/explanation/conversations.md)."""
