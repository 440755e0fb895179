"""A headless Chromium for tests and screenshots of the debug UI, driven by selenium.

It uses the system's browser and driver (Debian: `apt-get install chromium chromium-driver`, which
`scripts/setup` does when they are missing) and points selenium at them, so selenium-manager never
downloads anything; the flags keep the browser itself off the network (no sync, updates, QUIC or
background fetches). Needs the `selenium` package (in the `dev` dependency group).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

CHROMIUM_CANDIDATES = ("/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome")
DRIVER_CANDIDATES = ("/usr/bin/chromedriver", "/usr/lib/chromium/chromedriver")
FLAGS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-quic",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--disable-default-apps",
    "--metrics-recording-only",
    "--hide-scrollbars",
    "--force-device-scale-factor=1",
)


def find_chromium() -> tuple[str, str] | None:
    """(browser, driver) paths of the installed Chromium, or None when either is missing."""
    browser = next((p for p in CHROMIUM_CANDIDATES if Path(p).exists()), None)
    driver = next((p for p in DRIVER_CANDIDATES if Path(p).exists()), None) or shutil.which("chromedriver")
    return (browser, driver) if browser and driver else None


@contextmanager
def chromium(width: int = 1440, height: int = 900, lang: str = "en-US") -> Iterator[Any]:
    """A selenium `webdriver.Chrome` on the system Chromium, headless, with a fresh profile that is
    deleted afterwards. Raises RuntimeError naming what to install when the browser is missing."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    found = find_chromium()
    if found is None:
        raise RuntimeError(
            "no Chromium: install it with `apt-get install -y chromium chromium-driver` (scripts/setup does)"
        )
    browser, driver_path = found
    profile = tempfile.mkdtemp(prefix="memsched-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = browser
    for flag in FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={profile}")
    options.add_argument(f"--window-size={width},{height}")
    options.add_argument(f"--lang={lang}")
    options.add_experimental_option("prefs", {"intl.accept_languages": lang})
    driver = webdriver.Chrome(service=Service(executable_path=driver_path), options=options)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def full_page_screenshot(driver: Any, path: Path, width: int = 1440, max_height: int = 4000) -> None:
    """Save a PNG of the whole page (the window is resized to the document's height, capped)."""
    height = int(driver.execute_script("return document.documentElement.scrollHeight"))
    driver.set_window_size(width, min(max(height, 600), max_height))
    path.parent.mkdir(parents=True, exist_ok=True)
    driver.save_screenshot(str(path))
