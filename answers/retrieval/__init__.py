"""Retrieval: find the passages that answer a question and number their documents 1..N.

The pipeline is answers.retrieval.pipeline.retrieve (see its docstring for what
the scores mean, dense retrieval included); the pure modules beside it (chunking,
query, rerank, fusion) import without Django settings, so this package imports nothing.
"""
