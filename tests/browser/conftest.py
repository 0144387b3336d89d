"""Browser test fixtures: Debian's Chromium driven by Playwright, against a real daphne server.

Never `playwright install`: the browser is /usr/bin/chromium. Without it the
tests skip with a reason, except on CI (CI=true), where that is a failure.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect, sync_playwright

from tests.fixtures.anthropic_stub import StubAnthropicServer, served_anthropic
from tests.fixtures.browser_pages import EXPECT_TIMEOUT_MS, fresh_page
from tests.fixtures.live_server import LiveServer, required, served
from tests.fixtures.providers import StubOpenAIServer

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """A failed browser test's report carries the tail of the server's log."""
    report = yield
    server = getattr(item, "funcargs", {}).get("browser_server")
    if report.failed and isinstance(server, LiveServer):
        report.sections.append(("live server log (tail)", server.log_tail()))
    return report


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if Path(str(item.fspath)).is_relative_to(here):
            item.add_marker(pytest.mark.browser)


@pytest.fixture(scope="session")
def chromium_path() -> Path:
    if not CHROMIUM.exists():
        required("the browser tests", f"{CHROMIUM} is missing: install Debian's `chromium` package")
    return CHROMIUM


@pytest.fixture(scope="module")
def browser_stub(request: pytest.FixtureRequest) -> Iterator[StubOpenAIServer | StubAnthropicServer]:
    """The module's stub provider, under the name browser tests use: the OpenAI-compatible one
    (tests/fixtures/providers.py), or Anthropic's in a module that sets `PROVIDER = "anthropic"`."""
    if getattr(request.module, "PROVIDER", "openai") == "anthropic":
        with StubAnthropicServer() as server:
            yield server
    else:
        yield request.getfixturevalue("stub")


@pytest.fixture(scope="module")
def browser_server(
    chromium_path: Path, browser_stub: StubOpenAIServer | StubAnthropicServer
) -> Iterator[LiveServer]:
    if isinstance(browser_stub, StubAnthropicServer):
        with served_anthropic(browser_stub) as live:
            yield live
    else:
        with served(browser_stub) as live:
            yield live


@pytest.fixture(scope="module")
def browser(chromium_path: Path) -> Iterator[object]:
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(chromium_path), args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


expect.set_options(timeout=EXPECT_TIMEOUT_MS)


@pytest.fixture
def page(browser: object, browser_server: LiveServer, browser_stub: StubOpenAIServer) -> Iterator[object]:
    """A fresh phone-sized page on the live server (the stub reset); console errors fail the test."""
    assert isinstance(browser, Browser)
    browser_stub.reset()
    with fresh_page(browser, browser_server.url) as page:
        yield page


@pytest.fixture
def wide_page(browser: Browser, browser_server: LiveServer, browser_stub: StubOpenAIServer) -> Iterator[Page]:
    """A fresh page 1280 px wide (a QA reviewer's desktop) on the live server (the stub reset)."""
    browser_stub.reset()
    with fresh_page(browser, browser_server.url) as page:
        page.set_viewport_size({"width": 1280, "height": 900})
        yield page


@pytest.fixture
def narrow_page(
    browser: Browser, browser_server: LiveServer, browser_stub: StubOpenAIServer
) -> Iterator[Page]:
    """A fresh page 390 px wide (a phone held upright) on the live server (the stub reset)."""
    browser_stub.reset()
    with fresh_page(browser, browser_server.url) as page:
        page.set_viewport_size({"width": 390, "height": 844})
        yield page


@pytest.fixture(params=[1280, 390], ids=["1280px", "390px"])
def sized_page(request: pytest.FixtureRequest) -> Page:
    """The test once on a 1280 px page (`wide_page`) and once on a 390 px one (`narrow_page`)."""
    fixture = "wide_page" if request.param == 1280 else "narrow_page"
    page: Page = request.getfixturevalue(fixture)
    return page
