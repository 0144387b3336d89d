"""Live display (CITATIONS.md): raw provider pieces in, final text and first citations out as it settles."""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Collection
from dataclasses import dataclass, field

from answers.citations.core import (
    _FENCED_BLOCK,
    _members,
    _runs,
    _spans,
    _split,
    _strip_pass,
    render_marker,
)
from answers.citations.normalize import _selection, normalize_markers

# --- What may still change ------------------------------------------------------
#
# The whole-text functions are not local: a removal joins the text around it,
# and the join can close a bracket, merge two backtick runs, put a fence at a
# line start or put a backslash before a marker. The engine therefore cuts the
# raw text only where nothing on the left of the cut can change whatever comes
# on the right, processes each stretch between cuts with the whole-text
# functions behind a short context that puts them in the state the left side
# left them in, and keeps only the stretch after the last cut.
#
# A cut is made before the first backtick run that has no partner yet (a
# partner arriving later makes everything after it code), or else at the end
# of the text received, and moved left past:
# - a run of blanks (a marker may follow and take it);
# - a backtick run (it may grow, or a removal may merge it with the next one);
# - a line that is so far one or two fence characters (it may become a fence);
# - a line that is so far a footnote definition (the whole line may go);
# - an opening bracket whose text up to the end could still become, or is, a
#   marker or a dialect marker (a complete one waits for the next character:
#   a "(" makes it a link, a ":" at a line start a definition).
# Before an unpaired run the next character is known, a backtick, which no
# removal takes: only a dagger's text or a footnote definition's line can
# still reach past it. The stretch is then processed, and kept back whole if
# any step of it (the raw text, the normalized text, each strip pass) does not
# end in the same state outside an open bracket: this catches a removal that
# merges backtick runs, opens a fence or leaves a bracket that may still close.

_CONTENT = "[0-9 \t,\\-\u2013]"
_LABELS = ("citation", "cite", "source", "sources", "ref", "reference", "doc", "document", "id")
_FENCE_STARTS = ("`", "``", "~", "~~")
_FOOTNOTE_DEFINITION_LINE = re.compile(r"\[\^[0-9]+\^?\]:[^\n]*")
_MARKER_TAIL = re.compile(rf"\[{_CONTENT}*\]?")
# Every dialect marker holds one of these (normalize_markers has nothing to do without).
_MAY_BE_DIALECT = re.compile("\\[[\\[\\^A-Za-z]|[\u3010\uff3b\u2020]")
_PLAIN = ("", "\n", "\\", "x")  # the contexts outside code
_OPENINGS = re.compile("[\\[\u3010\uff3b]")
# A piece without these can only be text as it stands, whatever comes next
# (dialect closers, "(" and ":" matter only after an opening bracket).
_NOTHING_TO_DECIDE = re.compile("[^\\[\u3010\uff3b`~\\\\\n]*+")


def _label_prefixes() -> str:
    prefixes = sorted({word[:k] for word in _LABELS for k in range(1, len(word) + 1)}, key=len, reverse=True)
    return "|".join(prefixes)


def _open_forms(names: Collection[str]) -> re.Pattern[str]:
    """The tails, from an opening bracket to the end of the text so far, that may still change."""
    forms = [rf"\[{_CONTENT}*\]?"]  # a marker, perhaps complete
    if "double" in names:
        forms.append(rf"\[\[{_CONTENT}*(?:\]\]?)?")
    if "fullwidth" in names:
        forms += [
            f"\u3010(?:\u3010{_CONTENT}*(?:\u3011\u3011?)?|{_CONTENT}*\u3011?)",
            f"\uff3b{_CONTENT}*\uff3d?",
        ]
    if "dagger" in names:
        forms += [f"\u3010{_CONTENT}*(?:\u2020[^\u3011\n]*\u3011?)?", rf"\[{_CONTENT}*(?:\u2020[^\]\n]*\]?)?"]
    if "label" in names:
        forms += [
            rf"\[(?ai:{_label_prefixes()})",
            rf"\[(?ai:{'|'.join(_LABELS)})[ \t]*(?::[ \t]*)?{_CONTENT}*\]?",
        ]
    if "footnote" in names or "footnote-definition" in names:
        forms.append(r"\[\^(?:[0-9]+\^?\]?)?")
    return re.compile("|".join(forms))


def _last(text: str) -> str:
    """The one character of `text` that matters to what follows: line start, backslash, or anything else."""
    if not text:
        return ""
    return text[-1] if text[-1] in "\n\\" else "x"


def _context(text: str, after: str = "") -> tuple[str | None, int]:
    """A few characters that leave a scan in the state `text` leaves it in, and where that state began.

    The context is None when no short text can stand in for `text`: a
    backtick run with no partner yet (the index is then where it starts), a
    run or a line of fence characters that may still grow, a bracket that may
    still close or that waits for its next character. Otherwise the index is
    len(text) and the context is the fence the text ends inside (and where in
    it), or _last(text). `after` is the character known to follow, when it
    is one no removal takes (a backtick).
    """
    size = len(text)
    bracket = text.rfind("[")
    open_bracket = bracket >= 0 and _MARKER_TAIL.fullmatch(text[bracket:] + after) is not None
    if "`" not in text and "~" not in text:  # no code, and no fence to come from this line
        return (None if open_bracket else _last(text)), size
    prose = 0
    last_block = deque(_FENCED_BLOCK.finditer("\n" + text), maxlen=1)
    if last_block:
        block = last_block[0]
        start, end = block.start(), block.end() - 1
        if end == size:  # the text ends inside a fenced block
            fence = block[1]
            line = text.rfind("\n") + 1
            last = text[line:]
            if line <= start:
                context = fence + "x"  # the opening line
            elif last.startswith(fence):
                context = fence + "\n" + fence + "x"  # the closing line, code to its end
            else:
                context = fence + "\n" + ("x" if last else "")
            return (None if open_bracket or (last and fence.startswith(last)) else context), size
        prose = end
    starts, lengths = _runs(text, prose, size, 0)
    undecided = _spans(starts, lengths, stretch_ends=False)[1]
    if undecided < len(lengths):
        return None, starts[undecided]
    if open_bracket or text.endswith("`") or text[text.rfind("\n") + 1 :] in _FENCE_STARTS:
        return None, size
    return _last(text), size


