"""Server-sent events: channels and access, event storage, publishing, fanout and the stream view."""
