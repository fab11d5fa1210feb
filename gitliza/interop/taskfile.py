"""A file of tasks for `git liza add --from FILE`: YAML, or Markdown with one `##`
heading per task. Each task remembers its line, so that every error names the place in the file.

YAML (a list, or a mapping with `tasks:`):

    tasks:
      - id: t1
        description: Retry get_user
        spec_ref: specs/retry.md
        done_when: get_user retries 3 times
        scope: api/users.py
        ready: true
      - id: t2
        description: Retry get_orders
        depends_on: [t1]          # or "t1, t0"
        labels: [security]        # a config quorum rule may raise its review quorum
        done_when:                # a list (or lines): the acceptance criteria, each of which
          - get_orders retries 3 times   # an approval gives evidence for
          - the log names each retry
        lock_scope: [api/orders.py, CHANGELOG.md]   # the paths it writes (docs/locks.md)
        needs: [gpu]                                # machine labels its claimer must offer

Markdown (the heading is `## ID: description`; `key: value` lines below it; other lines are
appended to the description):

    ## t1: Retry get_user
    spec_ref: specs/retry.md
    done_when: get_user retries 3 times
    scope: api/users.py
    ready: true
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from gitliza.core.ops.planning import NewTask
from gitliza.core.quorum import criteria_of
from gitliza.errors import ValidationError
from gitliza.interop.yamlload import Map, Seq, line_of, load

# File key -> NewTask field; the CLI's option words are accepted too.
_KEYS = {"id": "task", "task": "task", "description": "description", "desc": "description",
         "spec_ref": "spec_ref", "spec-ref": "spec_ref", "done_when": "done_when",
         "done-when": "done_when", "scope": "scope", "priority": "priority",
         "depends_on": "depends_on", "depends-on": "depends_on", "ready": "ready",
         "max_iterations": "max_iterations", "max-iterations": "max_iterations",
         "max_review_cycles": "max_review_cycles", "max-review-cycles": "max_review_cycles",
         "lease_duration_override": "lease_duration_override",
         "lease-duration-override": "lease_duration_override", "labels": "labels",
         "label": "labels", "lock_scope": "lock_scope", "lock-scope": "lock_scope",
         "needs": "needs"}
_INTS = ("priority", "max_iterations", "max_review_cycles", "lease_duration_override")
_TRUE, _FALSE = ("true", "yes", "1"), ("false", "no", "0")


@dataclass(frozen=True)
class TaskFile:
    name: str
    tasks: tuple[NewTask, ...]
    lines: dict[str, int]  # task id -> the line its entry starts on

    def place(self, message: str) -> str:
        """`message` prefixed with the file and line of the task it names (`task ID: ...`)."""
        m = re.match(r"task (\S+?):? ", message)
        line = self.lines.get(m.group(1)) if m else None
        return f"{self.name}:{line}: {message}" if line else f"{self.name}: {message}"


def read(text: str, name: str) -> TaskFile:
    """The tasks of a file; ValidationError with `name:line:` for the first problem."""
    if name.lower().endswith((".md", ".markdown")):
        return _markdown(text, name)
    doc = load(text, name)
    if isinstance(doc, Map) and "tasks" in doc:
        entries, where = doc["tasks"], line_of(doc, "tasks", 1)
    else:
        entries, where = doc, 1
    if not isinstance(entries, Seq) or not entries:
        raise ValidationError(f"{name}:{where}: expected a list of tasks (or `tasks:` and a list)",
                              hint="see `git liza add --help`")
    tasks: list[NewTask] = []
    lines: dict[str, int] = {}
    where = where or 1
    for i, entry in enumerate(entries):
        line = line_of(entries, i, where) or where
        if not isinstance(entry, Map):
            raise ValidationError(f"{name}:{line}: a task is a mapping (id, description, ...)")
        fields: dict[str, Any] = {}
        for key, value in entry.items():
            at = line_of(entry, key, line) or line
            field = _KEYS.get(str(key))
            if field is None:
                raise ValidationError(f"{name}:{at}: unknown key {key!r}",
                                      hint="known: " + ", ".join(sorted(set(_KEYS.values()))))
            fields[field] = _value(field, value, name, at)
        task = _task(fields, name, line)
        tasks.append(task)
        lines.setdefault(task.task, line)
    return TaskFile(name, tuple(tasks), lines)


def _value(field: str, value: Any, name: str, line: int) -> Any:
    if value is None:
        return None
    if field == "done_when" and isinstance(value, list):
        # A list of acceptance criteria: each one a line an approval gives evidence for.
        return tuple(str(x).strip() for x in value if str(x).strip())
    if field in ("depends_on", "labels", "lock_scope", "needs"):
        items = value if isinstance(value, list) else str(value).split(",")
        return tuple(str(x).strip() for x in items if str(x).strip())
    if field == "ready":
        if isinstance(value, bool):
            return value
        word = str(value).strip().lower()
        if word in _TRUE or word in _FALSE:
            return word in _TRUE
        raise ValidationError(f"{name}:{line}: ready must be true or false, got {value!r}")
    if field in _INTS:
        try:
            return int(str(value).strip())
        except ValueError:
            raise ValidationError(f"{name}:{line}: {field} must be an integer, got {value!r}") \
                from None
    if isinstance(value, (list, dict)):
        raise ValidationError(f"{name}:{line}: {field} must be text")
    return str(value)


def _task(fields: dict[str, Any], name: str, line: int) -> NewTask:
    for need in ("task", "description"):
        if not fields.get(need):
            what = "an id" if need == "task" else "a description"
            raise ValidationError(f"{name}:{line}: a task needs {what}")
    done = fields.get("done_when")
    if isinstance(done, tuple):
        fields["criteria"] = done
        fields["done_when"] = "\n".join(f"- {c}" for c in done) or None
    elif done:
        fields["criteria"] = criteria_of(done)
    return NewTask(**{k: v for k, v in fields.items() if v is not None})


_HEADING = re.compile(r"^##\s+([^\s:]+)\s*:?\s*(.*)$")
_FIELD = re.compile(r"^\s*[-*]?\s*([A-Za-z_-]+)\s*:\s*(.*)$")


def _markdown(text: str, name: str) -> TaskFile:
    tasks: list[NewTask] = []
    lines: dict[str, int] = {}
    current: dict[str, Any] | None = None
    start = 0
    extra: list[str] = []

    def flush() -> None:
        if current is None:
            return
        if extra:
            current["description"] = " ".join([current.get("description") or "", *extra]).strip()
        task = _task(current, name, start)
        tasks.append(task)
        lines.setdefault(task.task, start)
    for n, raw in enumerate(text.splitlines(), 1):
        heading = _HEADING.match(raw)
        if heading:
            flush()
            current, start, extra = {"task": heading.group(1)}, n, []
            if heading.group(2).strip():
                current["description"] = heading.group(2).strip()
            continue
        if current is None or not raw.strip():
            continue
        m = _FIELD.match(raw)
        field = _KEYS.get(m.group(1).lower()) if m else None
        if m and field is not None and field != "task":
            current[field] = _value(field, m.group(2).strip() or None, name, n)
        else:
            extra.append(raw.strip())
    flush()
    if not tasks:
        raise ValidationError(f"{name}:1: no task found (each starts with a `## ID: description` "
                              "heading)")
    return TaskFile(name, tuple(tasks), lines)
