"""Headless Chromium for the browser tests, driven through Debian's chromedriver.

`make test` installs `chromium` and `chromium-driver` where it may (root, or sudo without a
password). Where they are missing the browser tests are skipped with one line naming them.
"""

from __future__ import annotations

import shutil
import tempfile

import pytest

CHROMIUM = "chromium"
CHROMEDRIVER = "chromedriver"
# No background traffic: this machine's network is closed, and Chromium would keep trying.
QUIET = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)


def headless_chromium(width: int = 1400, height: int = 1000):
    """A selenium driver, or a skip saying what to install. Quit it (a profile folder of its
    own goes with it: `driver.evalfleet_profile`)."""
    binary, driver_path = shutil.which(CHROMIUM), shutil.which(CHROMEDRIVER)
    if binary is None or driver_path is None:
        pytest.skip("needs chromium and chromedriver: apt-get install chromium chromium-driver")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="chromium-profile-")
    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for argument in (*QUIET, f"--window-size={width},{height}", f"--user-data-dir={profile}"):
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service(driver_path), options=options)
    driver.evalfleet_profile = profile
    return driver


def close(driver) -> None:
    driver.quit()
    shutil.rmtree(getattr(driver, "evalfleet_profile", ""), ignore_errors=True)
