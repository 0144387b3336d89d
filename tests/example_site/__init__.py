"""A small Django site that installs the answers app, as docs/howto/install.md says.

Its own settings and URLs, and an `articles` app whose models are registered as content
(articles/answers_sources.py). Its tests run in a pytest session of their own:
`python -m pytest tests/example_site --ds=tests.example_site.settings`.
"""
