"""The scripted model's mind: which tool call (or final answer) comes next in a conversation.

Each wire dialect (modelserver.py) turns a request into a `Conversation` (the texts the CLI sent,
the tool calls the model made so far with their results, the tools on offer) and renders the
`Step` returned here in the CLI's own tool vocabulary. The roles are scripts replayed from the
start on every request (generators fed the earlier results), so the server keeps no session
state: what the CLI sends back is the whole truth, as for a real model.

The roles act like a careful LLM agent given gitliza's prompt:
- planner: reads specs/vision.md, adds one task per file the vision names (`add ... --ready`);
- coder: reads its task from the board, writes the file, commits, submits; a task listed in
  `Script.hurried` gets a first draft without its trailing line (the reviewer's blocker);
- reviewer: checks HEAD, reads the file at the review commit, rejects when the trailing line
  the task's done_when asks for is missing (or, for Python code, when its tests fail), else
  approves.
For examples/team.py's hello-CLI vision the planner adds the two tasks a model would (the `hello`
package with greet(), then the `--name` command line, with tests) and the coder writes canned
files found by the task's description (`HELLO`).
Board operations go through gitliza's MCP tools when the CLI offers them, else through the shell.
"""
from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass, field
from typing import Any, Callable, Generator

LIZA_MARK = "You are a Liza "  # the first words of every gitliza prompt (core/agents/prompts.py)
SIGN = "-- liza"  # the trailing line every file must end with (the reviewer's blocker)


@dataclass
class Call:
    """A tool call the model made earlier in the conversation, and what the CLI answered."""

    name: str
    args: dict[str, Any]
    result: str = ""


@dataclass
class Conversation:
    texts: list[str]  # system and user texts, in order
    calls: list[Call]
    tools: dict[str, dict[str, Any]]  # tool name -> its declaration as the CLI sent it

    @property
    def prompt(self) -> str | None:
        """The gitliza prompt as the CLI passed it on (the text block that holds it)."""
        for t in self.texts:
            if LIZA_MARK in t:
                return t
        return None


@dataclass(frozen=True)
class Shell:
    command: str
    cwd: str | None = None  # where the command should run (for CLIs whose shell tool takes one)


@dataclass(frozen=True)
class Write:
    path: str  # absolute
    text: str


@dataclass(frozen=True)
class Read:
    path: str  # absolute


@dataclass(frozen=True)
class Board:
    """A gitliza operation: the MCP tool `tool` with `args` when offered, else `shell`."""

    tool: str
    args: dict[str, Any]
    shell: str


@dataclass(frozen=True)
class Wait:
    """Wait for an MCP server that is still connecting (not a step of the role's script)."""

    server: str
    query: str = ""  # what to search for (Codex's tool_search)


# Claude Code's wait for MCP servers still connecting; Codex's search for deferred (MCP) tools.
WAIT_TOOLS = ("WaitForMcpServers", "tool_search")


@dataclass(frozen=True)
class Discover:
    """Vibe's search for the functions a `run_typescript` program may call: ranked names for a
    query (best_match), or the declarations of exact names (details)."""

    query: str
    functions: tuple[str, ...] = ()


@dataclass(frozen=True)
class Program:
    """A `run_typescript` program that calls one tool function (`group.function`) and returns
    its result: how Vibe's unified harness lets a model reach MCP tools."""

    function: str
    args: dict[str, Any]


# Vibe 3's unified harness lists no MCP tool directly: a model finds `gitliza.show` with
# search_tool_functions and calls it from a run_typescript program.
SEARCH_TOOL, PROGRAM_TOOL = "search_tool_functions", "run_typescript"
DISCOVERY_TOOLS = (*WAIT_TOOLS, SEARCH_TOOL)


@dataclass(frozen=True)
class Final:
    text: str


Step = Shell | Read | Write | Board | Wait | Discover | Program | Final
Script = Generator[Step, str, None]


@dataclass
class Policy:
    """What the scripted team does beyond the prompt (set by the test)."""

    hurried: set[str] = field(default_factory=lambda: {"hello"})  # first drafts miss SIGN


def field_of(text: str, name: str) -> str | None:
    m = re.search(rf"^{re.escape(name)}: (.*)$", text, re.M)
    return m.group(1).strip() if m else None


