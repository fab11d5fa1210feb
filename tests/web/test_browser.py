"""The board in a real browser (Debian's headless Chromium): every column fits at 1,400 px, a
transition made from the command line shows without a reload, a task's diff shows, and an action on the page moves the board.
Skips with one line where Chromium, chromedriver or selenium is missing."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

import pytest

from tests.conftest import git
from tests.web import browser
from tests.web.board import cli

WHY = browser.missing()
pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(WHY is not None, reason=WHY or "")]


@pytest.fixture
def page(review_board: Path, tmp_path: Path) -> Iterator[tuple[Any, browser.Served]]:
    served = browser.Served(review_board)
    driver = browser.chrome(tmp_path / "chrome-profile")
    try:
        yield driver, served
    finally:
        driver.quit()
        served.close()


def wait_for(driver: Any, script: str, timeout: float = 30) -> Any:
    from selenium.webdriver.support.ui import WebDriverWait
    return WebDriverWait(driver, timeout, poll_frequency=0.1).until(
        lambda d: d.execute_script(script))


@pytest.mark.timeout(300)
def test_live_board_diff_and_an_action(review_board: Path,
                                       page: tuple[Any, browser.Served]) -> None:
    driver, served = page
    driver.get(served.url)
    wait_for(driver, "return document.getElementById('conn').classList.contains('on')")
    assert driver.execute_script("return location.search") == ""  # the token left the address
    # 0. At 1,400 px every column is in view, MERGED and the two after it included: no
    # horizontal scroll, no column past the window's edge, no state name cut off.
    driver.set_window_size(1400, 1000)
    wait_for(driver, "return window.innerWidth <= 1400")
    width = driver.execute_script("return window.innerWidth")
    cols = driver.execute_script(
        "return [...document.querySelectorAll('.col')].map(c => { const r = "
        "c.getBoundingClientRect(), h = c.querySelector('h3'); return [c.dataset.state, "
        "r.left, r.right, h.scrollWidth <= h.clientWidth]; })")
    assert [c[0] for c in cols][-3:] == ["MERGED", "SUPERSEDED", "ABANDONED"]
    assert all(c[1] >= 0 and c[2] <= width and c[3] for c in cols), (width, cols)
    assert driver.execute_script(
        "return document.documentElement.scrollWidth <= document.documentElement.clientWidth")
    driver.execute_script("window.__noReload = 42")
    column = ("return [...document.querySelectorAll('.col')].find(c => "
              "c.querySelector('[data-task=\"t2\"]'))?.dataset.state")
    assert driver.execute_script(column) == "UNCLAIMED"

    # 1. A transition from the command line shows without a reload.
    cli(review_board, "abandon", "t2", "--reason", "from the terminal")
    wait_for(driver, column + " === 'ABANDONED'")
    assert driver.execute_script("return window.__noReload") == 42

    # 2. A task's diff.
    driver.get(f"{served.base}/task/t1")
    files = driver.execute_script(
        "return [...document.querySelectorAll('details.file summary code')]"
        ".map(e => e.textContent)")
    assert "app.py" in files
    assert "return f'hello {name}'" in driver.execute_script(
        "return document.querySelector('details.file .hl').textContent")

    # 3. An action moves the board (and the page follows without a reload).
    driver.get(served.url.split("?")[0])
    wait_for(driver, "return document.getElementById('conn').classList.contains('on')")
    driver.execute_script("window.__noReload = 43")
    before = git(review_board, "rev-parse", "refs/liza/state")
    driver.find_element("css selector", 'form[action="/action/pause"] input[name="reason"]') \
        .send_keys("from the browser")
    driver.find_element("css selector", 'form[action="/action/pause"] button').click()
    wait_for(driver, "return !!document.querySelector('.flag') && "
                     "document.querySelector('.flag').textContent.includes('PAUSED')")
    assert driver.execute_script("return window.__noReload") == 43
    assert git(review_board, "rev-parse", "refs/liza/state") != before
    assert git(review_board, "log", "-1", "--format=%an %s", "refs/liza/state").startswith("human")
    # An error: the CLI's one line in the flash, and the board stays.
    before = git(review_board, "rev-parse", "refs/liza/state")
    driver.execute_script(
        "const f = document.createElement('form'); f.className = 'action'; f.method = 'post';"
        "f.action = '/action/unblock'; f.innerHTML = '<input name=task value=t4>"
        "<button>go</button>'; document.getElementById('live').appendChild(f);"
        "f.querySelector('button').click();")
    wait_for(driver, "return document.getElementById('flash').classList.contains('bad')")
    flash = driver.execute_script("return document.getElementById('flash').textContent")
    assert flash == cli(review_board, "unblock", "t4", check=False).stderr.strip()
    assert git(review_board, "rev-parse", "refs/liza/state") == before
    cli(review_board, "resume")


@pytest.mark.timeout(300)
def test_a_second_goals_board_in_the_browser(repo: Path, tmp_path: Path) -> None:
    """Issue 36: after a stop and on a second goal, the board in Chromium: the header and the
    columns are goal-2's, the stopped supervisor says so, and goal-1's tasks are one click away.
    GITLIZA_SCREENSHOTS=DIR keeps the two screenshots (to look at them)."""
    import os
    from tests.web.goals import second_goal_board
    second_goal_board(repo)
    served = browser.Served(repo)
    driver = browser.chrome(tmp_path / "chrome-profile")
    shots = os.environ.get("GITLIZA_SCREENSHOTS")
    try:
        driver.get(served.url)
        wait_for(driver, "return document.getElementById('conn').classList.contains('on')")
        assert "Second goal" in driver.execute_script("return document.querySelector('h1')"
                                                      ".textContent")
        merged = ("return document.querySelector('.col[data-state=\"MERGED\"] .count')"
                  ".textContent")
        assert driver.execute_script(merged) == "0"
        assert driver.execute_script("return document.querySelector('.live.stopped')"
                                     ".textContent") == "stopped"
        if shots:
            driver.save_screenshot(str(Path(shots) / "board-goal2-after-stop.png"))
        driver.find_element("css selector", 'a[href="/?goals=all"]').click()
        wait_for(driver, "return !!document.querySelector('[data-task=\"t1\"]')")
        assert driver.execute_script(merged) == "1"
        if shots:
            driver.save_screenshot(str(Path(shots) / "board-goal2-every-goal.png"))
            driver.get(f"{served.base}/pictures")
            driver.save_screenshot(str(Path(shots) / "burndown-goal2.png"))
    finally:
        driver.quit()
        served.close()
