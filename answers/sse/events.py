"""The names of an answer's SSE events (docs/reference/events.md): one place for the publisher that
sends them, the replay that reads them back and the GRIP path that filters them."""

REFERENCES = "references"
DELTA = "delta"
CITE = "cite"
DONE = "done"
ERROR = "error"
