"""The citation core (docs/citations.md): pure Python, no Django; the public names live here."""

from __future__ import annotations

from answers.citations.core import (
    Finalized,
    Marker,
    StripResult,
    finalize_citations,
    render_marker,
    scan_markers,
    strip_out_of_range_markers,
)
from answers.citations.live import LiveDisplay, Step
from answers.citations.normalize import Normalized, normalize_markers

__all__ = [
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
