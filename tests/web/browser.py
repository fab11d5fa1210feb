"""A served board and a headless Chromium driving it (Debian's chromium + chromedriver through
selenium), for the browser test and the benchmarks. Chromium as root needs --no-sandbox and a
fresh profile directory."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

CHROME_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--no-first-run",
                "--disable-dev-shm-usage", "--hide-scrollbars")


def missing() -> str | None:
    """Why no browser test can run here, or None."""
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install 'gitliza[test]')"
    if not (shutil.which("chromium") or shutil.which("chromium-browser")):
        return "chromium is not installed (apt-get install -y chromium chromium-driver)"
    if not shutil.which("chromedriver"):
        return "chromedriver is not installed (apt-get install -y chromium-driver)"
    return None


def chrome(profile: Path, size: str = "1440,1000") -> Any:
    """A headless Chromium with a fresh profile in `profile` (the caller's to remove)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    opts = webdriver.ChromeOptions()
    for flag in CHROME_FLAGS:
        opts.add_argument(flag)
    opts.add_argument(f"--user-data-dir={profile}")
    opts.add_argument(f"--window-size={size}")
    opts.binary_location = shutil.which("chromium") or shutil.which("chromium-browser") or ""
    driver = webdriver.Chrome(options=opts, service=Service(shutil.which("chromedriver")))
    driver.set_page_load_timeout(60)
    return driver


class Served:
    """`git liza web --no-open --port 0` in `repo`, as a real subprocess; `.url` is the URL it
    printed."""

    def __init__(self, repo: Path, *args: str) -> None:
        env = {k: v for k, v in os.environ.items() if k != "LIZA_AGENT_ID"}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "gitliza", "web", "--no-open", "--port", "0", *args],
            cwd=repo, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        first = self.proc.stdout.readline()
        url = self.proc.stdout.readline().strip()
        if not url.startswith("http://"):
            self.close()
            err = self.proc.stderr.read() if self.proc.stderr else ""
            raise AssertionError(f"no URL: {first!r} {url!r} {err}")
        self.url = url
        self.base = url.split("/?")[0]

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