def role_of(prompt: str) -> str | None:
    m = re.search(r"You are a Liza (planner|coder|code-reviewer) agent", prompt)
    return m.group(1) if m else None


def q(s: str) -> str:
    return shlex.quote(s)


# -- the roles ------------------------------------------------------------------------------------

VISION_ITEM = re.compile(r"^\d+\. `([\w.-]+)` holds `([^`]*)`", re.M)


def planner(prompt: str, policy: Policy) -> Script:
    root = field_of(prompt, "PROJECT") or "."
    vision = yield Shell(f"cat {q(root + '/specs/vision.md')}", root)
    if HELLO_VISION in vision:
        yield from plan_hello()
        return
    items = VISION_ITEM.findall(vision)
    if not items:
        yield Final(f"The vision names no files to create; nothing planned. I read:\n{vision}")
        return
    for name, text in items:
        task = name.split(".")[0].replace("_", "-")
        desc = f"Create {name} holding the line: {text}"
        done = f"{name} holds `{text}` and ends with the line `{SIGN}`"
        args = {"task": task, "description": desc, "spec_ref": "specs/vision.md",
                "done_when": done, "scope": name, "priority": 2, "ready": True}
        yield Board("add", args,
                    f"git liza add {task} --desc {q(desc)} --spec-ref specs/vision.md "
                    f"--done-when {q(done)} --scope {q(name)} --priority 2 --ready")
    yield Final(f"Planned {len(items)} task(s) from specs/vision.md.")


def coder(prompt: str, policy: Policy) -> Script:
    task = field_of(prompt, "TASK ID") or ""
    wt = field_of(prompt, "WORKTREE") or "."
    shown = yield Board("show", {"task": task}, f"git liza show {q(task)} --json")
    known = next((t for t in HELLO if t.description in shown or t.description in prompt), None)
    if known is not None:
        yield from write_and_submit(task, wt, known.files)
        return
    m = re.search(r"Create ([\w.-]+) holding the line: ([^\"\n]*)", shown) or \
        re.search(r"Create ([\w.-]+) holding the line: ([^\n]*)", prompt)
    if m is None:
        yield Final(f"I could not read task {task}: {shown[:300]}")
        return
    name, text = m.group(1), m.group(2).strip()
    fixing = "PRIOR REJECTION FEEDBACK" in prompt
    body = text + "\n" if task in policy.hurried and not fixing else f"{text}\n{SIGN}\n"
    if fixing:  # the file is there from the first draft: look before overwriting it
        yield Read(f"{wt}/{name}")
    yield Write(f"{wt}/{name}", body)
    yield Shell(f"git add {q(name)}", wt)
    yield Shell(f"git commit -q -m {q(f'{task}: {name}')}", wt)
    yield Board("submit", {"task": task}, f"git liza submit {q(task)}")
    yield Final(f"Submitted {task} for review.")


def reviewer(prompt: str, policy: Policy) -> Script:
    task = field_of(prompt, "TASK ID") or ""
    wt = field_of(prompt, "WORKTREE") or "."
    base = field_of(prompt, "BASE COMMIT") or ""
    commit = field_of(prompt, "REVIEW COMMIT") or ""
    head = yield Shell(f"git -C {q(wt)} rev-parse HEAD", wt)
    blockers: list[str] = []
    if commit not in head:
        blockers.append(f"- [blocker] HEAD - worktree HEAD is not the review commit {commit}")
    changed = yield Shell(f"git -C {q(wt)} diff --name-only {base}..{commit}", wt)
    files = [f for f in changed.split() if re.fullmatch(r"[\w./-]+\.(txt|py)", f)]
    if not files:
        blockers.append("- [blocker] (none) - the change holds no file of the task")
    for f in [f for f in files if f.endswith(".txt")]:
        shown = yield Shell(f"git -C {q(wt)} show {commit}:{f}", wt)
        if SIGN not in shown:
            n = len([ln for ln in shown.splitlines() if ln.strip()]) + 1
            blockers.append(f"- [blocker] {f}:{n} - the trailing line `{SIGN}` is missing\n"
                            f"  Why it matters: done_when asks for it\n"
                            f"  Suggestion: end the file with the line `{SIGN}`")
    if any(f.endswith(".py") for f in files):  # code: run its tests at the review commit
        ran = yield Shell(f"cd {q(wt)} && python3 -m unittest discover -s tests -t . 2>&1 | "
                          f"tail -n 3", wt)
        if not re.search(r"^OK\b", ran, re.M):
            blockers.append(f"- [blocker] tests - the tests fail at {commit}:\n  {ran.strip()}")
    if blockers:
        reason = (f"Blockers: {len(blockers)}\n" + "\n".join(blockers) +
                  "\n\nConcerns: 0\n\nOverall: close, but done_when is not met yet.")
        yield Board("verdict", {"task": task, "verdict": "reject", "commit": commit,
                                "reason": reason},
                    f"git liza verdict {q(task)} reject --commit {commit} --reason {q(reason)}")
        yield Final(f"Rejected {task}: {len(blockers)} blocker(s).")
        return
    yield Board("verdict", {"task": task, "verdict": "approve", "commit": commit},
                f"git liza verdict {q(task)} approve --commit {commit}")
    yield Final(f"Approved {task}.")


