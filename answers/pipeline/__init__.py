"""The answer pipeline: the flow (flow.py), storage (store.py), idempotency, publishers and lifecycle."""
