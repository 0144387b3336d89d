"""`make screenshots` (docs/screenshots.py) drives Chromium over the demo and writes the docs' pictures."""

from __future__ import annotations

import os
import struct
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# Every picture the docs and README include (docs/_static/screenshots/): the script must make each.
PICTURES = {
    "first-screen.png",
    "streaming-preview.png",
    "answer.png",
    "conversation.png",
    "declined.png",
    "admin-trail.png",
    "health.png",
    "evaluation-run.png",
}


def _png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n", path
    width, height = struct.unpack(">II", head[16:24])
    return width, height


def test_the_screenshot_script_takes_every_picture_the_docs_show(chromium_path: Path, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    command = [sys.executable, "docs/screenshots.py", "--out", str(tmp_path)]
    done = subprocess.run(
        command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    written = {path.name for path in tmp_path.glob("*.png")}
    assert written >= PICTURES, PICTURES - written
    for name in PICTURES:
        width, height = _png_size(tmp_path / name)
        assert width >= 600, (name, width)
        assert height >= 300, (name, height)
    committed = {path.name for path in (ROOT / "docs" / "_static" / "screenshots").glob("*.png")}
    assert committed == written, (
        "the committed pictures are the ones the script makes: run `make screenshots`"
    )
