"""A text under strip's later passes: its text as the last full pass left it, minus deleted spans, plus
re-rendered markers (answers/citations/strip.py edits it; the trail reads it)."""

from __future__ import annotations


class Draft:
    """A text under repeated passes: a base string minus deleted spans plus re-rendered markers.

    After the first pass a removal can only create a marker around the point
    where it joined the text (unless it changed where code is, see
    strip._changes_code). Later passes therefore look only there and edit this
    overlay, so nested markers such as `[9[9[9]]]` cost time linear in the
    text instead of one full copy per pass.
    """

    def __init__(self, base: str) -> None:
        self.base = base
        self._dead: dict[int, int] = {}  # start -> end of each maximal deleted span
        self._dead_end: dict[int, int] = {}  # end -> start
        self._renders: dict[int, tuple[int, str]] = {}  # start -> (end, replacement)

    def before(self, i: int) -> int:
        """Index of the live character before boundary `i`; -1 at the start."""
        return self._dead_end.get(i, i) - 1

    def at(self, i: int) -> int:
        """Index of the live character at or after boundary `i`; len(base) at the end."""
        return self._dead.get(i, i)

    def _forget_spans(self, start: int, end: int) -> None:
        i = start
        while i < end:
            span_end = self._dead.pop(i, None)
            if span_end is None:
                i += 1
            else:
                del self._dead_end[span_end]
                i = span_end

    def delete(self, start: int, end: int) -> int:
        """Delete `base[start:end]` (deleted spans inside included); return the merged span's start."""
        self._forget_spans(start, end)
        merged_start = self._dead_end.pop(start, start)
        if merged_start != start:
            del self._dead[merged_start]
        merged_end = self._dead.pop(end, end)
        if merged_end != end:
            del self._dead_end[merged_end]
        self._dead[merged_start] = merged_end
        self._dead_end[merged_end] = merged_start
        return merged_start

    def render(self, start: int, end: int, replacement: str) -> None:
        self._forget_spans(start, end)
        self._renders[start] = (end, replacement)

    def edits(self) -> list[tuple[int, int, str]]:
        """Each deleted span (as "") and re-rendered marker: (start, end, replacement), in order."""
        return sorted(
            [(s, e, "") for s, e in self._dead.items()] + [(s, *r) for s, r in self._renders.items()]
        )

    def text(self) -> str:
        if not self._dead and not self._renders:
            return self.base
        out: list[str] = []
        cursor = 0
        for start, end, replacement in self.edits():
            out += (self.base[cursor:start], replacement)
            cursor = end
        out.append(self.base[cursor:])
        return "".join(out)
