"""The support check: which sentences of an answer its sources back (docs/reference/http.md, trail `support`).

Pure parts importable without Django: sentences, lexical, quotes, record, methods,
judge, coverage (the question's terms the cited sources hold: docs/reference/http.md, the trail's
`coverage`). The Django side: corpus (word weights from the search index) and compute
(`compute_support(answer)` / `acompute_support(answer)`, `compute_coverage(answer)`).
"""
