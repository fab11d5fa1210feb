"""Output: one JSON document with --json; rich tables and colour on a terminal; plain text when
piped; no colour with NO_COLOR. rich is imported only when a terminal will see it (it is slow to
import and a piped command does not need it)."""
from __future__ import annotations

import os
import sys
from typing import Any, Iterable, Sequence

from gitliza.core.terminal import is_safe_line, safe, safe_line


class Out:
    def __init__(self, json_mode: bool = False) -> None:
        self.json_mode = json_mode
        self.tty = sys.stdout.isatty()
        self.color = self.tty and "NO_COLOR" not in os.environ

    def json(self, data: Any) -> None:
        import json

        global json_written
        sys.stdout.write(json.dumps(data, indent=2, sort_keys=False, default=str) + "\n")
        json_written = True

    # Human output carries board text (descriptions, notes, reasons): hostile input, so every
    # control character is shown escaped (core/terminal.py). JSON escapes them by itself.
    def line(self, text: str = "") -> None:
        sys.stdout.write(safe(text) + "\n")

    def result(self, data: Any, text: str) -> None:
        """A command's result: `data` as JSON with --json, else the human line(s)."""
        if self.json_mode:
            self.json(data)
        else:
            self.line(text)

    def notice(self, text: str) -> None:
        sys.stderr.write(f"gitliza: {safe(text)}\n")

    def table(self, title: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
        if self.tty:
            from rich.console import Console
            from rich.table import Table
            from rich.text import Text
            table = Table(title=safe_line(title), show_lines=False, header_style="bold")
            for c in columns:
                table.add_column(c)
            for r in rows:  # Text: a cell is never rich markup (`[link=...]`)
                table.add_row(*[Text("" if v is None else safe_line(str(v))) for v in r])
            Console(no_color=not self.color).print(table)
            return
        if title:
            self.line(safe_line(title))
        # Each cell made text once, the lines written as one string (`status` on a big board
        # prints thousands of rows).
        cells = [["" if v is None else str(v) for v in r] for r in rows]
        if not is_safe_line("".join(map("".join, cells))):  # one search for the lot
            cells = [[safe_line(c) for c in r] for r in cells]
        widths = [max(len(c), *map(len, col)) if col else len(c)
                  for c, col in zip(columns, list(zip(*cells)) or [()] * len(columns))]
        fmt = "  ".join(f"{{:<{w}}}" for w in widths)
        lines = [fmt.format(*columns).rstrip()]
        lines += [fmt.format(*r).rstrip() for r in cells]
        sys.stdout.write("\n".join(lines) + "\n")


# A command printed its JSON document (a failure after it, e.g. a merge whose integration test
# failed, does not print a second one).
json_written = False


def err(text: str) -> None:
    sys.stderr.write(f"gitliza: error: {safe(text)}\n")


def pager_command(configured: str | None = None) -> str | None:
    """The pager git would use: $GIT_PAGER, else core.pager (`configured`), else $PAGER, else
    less; None when stdout is not a terminal or the pager is empty or `cat` (git's rules)."""
    if not sys.stdout.isatty():
        return None
    for found in (os.environ.get("GIT_PAGER"), configured, os.environ.get("PAGER")):
        if found is not None:
            return None if found.strip() in ("", "cat") else found
    return "less"


def page(lines: Iterable[str], pager: str | None) -> None:
    """Write `lines`, through `pager` when there is one (pager_command), as git pages: run by the
    shell, with LESS=FRX (quit if one screen, raw colours, no clearing) and LV=-c unless set.
    The lines are fed as they come, so a long history shows its first page at once; quitting the
    pager early ends the command quietly."""
    if pager is None:
        for line in lines:
            sys.stdout.write(safe_line(line) + "\n")
        return
    import subprocess
    sys.stdout.flush()
    env = dict(os.environ)
    env.setdefault("LESS", "FRX")
    env.setdefault("LV", "-c")
    proc = subprocess.Popen(pager, shell=True, stdin=subprocess.PIPE, env=env, text=True,
                            encoding="utf-8", errors="replace")
    assert proc.stdin is not None
    try:
        for line in lines:
            proc.stdin.write(safe_line(line) + "\n")
        proc.stdin.close()
    except BrokenPipeError:  # the reader quit the pager before the end
        pass
    finally:
        try:
            proc.stdin.close()
        except BrokenPipeError:
            pass
        proc.wait()

