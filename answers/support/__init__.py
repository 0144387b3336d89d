"""The support check: which sentences of an answer its sources back (API.md, trail `support`).

Pure parts importable without Django: sentences, lexical, quotes, record, methods,
judge. The Django side: corpus (word weights from the search index) and compute
(`compute_support(answer)` / `acompute_support(answer)`).
"""
