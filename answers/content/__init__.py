"""The site's content: documents in, checked once, stored with their chunks.

- `validation`: `clean_document`, the one check for the ingest command and the documents API.
- `storage`: `document_upsert` / `document_store` / `document_delete` (writes; chunks rebuilt on change).
- `readers`: Markdown, text, HTML files and JSON/JSONL feeds to records (plain Python, no Django).
- `ingest`: files and records through validation into storage, with a report (`ingest_paths`).
- `demo`: the demo corpus (`load_demo_corpus`).
"""
