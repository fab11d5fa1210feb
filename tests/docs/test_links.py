"""Every link of the documentation resolves (issue 27: README.md and docs/agents.md cited a
docs/DEMO.md that never existed): the Markdown links of README.md, CONTRIBUTING.md and docs/,
and every `docs/...` path the docs, the examples and the package's messages name."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MARKDOWN = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").rglob("*.md"))]
# Files whose text names docs paths a reader follows (tests are left out: their paths are data).
MENTIONS = MARKDOWN + sorted((ROOT / "examples").rglob("*.py")) + sorted(
    (ROOT / "gitliza").rglob("*.py")) + [ROOT / "dev.py"]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
MENTION = re.compile(r"(?<![\w/.-])docs/[A-Za-z0-9_./-]*[A-Za-z0-9_-]\.(?:md|png|svg|yml|yaml)")


def test_every_markdown_link_resolves() -> None:
    broken = []
    for doc in MARKDOWN:
        for n, line in enumerate(doc.read_text("utf-8").splitlines(), 1):
            for target in LINK.findall(line):
                if re.match(r"[a-z]+:", target) or target.startswith("#"):
                    continue  # a URL or an anchor in the same page
                path = (doc.parent / target.split("#")[0]).resolve()
                if not path.exists():
                    broken.append(f"{doc.relative_to(ROOT)}:{n}: {target}")
    assert broken == []


def test_every_docs_path_named_exists() -> None:
    missing = []
    for f in MENTIONS:
        for n, line in enumerate(f.read_text("utf-8").splitlines(), 1):
            for path in MENTION.findall(line):
                if not (ROOT / path).exists():
                    missing.append(f"{f.relative_to(ROOT)}:{n}: {path}")
    assert missing == []


def test_the_checks_find_what_they_look_for() -> None:
    """The patterns match the forms the docs use (a check that matches nothing proves nothing)."""
    assert LINK.findall("see [docs/agents.md](docs/agents.md#x) and [y](http://a)") == [
        "docs/agents.md#x", "http://a"]
    assert MENTION.findall("the demo (docs/DEMO.md), `docs/img/cli.png`, gitliza/docs/x.md") == [
        "docs/DEMO.md", "docs/img/cli.png"]
    readme = (ROOT / "README.md").read_text("utf-8")
    assert len(LINK.findall(readme)) > 10 and "docs/getting-started.md" in readme
