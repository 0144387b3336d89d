"""What of a growing answer the live display may show: the rules, the forms still open, the context.

answers/citations/live.py (LiveDisplay, the engine) applies these; they are
apart so that each reads on its own: here, why a cut is safe and what stands
in for the text displayed so far (state_after); there, how the engine holds,
walks back and releases the raw text. Named for the context, the short text
the engine keeps in place of everything it has displayed.
"""

from __future__ import annotations

import re
from collections.abc import Collection

from answers.citations.code import code_tail, line_settled

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
MARKER_TAIL = re.compile(rf"\[{_CONTENT}*\]?")


def _label_prefixes() -> str:
    prefixes = sorted({word[:k] for word in _LABELS for k in range(1, len(word) + 1)}, key=len, reverse=True)
    return "|".join(prefixes)


def open_forms(names: Collection[str]) -> re.Pattern[str]:
    """The tails, from an opening bracket to the end of the text so far, that may still change."""
    labels = "|".join(_LABELS)
    label = rf"[ \t]*(?:(?ai:{_label_prefixes()})|(?ai:{labels})[ \t]*(?::[ \t]*)?{_CONTENT}*)"
    forms = [rf"\[{_CONTENT}*\]?"]  # a marker, perhaps complete
    if "double" in names:
        forms.append(rf"\[\[(?:{_CONTENT}*|{label})(?:\]\]?)?")
    if "fullwidth" in names:
        forms += [
            f"\u3010(?:\u3010{_CONTENT}*(?:\u3011\u3011?)?|{_CONTENT}*\u3011?)",
            f"\uff3b{_CONTENT}*\uff3d?",
        ]
    if "dagger" in names:
        forms += [f"\u3010{_CONTENT}*(?:\u2020[^\u3011\n]*\u3011?)?", rf"\[{_CONTENT}*(?:\u2020[^\]\n]*\]?)?"]
    if "dagger-indexed" in names:
        forms.append("\u3010[0-9]*(?::[0-9]*(?:\u2020[^\u3011\n]*\u3011?)?)?")
    if "label" in names:
        forms.append(rf"\[{label}\]?")
    if "footnote" in names or "footnote-definition" in names:
        forms.append(r"\[\^(?:[0-9]+\^?\]?)?")
    if "footnote" in names:
        forms.append("\u3010\\^(?:[0-9]+\\^?\u3011?)?")
    return re.compile("|".join(forms))


def ending(text: str) -> str:
    """What of the end of `text` matters to what follows: a line start, a backslash (two when an
    even run of them ends it: then Markdown escapes nothing after it, while a bracket right after
    one is still text), or anything else."""
    if not text:
        return ""
    if text[-1] == "\\":
        run = len(text) - len(text.rstrip("\\"))
        return "\\" if run % 2 else "\\\\"
    return text[-1] if text[-1] == "\n" else "x"


# Stands for the text displayed so far: its key (what it leaves open) and the text that puts a scan in
# that state (see state_after).
State = tuple[tuple[object, ...], str]
# A context holds no opening bracket: nothing in it is a marker or a dialect marker to the steps.
_NEUTRAL = str.maketrans({"[": "x", "\u3010": "x", "\uff3b": "x"})


def state_after(text: str, after: str = "") -> tuple[State | None, int]:
    """What a scan of `text` leaves for the text after it, and where that began to be decided.

    None when what follows may still change something of `text`: an unpaired
    backtick run, a line whose first characters may still make it a block of
    another kind, a list, quote or table holding code that later lines may
    still reshape (the index is where that starts); a bracket that may still
    close or waits for its next character, a backtick run that may grow (the
    index is len(text)). Otherwise the state's key says which blocks the text
    leaves open and its text is a stand-in for `text`: the last top-level
    block (code before it cannot change where code is after it), or shorter
    where that is exact (an open fenced block: its opening run; a paragraph:
    a line that continues it), with no opening bracket left in it. `after`
    is the character known to follow, when it is one no removal takes (a backtick).
    """
    size = len(text)
    bracket = text.rfind("[")
    open_bracket = bracket >= 0 and MARKER_TAIL.fullmatch(text[bracket:] + after) is not None
    tail = code_tail(text)
    if tail.undecided < size:
        return None, tail.undecided
    if open_bracket or text.endswith("`"):
        return None, size
    line = text.rfind("\n") + 1
    current = text[line:]
    open_blocks = tail.key[0]
    if tail.fence is not None:
        context = tail.fence + "\n" + current.translate(_NEUTRAL)
    elif not open_blocks and not current:
        context = "\n" if text else ""  # nothing open: the next line starts afresh
    elif (
        open_blocks == (("paragraph_open", "", 0),)
        and "`" not in current
        and "|" not in current
        and (line == tail.block or "|" not in text[text.rfind("\n", 0, line - 1) + 1 : line])
    ):
        # A line of a top-level paragraph whose backtick runs are all paired (none reaching into
        # this line) reads the same after any paragraph line (or as the first line, when it is
        # one); once its first characters settle what it is, the rest of it changes nothing.
        rest = ending(current) if line_settled(current) else current.translate(_NEUTRAL)
        context = rest if line == tail.block else "x\n" + rest
    else:
        context = text[tail.block :].translate(_NEUTRAL)
    return (tail.key, context), size
