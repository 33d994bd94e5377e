"""One real browser: start the app, visit every page in Debian's Chromium, fail on any exception.

Screenshots go to tests/screenshots/ (ignored by git) for a person to look at.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
SHOTS = ROOT / "tests" / "screenshots"

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not Path(CHROMIUM).exists(), reason="Debian's chromium is missing: `make browser-deps` installs it"
    ),
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def app_url(tmp_path_factory):
    port = free_port()
    env = {**os.environ, "FMLIB_RUNS": str(tmp_path_factory.mktemp("runs"))}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "streamlit",
            "run",
            "app.py",
            "--server.headless",
            "true",
            "--server.address",
            "127.0.0.1",
            "--server.port",
            str(port),
            "--browser.gatherUsageStats",
            "false",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            if urllib.request.urlopen(f"{url}/_stcore/health", timeout=2).read() == b"ok":
                break
        except OSError:
            time.sleep(0.5)
    else:
        proc.kill()
        pytest.fail("streamlit did not become healthy within 60 s:\n" + proc.stdout.read().decode()[-2000:])
    yield url
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def wait_idle(page, timeout=120_000):
    page.wait_for_selector("[data-testid='stApp'][data-test-connection-state='CONNECTED']", timeout=timeout)
    page.wait_for_selector("[data-testid='stApp'][data-test-script-state='notRunning']", timeout=timeout)


def test_every_page_renders_without_exception(app_url):
    from playwright.sync_api import sync_playwright

    from app_pages._ui import PAGES

    SHOTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
                "--disable-quic",
            ],
        )
        page = browser.new_page(viewport={"width": 1400, "height": 2400})
        # the first visit to a fresh server is a shared deep link: it must get the app's frame
        page.goto(f"{app_url}/train?dataset=synthetic")
        wait_idle(page)
        links = page.locator("[data-testid='stSidebarNav'] a")
        assert links.count() == len(PAGES), "the sidebar lists every page (and nothing else)"
        assert page.get_by_text("Served by: synthetic").count() == 1, "the frame's sidebar ran"
        titles = [links.nth(i).inner_text().strip().split("\n")[-1].strip() for i in range(links.count())]
        for i, title in enumerate(titles):
            page.locator("[data-testid='stSidebarNav'] a").nth(i).click()
            page.wait_for_timeout(500)
            wait_idle(page)
            page.screenshot(path=str(SHOTS / f"{i:02d}-{title.replace(' ', '_')}.png"))
            errors = page.locator("[data-testid='stException']")
            assert errors.count() == 0, f"page {title!r} shows an exception: {errors.first.inner_text()[:500]}"
            if title == "Train":  # press Train on the synthetic data: live chart, metrics
                page.get_by_role("button", name="Train", exact=True).click()
                page.get_by_text("Save run").first.wait_for(timeout=120_000)  # the page polls its queued job
                wait_idle(page)
                assert page.locator("[data-testid='stException']").count() == 0
                page.screenshot(path=str(SHOTS / f"{i:02d}-{title}-trained.png"))
        browser.close()
