"""Provider text as real text: UTF-16 surrogate halves that arrive in separate pieces joined up,
control characters removed (streamed pieces: answers/pipeline/generate.py; whole replies: clean_reply).

A provider (or its JSON) may send an astral character (an emoji) as two escaped UTF-16
halves, `"\\ud83d"` then `"\\ude00"`, even split across two streamed chunks. Python keeps
them as two lone surrogates, which no UTF-8 database column, JSON body or page can hold.
Pure Python, no Django.
"""

from __future__ import annotations


class UnpairedSurrogate(ValueError):
    """The provider's text holds half a UTF-16 pair that nothing completes: not text."""


_HIGH = range(0xD800, 0xDC00)


def join_surrogates(text: str) -> str:
    """`text` with every surrogate pair made its character; UnpairedSurrogate if one is left alone."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        pass
    else:
        return text  # the usual case: nothing to join
    try:
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le")
    except UnicodeDecodeError:
        raise UnpairedSurrogate(
            "The provider sent half a character (an unpaired UTF-16 surrogate)."
        ) from None


class SurrogateJoiner:
    """Feeds provider pieces through join_surrogates, holding a trailing high surrogate back
    until the next piece brings its other half."""

    def __init__(self) -> None:
        self._held = ""

    def feed(self, piece: str) -> str:
        text = self._held + piece
        self._held = ""
        if text and ord(text[-1]) in _HIGH:
            text, self._held = text[:-1], text[-1]
        return join_surrogates(text)

    def close(self) -> None:
        """The end of the text: a high surrogate still held back is half a character."""
        if self._held:
            self._held = ""
            raise UnpairedSurrogate("The provider's text ended in half a character (a UTF-16 surrogate).")


# C0 controls but tab, line feed and carriage return: PostgreSQL text and jsonb cannot hold NUL,
# and none of them is text a reader can see (a model, or a prompt injection, may still send them).
_CONTROLS = dict.fromkeys(c for c in range(0x20) if chr(c) not in "\t\n\r")


def strip_controls(text: str) -> str:
    """`text` without C0 control characters (tab and line breaks kept)."""
    return text.translate(_CONTROLS)


def clean_reply(text: str) -> str:
    """A whole (non-streamed) reply as streamed pieces become text: surrogate pairs joined, C0
    controls removed; UnpairedSurrogate when half a character is left alone."""
    return strip_controls(join_surrogates(text))