# -- the hello-CLI demo (examples/team.py's vision): a real model's plan and files, canned ------

HELLO_VISION = "Command: `hello` (or `python -m hello`)"


@dataclass(frozen=True)
class HelloTask:
    id: str
    description: str  # what the planner writes; the coder finds its files by it
    done_when: str
    scope: str
    files: dict[str, str]
    depends_on: tuple[str, ...] = ()


HELLO = (
    HelloTask(
        "greeting", "The hello package: greet(name) in hello/__init__.py, with unit tests",
        "greet() returns 'Hello, World!' and greet('Alice') returns 'Hello, Alice!', covered by "
        "tests in tests/", "hello/__init__.py, tests/", {
            "hello/__init__.py": '"""A greeting for the command line."""\n\n\n'
                                 'def greet(name="World"):\n'
                                 '    return "Hello, {}!".format(name)\n',
            "tests/__init__.py": '"""The tests of the hello package."""\n',
            "tests/test_greeting.py": "import unittest\n\nfrom hello import greet\n\n\n"
                                      "class GreetTest(unittest.TestCase):\n"
                                      "    def test_default(self):\n"
                                      "        self.assertEqual(greet(), 'Hello, World!')\n\n"
                                      "    def test_name(self):\n"
                                      "        self.assertEqual(greet('Alice'), 'Hello, Alice!')\n"}),
    HelloTask(
        "cli", "The command line: hello/__main__.py parses --name and prints greet(name)",
        "`python -m hello` prints 'Hello, World!', `python -m hello --name Bob` prints "
        "'Hello, Bob!', exit 0, covered by tests that run the module", "hello/__main__.py", {
            "hello/__main__.py": "import argparse\nimport sys\n\nfrom hello import greet\n\n\n"
                                 "def main(argv=None):\n"
                                 "    parser = argparse.ArgumentParser(prog='hello')\n"
                                 "    parser.add_argument('--name', default='World')\n"
                                 "    print(greet(parser.parse_args(argv).name))\n"
                                 "    return 0\n\n\n"
                                 "if __name__ == '__main__':\n    sys.exit(main())\n",
            "tests/test_cli.py": "import subprocess\nimport sys\nimport unittest\n"
                                 "from pathlib import Path\n\n"
                                 "ROOT = Path(__file__).resolve().parent.parent\n\n\n"
                                 "def run(*args):\n"
                                 "    return subprocess.run([sys.executable, '-m', 'hello', *args],"
                                 " cwd=ROOT,\n"
                                 "                          capture_output=True, text=True)\n\n\n"
                                 "class CliTest(unittest.TestCase):\n"
                                 "    def test_default(self):\n"
                                 "        r = run()\n"
                                 "        self.assertEqual((r.returncode, r.stdout), "
                                 "(0, 'Hello, World!\\n'))\n\n"
                                 "    def test_name(self):\n"
                                 "        r = run('--name', 'Bob')\n"
                                 "        self.assertEqual((r.returncode, r.stdout), "
                                 "(0, 'Hello, Bob!\\n'))\n"},
        depends_on=("greeting",)),
)


