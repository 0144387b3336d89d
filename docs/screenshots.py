"""The docs' pictures, taken from the demo as a reader and a reviewer see it (`make screenshots`).

Starts the app as the tests do (tests/fixtures/live_server.py: daphne on a fresh SQLite database with
the demo corpus, the offline `extractive` provider, slowed so the streaming shows), drives Debian's
Chromium (Playwright, /usr/bin/chromium) through the first screen, a streaming answer with a source's
preview open, the answer done with its Sources, a follow-up, a declined question, the admin trail
page, the citation health page and a run of the demo's evaluation set, and writes one PNG each
into the folder given (docs/_static/screenshots/ by default), overwriting what was there.

    .venv/bin/python docs/screenshots.py [--out DIR]
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from playwright.sync_api import Browser, Locator, Page, expect, sync_playwright  # noqa: E402 - after the path

from tests.fixtures.browser_pages import sign_in  # noqa: E402
from tests.fixtures.live_server import LiveServer, manage, running_server  # noqa: E402

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
DESKTOP = {"width": 1280, "height": 860}
QUESTION = "How does the with statement work?"
FOLLOW_UP = "How is it different from a try statement?"
DECLINED = "What is the capital of France?"
# The demo's own settings (`make run`'s), not the tests': the default threshold and source cap, the
# offline provider paced so that a screenshot catches the answer being written.
DEMO = {
    "ANSWERS_PROVIDER": "extractive",
    "ANSWERS_EXTRACTIVE_DELAY_MS": "120",
    "ANSWERS_MIN_SCORE": "",
    "ANSWERS_MAX_SOURCES": "",
    "ANSWERS_MODEL": "",
}
TIMEOUT_MS = 60_000


@contextmanager
def demo_server() -> Iterator[LiveServer]:
    # No provider request is made: `openai_base_url` only fills the tests' settings.
    with running_server(
        openai_base_url="http://127.0.0.1:9/v1", documents=[], demo=True, extra_env=DEMO
    ) as live:
        yield live


def ask(page: Page, question: str) -> None:
    page.fill("textarea[name=question]", question)
    page.locator("[data-ask-submit]").click()


def reader_pictures(browser: Browser, url: str, out: Path) -> tuple[list[Path], str]:
    """The ask page's pictures; returns them and the id of the answer to the first question."""
    context = browser.new_context(base_url=url, viewport=DESKTOP, color_scheme="light")
    context.set_default_timeout(TIMEOUT_MS)
    page = context.new_page()
    taken: list[Path] = []
    try:
        page.goto("/")
        expect(page.locator("[data-example-question]").first).to_be_visible()
        taken.append(_shot(page, out / "first-screen.png"))

        ask(page, QUESTION)
        answer = page.locator("[data-answer]").last
        citation = answer.locator("[data-answer-text] a.cite").first
        expect(citation).to_be_visible()
        citation.hover()
        expect(page.locator("[data-source-preview]")).to_be_visible()
        taken.append(_shot(page, out / "streaming-preview.png"))

        expect(answer).to_have_attribute("data-answer-status", "done")
        page.mouse.move(0, 0)
        page.keyboard.press("Escape")  # closes the preview
        expect(page.locator("[data-source-preview]")).to_be_hidden()
        answer_id = str(answer.get_attribute("data-answer-id"))
        taken.append(_shot(page, out / "answer.png", answer))

        ask(page, FOLLOW_UP)
        expect(page.locator("[data-turn='2'] [data-answer]")).to_have_attribute("data-answer-status", "done")
        taken.append(_shot(page, out / "conversation.png", full=True))

        page.goto("/")
        ask(page, DECLINED)
        expect(page.locator("[data-answer][data-answer-declined]")).to_be_visible()
        # The example questions come back under the question box, below the fold: the whole page.
        expect(page.locator("[data-example-question]").first).to_be_visible()
        taken.append(_shot(page, out / "declined.png", full=True))
    finally:
        context.close()
    return taken, answer_id


def evaluate_demo(live: LiveServer) -> None:
    """A run of the demo's labeled questions (as the tutorial makes one): the admin then has a run to show."""
    env = {**live.env, "ANSWERS_EXTRACTIVE_DELAY_MS": "0"}  # the pacing is for the reader's pictures only
    manage(["evaluation", "import", "demo", "bench/relevance_labeled.jsonl", "--if-missing"], env)
    manage(["evaluate", "demo", "--label", "extractive, the demo set"], env, timeout=600)


def reviewer_pictures(browser: Browser, url: str, answer_id: str, out: Path) -> list[Path]:
    """Admin as a QA reviewer: the answer's trail page, the health page, the evaluation run."""
    context = browser.new_context(base_url=url, viewport=DESKTOP, color_scheme="light")
    context.set_default_timeout(TIMEOUT_MS)
    page = context.new_page()
    taken: list[Path] = []
    try:
        sign_in(page, "reviewer")
        page.goto(f"/admin/answers/answer/{answer_id}/change/")
        expect(page.locator("#content")).to_contain_text(QUESTION)
        # From the trail itself (raw text beside final text, then the sources), past the answer's fields.
        trail = page.get_by_role("heading", name="Raw text → final text")
        trail.evaluate("heading => heading.scrollIntoView({block: 'start'})")
        taken.append(_shot(page, out / "admin-trail.png"))
        page.goto("/admin/answers/answer/health/")
        taken.append(_shot(page, out / "health.png"))
        page.goto("/admin/answers/evaluationrun/")
        page.locator("#result_list tbody a").first.click()
        expect(page.locator("#content")).to_contain_text("extractive, the demo set")
        taken.append(_shot(page, out / "evaluation-run.png"))
    finally:
        context.close()
    return taken


def _shot(page: Page, path: Path, element: Locator | None = None, *, full: bool = False) -> Path:
    page.evaluate("document.fonts.ready")
    if element is not None:
        element.screenshot(path=str(path))
    else:
        page.screenshot(path=str(path), full_page=full)
    return path


def main(out: Path) -> list[Path]:
    """Take every picture into `out`; returns the files written."""
    out.mkdir(parents=True, exist_ok=True)
    expect.set_options(timeout=TIMEOUT_MS)
    with demo_server() as live, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            taken, answer_id = reader_pictures(browser, live.url, out)
            evaluate_demo(live)
            return taken + reviewer_pictures(browser, live.url, answer_id, out)
        finally:
            browser.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "_static" / "screenshots")
    for written in main(parser.parse_args().out):
        sys.stdout.write(f"{written.relative_to(ROOT) if written.is_relative_to(ROOT) else written}\n")
