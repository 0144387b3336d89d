"""Live display (docs/citations.md): raw provider pieces in, final text and first citations out.

The engine, LiveDisplay. Why it may cut the raw text where it does, and the
context it keeps in place of what it has displayed, are in
answers/citations/live_context.py.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass, field

from answers.citations.code import line_settled
from answers.citations.finalize import number_first_citations
from answers.citations.live_context import MARKER_TAIL, ending, open_forms, state_after
from answers.citations.normalize import dialect_selection, normalize_markers
from answers.citations.scan import (
    MEMBER_CHARS,
    SHORT_MARKER,
    in_range,
    marker_members,
    member_bounds,
    render_marker,
    split_candidates,
)
from answers.citations.strip import BLANKS, strip_pass, written_verdict

_FENCE_STARTS = ("`", "``", "~", "~~")
_FOOTNOTE_DEFINITION_LINE = re.compile(r"\[\^[0-9]+\^?\]:[^\n]*")
# Every dialect marker holds one of these (normalize_markers has nothing to do without).
_MAY_BE_DIALECT = re.compile("\\[(?:[\\[\\^A-Za-z]|[ \t]+[A-Za-z])|[\u3010\uff3b\u2020]")
_OPENINGS = re.compile("[\\[\u3010\uff3b]")
# A piece without these can only be text as it stands, whatever comes next
# (dialect closers, "(" and ":" matter only after an opening bracket).
_NOTHING_TO_DECIDE = re.compile("[^\\[\u3010\uff3b`~\\\\\n]*+")
# Held blanks and an opening bracket with member characters only: more of these keep it undecided.
_HELD_OPEN = re.compile(r"[ \t]*+\[[0-9 \t,\-\u2013]*+")
# What keeps a stretch from _quick_release: what may move code, escape, or open a dialect.
_NOT_QUICK = re.compile("[`~\\\\\n|\u3010\uff3b\u2020]")
_SHOWN_KEPT = 1024  # how many marker texts' displays an answer keeps


# --- The engine ----------------------------------------------------------------------


@dataclass(frozen=True)
class Step:
    """What one piece made displayable: final text, and the sources it cites for the first time."""

    display: str
    cited: list[tuple[int, int]] = field(default_factory=list)  # (final number k, original number n)


# What a piece that settles nothing makes displayable (one shared instance: callers only read steps).
_NOTHING = Step("", [])


@dataclass
class _Walk:
    """The last walk of LiveDisplay._before_the_end back over the pending text: a later walk over the
    same pending text that gets back to where this one began ends where it did."""

    began: int  # the cut it walked back from
    stopped: int  # where it stopped: the text before is settled
    stays_after: bool  # what it left held after `stopped` is blanks, then a bracket never removed
    at_line_start: bool  # whether the pending text began a line


@dataclass
class _Held:
    """The raw text received and not displayed yet, and what the engine knows of it."""

    pending: str = ""  # held back, as one string
    # Pieces received after `pending` while nothing could settle, and their length in all (kept
    # apart: appending each to `pending` would copy the held stretch once per piece).
    pieces: list[str] = field(default_factory=list)
    pieces_size: int = 0
    walk: _Walk | None = None  # None once the pending text is cut
    waits_for_partner: bool = False  # `pending` starts with a backtick run waiting for its partner
    open_bracket: bool = False  # `pending` is blanks and an open bracket with member characters only
    stays_after: bool = False  # what is held after the last cut is blanks and a bracket never removed

    def hold(self, piece: str) -> None:
        """Keep `piece` apart, after what is held."""
        self.pieces.append(piece)
        self.pieces_size += len(piece)

    def staying(self, cut: int) -> str:
        """What is known to follow pending[:cut] when `stays_after`: its blanks, the bracket never
        removed and the character after that (no removal takes them)."""
        blanks = len(self.pending[cut:]) - len(self.pending[cut:].lstrip(BLANKS))
        return self.pending[cut : cut + blanks + 2]

    def joined(self, piece: str) -> str:
        """The pending text, the pieces held apart and `piece`, as one string (the new pending text's
        start: the pieces are emptied)."""
        if self.pieces:
            piece = "".join(self.pieces) + piece
            self.pieces.clear()
            self.pieces_size = 0
        return self.pending + piece


class LiveDisplay:
    """Turns raw provider text, piece by piece, into the text finalize will give, as soon as it settles.

    The concatenation of every Step's display equals
    finalize_citations(strip_out_of_range_markers(normalize_markers(raw)))'s
    text, and the cited pairs, in order, are its references' original numbers;
    each pair comes no later than the first display of its number. Memory is
    a few characters of context plus the stretch held back.
    """

    def __init__(self, source_count: int, dialects: Collection[str] | None = None) -> None:
        self._count = source_count
        self._dialects = dialect_selection(dialects)
        self._open = open_forms(self._dialects)
        self._context = ""  # stands in for everything displayed so far; "" at the start of the text
        self._held = _Held()
        self._mapping: dict[int, int] = {}  # original number -> final number
        # How a marker text is displayed, once all its members have numbers (they never change).
        self._shown_as: dict[str, str] = {}
        self._closed = False

    @property
    def held(self) -> int:
        """How many raw characters are held back."""
        return len(self._held.pending) + self._held.pieces_size

    def feed(self, piece: str) -> Step:
        """Take the next raw piece; return what it makes displayable."""
        if self._held.open_bracket and (
            (piece.isdigit() and piece.isascii()) or not piece.strip(MEMBER_CHARS)
        ):
            # An open bracket gaining member characters stays open: nothing to look at again
            # (a long run of digits fed one at a time costs its length, not its square; held
            # inline, as the cheapest path: it is taken once per character of such a run).
            held = self._held
            held.pieces.append(piece)
            held.pieces_size += len(piece)
            return _NOTHING
        if self._closed:
            raise ValueError("feed() after close()")
        if self._held.waits_for_partner and "`" not in piece and "~" not in piece and "\n" not in piece:
            # Only a backtick run (its partner), a fence or a new line (a blank one ends the
            # span's block) ends the wait.
            self._held.hold(piece)
            return _NOTHING
        pending = self._held.joined(piece)
        self._held.open_bracket = False
        context = self._context
        if (
            context
            and context[-1] != "\n"
            and _NOTHING_TO_DECIDE.fullmatch(pending)
            and "|" not in pending
            and line_settled(context[context.rfind("\n") + 1 :])
        ):
            # The common case, prose in the middle of a line whose kind is settled: only a
            # trailing blank run waits (a marker may take it). The context keeps its blocks;
            # its last character stands for the new last one (a "|" stays: it may make a table).
            display = pending.rstrip(BLANKS)
            self._held.pending = pending[len(display) :]
            self._held.walk = None
            if display:
                self._context = (
                    context + ending(display) if context[-1] == "|" else context[:-1] + ending(display)
                )
            return Step(display)
        self._held.pending = pending
        cut = self._settled()
        if cut == 0:
            # Nothing settles: if all that is held is blanks and one open bracket, member
            # characters alone will keep it so.
            self._held.open_bracket = _HELD_OPEN.fullmatch(pending) is not None
            return Step("")
        return self._quick_release(cut) or self._release(cut, final=False)

    def close(self) -> Step:
        """Mark the end of the answer; return everything still held back."""
        if self._closed:
            raise ValueError("close() called twice")
        self._closed = True
        self._held.open_bracket = False  # feed() checks it before _closed
        self._held.pending = self._held.joined("")
        if not self._held.pending:
            return Step("")
        return self._release(len(self._held.pending), final=True)

    def _settled(self) -> int:
        """How much of the pending text nothing still to come can change (the rules: live_context.py)."""
        pending = self._held.pending
        at_line_start = self._context == "" or self._context.endswith("\n")
        self._held.waits_for_partner = False
        if "`" in pending or "~" in pending:
            # Where code stops being decided: the first backtick run with no partner among the
            # runs received (a run at the very end may still grow, so it does not count yet),
            # or a line or block that what follows may still reshape.
            known = pending.rstrip("`")
            _, run = state_after(self._context + known)
            run -= len(self._context)
            if run < len(known):
                run = max(run, 0)
                if not pending.startswith("`", run):
                    return self._before_the_end(run, at_line_start)
                self._held.waits_for_partner = not pending[:run].strip(" \t")
                # The character after this cut is known, a backtick: only a form that
                # can take it (a dagger's text, a footnote definition's line) still waits.
                line = pending.rfind("\n", 0, run) + 1
                at_line = line > 0 or at_line_start
                if at_line and _FOOTNOTE_DEFINITION_LINE.fullmatch(pending, line, run + 1):
                    return self._before_the_end(line, at_line_start)
                for opening in _OPENINGS.finditer(pending, line, run):
                    if self._open.fullmatch(pending, opening.start(), run + 1):
                        return self._before_the_end(opening.start(), at_line_start)
                return run
        return self._before_the_end(len(pending), at_line_start)

    def _before_the_end(self, cut: int, at_line_start: bool) -> int:
        """How much of pending[:cut] is settled whatever follows it.

        Walks back from the cut one held thing at a time (blanks, backticks, a
        line of fence characters or a footnote definition, an opening whose
        text up to the cut may still become a form), each step looking only at
        what it passes, so the walk costs what it walks. It stops at a held
        marker that can never be removed (a member already in range): only a
        removal joins the text before a marker to what follows it.
        """
        pending = self._held.pending
        self._held.stays_after = False
        walk = self._held.walk
        began = cut
        while True:
            if walk is not None and cut == walk.began and at_line_start == walk.at_line_start:
                # From here on this walk is the last one: it ends where that one did.
                self._held.stays_after = walk.stays_after
                cut = walk.stopped
                break
            before = cut
            while cut > 0 and pending[cut - 1] in " \t`":
                cut -= 1
            newline = pending.rfind("\n", 0, cut)
            line = newline + 1
            if newline >= 0 or at_line_start:
                text = pending[line:cut]
                if text in _FENCE_STARTS or _FOOTNOTE_DEFINITION_LINE.fullmatch(text):
                    cut = line
            opening = self._open_before(line, cut)
            if opening is not None:
                # (Judged on all that is known after it, up to where this round began: the
                # blanks after a number say it is complete.)
                if self._never_removed(pending, opening, before):
                    # What follows the cut (blanks, then a bracket never removed) stays as it is.
                    self._held.stays_after = True
                    cut = len(pending[:opening].rstrip(BLANKS))
                    break
                cut = opening
            if cut == before:
                break
        self._held.walk = _Walk(began, cut, self._held.stays_after, at_line_start)
        return cut

    def _open_before(self, line: int, cut: int) -> int | None:
        """The first opening in pending[line:cut] whose text up to the cut may still become a form."""
        pending = self._held.pending
        last = max(pending.rfind(bracket, line, cut) for bracket in "[\u3010\uff3b")
        if last < 0:
            return None
        if "\u2020" in pending[line:cut]:  # a dagger's text may hold other openings: look at all
            for opening in _OPENINGS.finditer(pending, line, cut):
                if self._open.fullmatch(pending, opening.start(), cut):
                    return opening.start()
            return None
        if last > line and pending[last - 1] in "[\u3010" and self._open.fullmatch(pending, last - 1, cut):
            return last - 1  # a double bracket
        return last if self._open.fullmatch(pending, last, cut) else None

    def _never_removed(self, pending: str, opening: int, cut: int) -> bool:
        """Whether the canonical bracket held at pending[opening:cut] keeps a member in range whatever
        follows (or is no marker at all): then it is never removed, and never takes the blanks before it."""
        held = pending[opening:cut]
        if not held.startswith("["):
            return False
        closed = held.endswith("]")
        content = held[1:-1] if closed else held[1:]
        if content.strip(MEMBER_CHARS):
            return False
        parts = content.split(",")
        last = parts[-1]
        if not closed and not (last.strip(" \t") and last[-1] in " \t"):
            parts.pop()  # its last number may still grow
        for part in parts:
            # (Longer numbers are left to strip: converting them may cost their square.)
            bounds = member_bounds(part) if len(part) <= SHORT_MARKER else None
            if bounds is not None:
                first = max(bounds[0], 1)  # its first member that may name a source
                if first <= bounds[1] and in_range(first, self._count):
                    return True
        return False

    def _quick_release(self, cut: int) -> Step | None:
        """_release(cut, final=False) where it is simple, else None: in the middle of a paragraph's
        settled line, a stretch that holds no line break, backtick, tilde, backslash, "|" or dialect
        opening, and no marker strip would change, ending in no open bracket. Then nothing moves
        code, nothing is normalized or stripped, and the context stays one of its kind (as in
        feed's common case); only the markers are displayed in their final numbers."""
        context = self._context
        if (
            not context
            or context[-1] == "\n"
            or "|" in context
            or "`" in context
            or "~" in context
            or not line_settled(context[context.rfind("\n") + 1 :])
        ):
            return None
        pending = self._held.pending
        chunk = pending[:cut]
        if _NOT_QUICK.search(chunk) or (self._dialects and _MAY_BE_DIALECT.search(context[-1] + chunk)):
            return None
        after = self._held.staying(cut) if self._held.stays_after else ""
        bracket = chunk.rfind("[")
        if bracket >= 0 and MARKER_TAIL.fullmatch(chunk[bracket:] + after):
            return None
        text = context + chunk
        parts, excluded = split_candidates(text)
        shown_as = self._shown_as
        written_set = (
            set(parts[1::2])
            if not excluded
            else {parts[i] for i in range(1, len(parts), 2) if i not in excluded}
        )
        if not excluded and shown_as.keys() >= written_set:
            # (The flood's case: every marker text is one already shown.)
            parts[1::2] = map(shown_as.__getitem__, parts[1::2])
            display = "".join(parts)[len(context) :]
            self._held.pending = pending[cut:]
            self._held.walk = None
            self._context = context[:-1] + ending(display)
            return Step(display, [])
        if not _kept_as_written(written_set, self._count):
            return None
        found = [i for i in range(1, len(parts), 2) if i not in excluded]
        cited = self._show(parts, found)
        display = "".join(parts)[len(context) :]
        self._held.pending = pending[cut:]
        self._held.walk = None
        self._context = context[:-1] + ending(display)
        return Step(display, cited)

    def _show(self, parts: list[str], found: list[int]) -> list[tuple[int, int]]:
        """Each marker of `parts` at `found` replaced by its display in final numbering (kept once
        rendered, up to _SHOWN_KEPT); the (final, written) numbers this cites first, in order."""
        mapping = self._mapping
        shown_as = self._shown_as
        cited: list[tuple[int, int]] = []
        for i in found:
            written = parts[i]
            shown = shown_as.get(written)
            if shown is None:
                members = marker_members(written)
                cited += [(mapping[member], member) for member in number_first_citations(mapping, members)]
                shown = render_marker(mapping[m] for m in members)
                if len(shown_as) < _SHOWN_KEPT:
                    shown_as[written] = shown
            parts[i] = shown
        return cited

    def _release(self, cut: int, final: bool) -> Step:
        chunk = self._held.pending[:cut]
        context = self._context
        text = context + chunk
        # A backtick after the stretch stays (removals take markers and blanks only): a marker
        # at the end is decided by it.
        after = self._held.pending[cut : cut + 1] if self._held.pending.startswith("`", cut) else ""
        if self._held.stays_after and not final:
            after = self._held.staying(cut)
        states = [state_after(text, after)[0]]
        if self._dialects and _MAY_BE_DIALECT.search(text):
            text = normalize_markers(text, self._dialects).text
            # A footnote definition goes with its line break: what is left still ends where the chunk did.
            states.append(state_after(text, after)[0])
        parts, excluded = split_candidates(text)
        found = [i for i in range(1, len(parts), 2) if i not in excluded]
        if not _kept_as_written({parts[i] for i in found}, self._count):
            stripped: list[int] = []
            while True:
                text, joins = strip_pass(text, self._count, stripped)
                if not joins:
                    break
                # Re-rendering a marker moves no code; a removal may have.
                states.append(state_after(text, after)[0])
            parts, excluded = split_candidates(text)
            found = [i for i in range(1, len(parts), 2) if i not in excluded]
        first = states[0]
        if not final and (first is None or any(state is None or state[0] != first[0] for state in states)):
            return Step("")  # a removal changed what the stretch leaves behind: wait for more
        cited = self._show(parts, found)
        shown = "".join(parts)
        display = shown[len(context) :]
        self._held.pending = self._held.pending[cut:]
        if cut:
            self._held.walk = None
        if not final:
            # The state the last step left (renumbering after it moves nothing that matters).
            last = states[-1]
            assert last is not None  # (checked above)
            self._context = last[1]
        return Step(display, cited)


def _kept_as_written(written: set[str], count: int) -> bool:
    """Whether strip keeps each of these marker texts as written (every member in range). A long one
    counts as not kept: it is left to strip to read, as its numbers may cost their square to convert."""
    return all(len(text) <= SHORT_MARKER and written_verdict(text, count) is None for text in written)
