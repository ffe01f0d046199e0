# SPDX-License-Identifier: LGPL-2.1-or-later
"""
What the browser checks (check-*-browser.py) share: headless Chromium
through chromedriver (WebDriver) with a profile of its own and the
page's log kept, and the way they count failed checks and wait for the
page.
"""
import contextlib
import sys
import tempfile
import time

from selenium import webdriver
from selenium.common.exceptions import WebDriverException
from selenium.webdriver.chrome.service import Service

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL: " + what, file=sys.stderr)
    return cond


def wait_for(fn, what, timeout=20.0):
    end = time.monotonic() + timeout
    while True:
        try:
            v = fn()
            if v:
                return v
        except WebDriverException:
            pass
        if time.monotonic() > end:
            check(False, "timed out waiting for " + what)
            return None
        time.sleep(0.05)


@contextlib.contextmanager
def chromium(window):
    """A headless Chromium of WINDOW ("W,H") pixels, quit on leaving."""
    opts = webdriver.ChromeOptions()
    opts.binary_location = "/usr/bin/chromium"
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=" + window, "--hide-scrollbars"):
        opts.add_argument(arg)
    profile = tempfile.TemporaryDirectory(prefix="browser-check.")
    opts.add_argument("--user-data-dir=" + profile.name)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=opts)
    try:
        yield driver
    finally:
        driver.quit()
        profile.cleanup()
