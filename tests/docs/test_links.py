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


# A document named bare (`blackboard-schema.md`, DESIGN.md), not as a path or a link.
CITED = re.compile(r"(?<![\w/.\[-])([A-Za-z][A-Za-z0-9_-]*\.md)\b")


def test_every_document_a_page_cites_is_here_or_described() -> None:
    """Issue 36: pages cited design documents that are in neither the repository nor a link. A
    document named on a page is a file of the repository, or docs/references.md says what it is
    and which page carries it."""
    here = {p.name for p in ROOT.rglob("*.md") if ".venv" not in p.parts}
    described = set(re.findall(r"^### (\S+\.md)$", (ROOT / "docs" / "references.md")
                               .read_text("utf-8"), re.M))
    unknown = []
    for doc in MARKDOWN:
        for n, line in enumerate(doc.read_text("utf-8").splitlines(), 1):
            for name in CITED.findall(line):
                if name not in here and name not in described:
                    unknown.append(f"{doc.relative_to(ROOT)}:{n}: {name}")
    assert unknown == []
    assert {"blackboard-schema.md", "DESIGN.md", "sprint-governance.md"} <= described
    # and the references are not a dead end: each one is linked from some page
    linked = {t.split("#")[1] for doc in MARKDOWN for t in LINK.findall(doc.read_text("utf-8"))
              if t.startswith("references.md#")}
    assert {d.replace(".", "").lower() for d in described} - linked <= {
        "event-log-invariantsmd"}, linked


def test_the_readmes_list_of_pages_names_each_page_once() -> None:
    """Issue 36: the README's list of pages linked docs/security.md twice, with two blurbs."""
    heads = re.findall(r"^- \[[^\]]*\]\(([^)]+)\)", (ROOT / "README.md").read_text("utf-8"),
                       re.M)
    assert len(heads) > 10 and len(heads) == len(set(heads)), heads


def test_the_checks_find_what_they_look_for() -> None:
    """The patterns match the forms the docs use (a check that matches nothing proves nothing)."""
    assert LINK.findall("see [docs/agents.md](docs/agents.md#x) and [y](http://a)") == [
        "docs/agents.md#x", "http://a"]
    assert MENTION.findall("the demo (docs/DEMO.md), `docs/img/cli.png`, gitliza/docs/x.md") == [
        "docs/DEMO.md", "docs/img/cli.png"]
    assert CITED.findall("per DESIGN.md, `tooling.md`'s table, specs/vision.md, "
                         "[a.md](a.md)") == ["DESIGN.md", "tooling.md", "a.md"]
    readme = (ROOT / "README.md").read_text("utf-8")
    assert len(LINK.findall(readme)) > 10 and "docs/getting-started.md" in readme


def test_dev_py_help_names_every_example() -> None:
    """Issue 36: `dev.py --help` left out `example offline`; each example it runs is named."""
    import subprocess
    import sys
    out = subprocess.run([sys.executable, str(ROOT / "dev.py"), "--help"], capture_output=True,
                         text=True, timeout=60).stdout
    for name in ("walkthrough", "offline"):
        assert f"python3 dev.py example {name}" in out, out
    assert (ROOT / "examples" / "offline.py").is_file()
    # offline's --keep hint names the command that runs offline again, not the scripted team's
    offline = (ROOT / "examples" / "offline.py").read_text("utf-8")
    assert "python3 dev.py example offline --cli {args.cli} --keep" in offline