def plan_hello() -> Script:
    for t in HELLO:
        args: dict[str, Any] = {"task": t.id, "description": t.description,
                                "spec_ref": "specs/vision.md", "done_when": t.done_when,
                                "scope": t.scope, "priority": 1 + len(t.depends_on),
                                "ready": True}
        deps = ""
        if t.depends_on:
            args["depends_on"] = list(t.depends_on)
            deps = "".join(f" --depends-on {q(d)}" for d in t.depends_on)
        yield Board("add", args,
                    f"git liza add {t.id} --desc {q(t.description)} --spec-ref specs/vision.md "
                    f"--done-when {q(t.done_when)} --scope {q(t.scope)} "
                    f"--priority {args['priority']} --ready{deps}")
    yield Final(f"Planned {len(HELLO)} tasks from specs/vision.md.")


def write_and_submit(task: str, wt: str, files: dict[str, str]) -> Script:
    for path, text in files.items():
        yield Write(f"{wt}/{path}", text)
    yield Shell("git add " + " ".join(q(p) for p in files), wt)
    yield Shell(f"git commit -q -m {q(f'{task}: ' + ', '.join(files))}", wt)
    yield Board("submit", {"task": task}, f"git liza submit {q(task)}")
    yield Final(f"Submitted {task} for review.")


ROLES: dict[str, Callable[[str, Policy], Script]] = {
    "planner": planner, "coder": coder, "code-reviewer": reviewer}


def next_step(conv: Conversation, policy: Policy) -> Step:
    """Replay the role's script over the results so far; the step after the last one."""
    prompt = conv.prompt
    if prompt is None:
        return Final("OK.")  # a side request of the CLI (a title, a summary): answer briefly
    role = role_of(prompt)
    if role is None:
        return Final("I do not know this role.")
    script = ROLES[role](prompt, policy)
    calls = [c for c in conv.calls if c.name not in DISCOVERY_TOOLS]
    try:
        step = next(script)
        for call in calls:
            step = script.send(call.result)
    except StopIteration:
        return Final("Done.")
    if isinstance(step, Board) and not any("gitliza" in n for n in conv.tools) and \
            any(n in conv.tools for n in WAIT_TOOLS) and len(calls) == len(conv.calls):
        # Claude Code starts the turn while MCP servers still connect and offers a tool to wait
        # for them; Codex defers MCP tools behind `tool_search`. A model that wants gitliza's
        # tools calls that (once), as its description says.
        return Wait("gitliza", f"gitliza {step.tool} {step.tool.replace('_', ' ')}")
    if isinstance(step, Board) and not any("gitliza" in n for n in conv.tools) and \
            SEARCH_TOOL in conv.tools and PROGRAM_TOOL in conv.tools:
        return through_program(step, conv.calls)
    return step


def through_program(step: Board, calls: list[Call]) -> Step:
    """Vibe: search for gitliza's function, read its declaration, then call it from a program,
    as the tools' descriptions ask; the shell when the search finds no such function."""
    query = f"gitliza {step.tool.replace('_', ' ')}"
    searches = [c for c in calls if c.name == SEARCH_TOOL]
    ranked = [c for c in searches if c.args.get("query") == query and
              c.args.get("mode", "best_match") == "best_match"]
    if not ranked:
        return Discover(query)
    fn = re.compile(rf"\b([\w-]*gitliza[\w-]*\.{re.escape(step.tool)})\b")
    m = fn.search(ranked[-1].result)
    if m is None:
        return Shell(step.shell)
    name = m.group(1)
    if not any(name in c.args.get("functions", ()) for c in searches):
        return Discover(query, (name,))
    return Program(name, step.args)


def results_text(value: Any) -> str:
    """A tool result as text, whatever shape the CLI gave it."""
    if isinstance(value, str):
        if value.startswith("{"):  # Vibe's bash gives {"command", "stdout", "stderr", ...}
            try:
                decoded = json.loads(value)
            except ValueError:
                return value
            if isinstance(decoded, dict) and "stdout" in decoded:
                return str(decoded["stdout"]) + str(decoded.get("stderr") or "")
        return value
    if isinstance(value, list):
        return "\n".join(results_text(v) for v in value)
    if isinstance(value, dict):
        for k in ("text", "output", "content", "result", "response", "stdout"):
            if k in value:
                return results_text(value[k])
        return json.dumps(value)
    return "" if value is None else str(value)
