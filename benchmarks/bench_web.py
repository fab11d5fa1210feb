"""`git liza web` at 1,000 tasks: page load, commit -> DOM latency, and the server's open files
and RSS over a long run.

    .venv/bin/python benchmarks/bench_web.py [--tasks 1000] [--rounds 20] [--long 1500]

Builds a throw-away repository whose board holds `--tasks` tasks made by real `add` ops (every
tenth depends on the one before), serves it with `git liza web` (a real subprocess) and drives it
with Debian's headless Chromium (tests/web/browser.py):
- page load: the board page over HTTP (bearer token, the whole HTML) and in the browser
  (navigation to the load event: HTML, CSS, script, first paint of every card);
- commit -> DOM: a task is added in process; the page's MutationObserver notes when its card is
  in the DOM (the ref watch, the event stream, the fragment fetch and render, the DOM swap);
- long run: `--long` more transitions with the page open (each one re-renders the board) and a
  task page, the timeline and the board loaded every 50; the server's open file descriptors and
  RSS sampled. The transitions add tasks (the board grows), or with `--steady` pause and resume
  (the board keeps its size, so memory that grows would be a leak).
Prints figures; no assertions.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchutil import project, show  # noqa: E402


COUNT_CARDS = "return document.querySelectorAll('.card').length"


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return -1


def fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tasks", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--long", type=int, default=1500)
    ap.add_argument("--steady", action="store_true",
                    help="long run of pause/resume (the board keeps its size) instead of adds")
    args = ap.parse_args()
    from gitliza.core.ops import Add, Register
    from gitliza.services.api import Liza
    from tests.web import browser
    why = browser.missing()
    if why:
        sys.exit(f"bench_web: {why}")
    root = Path(tempfile.mkdtemp(prefix="gitliza-bench-web-"))
    repo = root / "repo"
    repo.mkdir()
    human = project(repo, {"spec.md": "# spec\n"})
    human.do(Register, agent="p1", role="planner")
    planner = Liza.open(repo, "p1")
    started = time.perf_counter()
    for i in range(args.tasks):
        planner.do(Add, task=f"task-{i}", description=f"benchmark task {i}", spec_ref="spec.md",
                   done_when="done", scope="src", priority=1 + i % 5, ready=i % 7 != 0,
                   depends_on=(f"task-{i - 1}",) if i % 10 == 9 else ())
    print(f"board: {args.tasks} tasks by real add ops in {time.perf_counter() - started:.1f}s")

    served = browser.Served(repo)
    pid = served.proc.pid
    token = served.url.split("token=")[1]
    try:
        http = []
        size = 0
        for _ in range(args.rounds):
            req = urllib.request.Request(served.base + "/",
                                         headers={"Authorization": f"Bearer {token}"})
            t0 = time.perf_counter()
            with urllib.request.urlopen(req) as r:
                size = len(r.read())
            http.append((time.perf_counter() - t0) * 1000)
        show(f"board page over HTTP ({args.tasks} tasks, {size // 1024} KiB)", http)

        driver = browser.chrome(root / "chrome-profile")
        try:
            loads = []
            driver.get(served.url)
            for _ in range(max(3, args.rounds // 4)):
                driver.get(served.base + "/")
                loads.append(driver.execute_script(
                    "const n = performance.getEntriesByType('navigation')[0];"
                    "return n.loadEventEnd - n.startTime;"))
            show("board page in Chromium, navigation to load", loads)
            cards = driver.execute_script(COUNT_CARDS)
            print(f"cards in the DOM: {cards}")

            driver.execute_script("""
                window.__seen = {};
                new MutationObserver(() => {
                  for (const id of window.__want || []) {
                    if (!window.__seen[id] && document.querySelector(`[data-task="${id}"]`))
                      window.__seen[id] = Date.now();
                  }
                }).observe(document.getElementById('live'), {childList: true, subtree: true});
            """)
            from selenium.webdriver.support.ui import WebDriverWait
            lat = []
            for k in range(args.rounds):
                tid = f"lat-{k}"
                driver.execute_script(f"window.__want = ['{tid}']")
                t0 = time.time() * 1000
                planner.do(Add, task=tid, description="latency probe", spec_ref="spec.md",
                           done_when="done", scope="src", ready=True)
                seen = WebDriverWait(driver, 30, poll_frequency=0.02).until(
                    lambda d: d.execute_script(f"return window.__seen['{tid}']"))
                lat.append(seen - t0)
                time.sleep(0.2)
            show("commit -> card in the DOM", lat)

            print(f"server pid {pid}: start  fds {fds(pid):4}  RSS {rss_kb(pid) // 1024} MiB")
            from gitliza.core.ops.control import Pause, Resume
            for i in range(args.long):
                if args.steady:
                    human.do(Resume if i % 2 else Pause)
                else:
                    planner.do(Add, task=f"long-{i}", description="long run", spec_ref="spec.md",
                               done_when="done", scope="src", ready=True)
                if i % 50 == 49:
                    task = f"task-{i % args.tasks}" if args.steady else f"long-{i}"
                    for path in (f"/task/{task}", "/log", "/"):
                        req = urllib.request.Request(
                            served.base + path, headers={"Authorization": f"Bearer {token}"})
                        urllib.request.urlopen(req).read()
                if i % 250 == 249:
                    dom = driver.execute_script(COUNT_CARDS)
                    print(f"after {i + 1:5} transitions: fds {fds(pid):4}  "
                          f"RSS {rss_kb(pid) // 1024} MiB  "
                          f"DOM cards {dom}")
        finally:
            driver.quit()
    finally:
        served.close()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
