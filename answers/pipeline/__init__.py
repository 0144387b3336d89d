"""The answer pipeline: the flow (flow.py, steps 1-3; generate.py, steps 4-7), storage (store.py),
idempotency, publishers and the answers in flight (lifecycle.py); docs/architecture.md orders them."""
