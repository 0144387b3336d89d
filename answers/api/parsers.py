"""The API's JSON parser: DRF's, with deeply nested input a 400 like any other malformed body."""

from __future__ import annotations

from collections.abc import Mapping
from typing import IO, Any

from rest_framework import parsers
from rest_framework.exceptions import ParseError


class JSONParser(parsers.JSONParser):
    """DRF's JSONParser, refusing JSON nested beyond what Python's decoder recurses into.

    The standard library's decoder recurses once per level; about 1,000 levels (under
    2 KB of `[`) exhaust the interpreter's stack, and its RecursionError is no ValueError,
    so DRF let it through as a 500. No request of this API nests more than a few levels.
    """

    def parse(
        self, stream: IO[Any], media_type: str | None = None, parser_context: Mapping[str, Any] | None = None
    ) -> Any:
        try:
            return super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise ParseError("JSON parse error - nested too deeply.") from None
