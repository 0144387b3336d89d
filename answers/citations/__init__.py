"""The citation core (docs/citations.md): pure Python, no Django; the public names live here."""

from __future__ import annotations

from answers.citations.finalize import Finalized, finalize_citations
from answers.citations.live import LiveDisplay, Step
from answers.citations.normalize import Normalized, normalize_markers
from answers.citations.scan import Marker, render_marker, scan_markers
from answers.citations.strip import StripResult, strip_out_of_range_markers

# The version of the citation rules (docs/citations.md, "Versions of the rules") a trail is computed
# under. 1: code by the project's own line rules; 2: code as CommonMark decides it, the dialects
# `double` with a label, `dagger-indexed` and the full-width footnote, and a removed marker taking
# the blanks after it only where it begins a line; 3: a dialect marker refused only where it starts
# in code.
RULES_VERSION = 3

__all__ = [
    "RULES_VERSION",
    "Finalized",
    "LiveDisplay",
    "Marker",
    "Normalized",
    "Step",
    "StripResult",
    "finalize_citations",
    "normalize_markers",
    "render_marker",
    "scan_markers",
    "strip_out_of_range_markers",
]
