"""The task page of a task with acceptance criteria (issue 49): the criteria as a list, each
approval's evidence under its criterion, a path's evidence a link into the approved commit
(that file, its line anchored); the file view serves only the task's review commits. Through
the app, and looked at in headless Chromium."""
from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest

from tests.services.test_lifecycle import claimed, commit_file, ok, setup_board
from tests.web import browser
from tests.web.conftest import authed, client

DONE = "- hello.py prints hello\n- the test passes"


def _voted(repo: Path) -> str:
    setup_board(repo, tasks=())
    ok(repo, "add", "t1", "--desc", "hello", "--spec-ref", "spec.md", "--done-when", DONE,
       "--scope", "src", "--ready", agent="p1")
    ok(repo, "config", "review_quorum", "2")
    wt = Path(claimed(repo, "t1", "c1")["worktree"])
    sha = commit_file(wt, "hello.py", "import sys\nprint('hello')\n")
    ok(repo, "submit", "t1", agent="c1")
    ok(repo, "claim-review", "t1", agent="r1")
    digest = "sha256:" + hashlib.sha256(b"hello\n").hexdigest()
    ok(repo, "verdict", "t1", "approve", "--evidence", "1=path:hello.py:2",
       "--evidence", f"2=command:python hello.py@{digest}", agent="r1")
    return sha


def test_criteria_and_evidence_on_the_task_page(repo: Path) -> None:
    sha = _voted(repo)
    with client(repo) as c:
        authed(c)
        page = c.get("/task/t1").text
        crit = re.search(r'<ol class="criteria">(.*?)</ol></section>', page, re.S)
        assert crit is not None
        items = re.findall(r'<li class="criterion">', crit.group(1))
        assert len(items) == 2 and "hello.py prints hello" in crit.group(1)
        link = f"/task/t1/file/{sha}/hello.py#L2"
        assert f'href="{link}"' in crit.group(1)
        assert "command <code>python hello.py</code>" in crit.group(1)
        f = c.get(link.split("#")[0])
        assert f.status_code == 200 and 'id="L2"' in f.text and "print(&#x27;hello&#x27;)" in f.text
        # Only the task's review commits, only files in them.
        base = ok(repo, "show", "t1")["base_commit"]
        assert c.get(f"/task/t1/file/{base}/spec.md").status_code == 404
        assert c.get(f"/task/t1/file/{sha}/../.git/config").status_code == 404
        assert c.get(f"/task/t1/file/{sha}/nope.py").status_code == 404


WHY = browser.missing()


@pytest.mark.slow
@pytest.mark.skipif(WHY is not None, reason=WHY or "")
@pytest.mark.timeout(300)
def test_the_evidence_link_in_chromium(repo: Path, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait
    _voted(repo)
    served = browser.Served(repo)
    driver = browser.chrome(tmp_path / "chrome-profile")
    try:
        driver.get(served.url)
        driver.get(served.base + "/task/t1")
        items = driver.find_elements(By.CSS_SELECTOR, "ol.criteria > li.criterion")
        assert [i.find_element(By.CSS_SELECTOR, ".text").text for i in items] == [
            "hello.py prints hello", "the test passes"]
        assert "r1" in items[0].text and "hello.py:2" in items[0].text
        items[0].find_element(By.CSS_SELECTOR, "a.ev").click()
        WebDriverWait(driver, 30).until(lambda d: d.execute_script("return location.hash")
                                        == "#L2")
        line = driver.find_element(By.ID, "L2")
        assert "print('hello')" in line.text and line.is_displayed()
    finally:
        driver.quit()
        served.close()