# --- The engine ----------------------------------------------------------------------


@dataclass(frozen=True)
class Step:
    """What one piece made displayable: final text, and the sources it cites for the first time."""

    display: str
    cited: list[tuple[int, int]] = field(default_factory=list)  # (final number k, original number n)


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
        self._dialects = _selection(dialects)
        self._open = _open_forms(self._dialects)
        self._context = ""  # stands in for everything displayed so far; "" at the start of the text
        self._pending = ""  # raw text received and not yet displayed
        self._mapping: dict[int, int] = {}  # original number -> final number
        self._unpaired_run = False  # the pending text starts with a backtick run waiting for its partner
        self._closed = False

    @property
    def held(self) -> int:
        """How many raw characters are held back."""
        return len(self._pending)

    def feed(self, piece: str) -> Step:
        """Take the next raw piece; return what it makes displayable."""
        if self._closed:
            raise ValueError("feed() after close()")
        pending = self._pending + piece
        if self._unpaired_run and "`" not in piece and "~" not in piece:
            # Only a backtick run (its partner) or a fence line ends the wait.
            self._pending = pending
            return Step("")
        if self._context in _PLAIN and _NOTHING_TO_DECIDE.fullmatch(pending):
            # The common case, prose: only a trailing blank run waits (a marker may take it).
            display = pending.rstrip(" \t")
            self._pending = pending[len(display) :]
            if display:
                self._context = _last(display)
            return Step(display)
        self._pending = pending
        cut = self._settled()
        if cut == 0:
            return Step("")
        return self._release(cut, final=False)

    def close(self) -> Step:
        """Mark the end of the answer; return everything still held back."""
        if self._closed:
            raise ValueError("close() called twice")
        self._closed = True
        if not self._pending:
            return Step("")
        return self._release(len(self._pending), final=True)

    def _settled(self) -> int:
        """How much of the pending text nothing still to come can change (see the rules above)."""
        pending = self._pending
        at_line_start = self._context == "" or self._context.endswith("\n")
        self._unpaired_run = False
        if "`" in pending:
            # The first backtick run with no partner among the runs received (a run
            # at the very end may still grow, so it does not count yet).
            known = pending.rstrip("`")
            _, run = _context(self._context + known)
            run -= len(self._context)
            if run < len(known):
                run = max(run, 0)
                self._unpaired_run = not pending[:run].strip(" \t")
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
        """How much of pending[:cut] is settled whatever follows it."""
        pending = self._pending
        while True:
            before = cut
            cut = len(pending[:cut].rstrip(" \t"))
            cut = len(pending[:cut].rstrip("`"))
            newline = pending.rfind("\n", 0, cut)
            line = newline + 1
            if newline >= 0 or at_line_start:
                text = pending[line:cut]
                if text in _FENCE_STARTS or _FOOTNOTE_DEFINITION_LINE.fullmatch(text):
                    cut = line
            for opening in _OPENINGS.finditer(pending, line, cut):
                if self._open.fullmatch(pending, opening.start(), cut):
                    cut = opening.start()
                    break
            if cut == before:
                return cut

    def _release(self, cut: int, final: bool) -> Step:
        chunk = self._pending[:cut]
        context = self._context
        text = context + chunk
        # A backtick after the stretch stays (removals take markers and blanks only): a marker
        # at the end is decided by it.
        after = self._pending[cut : cut + 1] if self._pending.startswith("`", cut) else ""
        states = [_context(text, after)[0]]
        if self._dialects and _MAY_BE_DIALECT.search(text):
            text = normalize_markers(text, self._dialects).text
            # A footnote definition goes with its line break: what is left still ends where the chunk did.
            states.append(_context(text, after)[0])
        parts, excluded = _split(text)
        markers = {i: _members(parts[i]) for i in range(1, len(parts), 2) if i not in excluded}
        if any(not 0 < member <= self._count for members in markers.values() for member in members):
            stripped: list[int] = []
            while True:
                text, joins = _strip_pass(text, self._count, stripped)
                if not joins:
                    break
                # Re-rendering a marker moves no code; a removal may have.
                states.append(_context(text, after)[0])
            parts, excluded = _split(text)
            markers = {i: _members(parts[i]) for i in range(1, len(parts), 2) if i not in excluded}
        if not final and (states[0] is None or any(state != states[0] for state in states)):
            return Step("")  # a removal changed what the stretch leaves behind: wait for more
        mapping = self._mapping
        cited: list[tuple[int, int]] = []
        for i, members in markers.items():
            for member in members:
                if member not in mapping:
                    mapping[member] = len(mapping) + 1
                    cited.append((mapping[member], member))
            parts[i] = render_marker(mapping[m] for m in members)
        display = "".join(parts)[len(context) :]
        self._pending = self._pending[cut:]
        if not final:
            self._context = states[0] or ""
        return Step(display, cited)
