"""What GitHub's OpenAPI description declares: which operation a request is, which status codes
and response headers that operation declares. Read once per process (13 MB of JSON, ~0.5 s)."""
from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Operation:
    method: str  # lower case
    template: str  # "/repos/{owner}/{repo}/pulls"
    responses: dict[str, list[str]] = field(default_factory=dict)  # code -> declared header names

    def declares(self, code: int) -> bool:
        return str(code) in self.responses


class Description:
    def __init__(self, path: Path) -> None:
        doc: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        shared = doc.get("components", {}).get("responses", {})
        self.version: str = str(doc.get("info", {}).get("version", ""))
        self._ops: list[tuple[re.Pattern[str], Operation]] = []
        for template, item in doc["paths"].items():
            rx = re.compile("^" + re.sub(r"\\\{[^}]+\\\}", "[^/]+", re.escape(template)) + "$")
            for method, op in item.items():
                if not isinstance(op, dict) or "responses" not in op:
                    continue
                codes: dict[str, list[str]] = {}
                for code, resp in op["responses"].items():
                    if "$ref" in resp:
                        resp = shared.get(resp["$ref"].rsplit("/", 1)[-1], {})
                    codes[code] = sorted(h.lower() for h in resp.get("headers") or {})
                self._ops.append((rx, Operation(method, template, codes)))
        # A literal segment beats a parameter (GitHub's router, and Prism's, do the same):
        # /repos/{owner}/{repo}/pulls/comments before /repos/{owner}/{repo}/pulls/{pull_number}.
        self._ops.sort(key=lambda t: t[1].template.count("{"))

    def operation(self, method: str, path: str) -> Operation | None:
        path = path.split("?", 1)[0]
        for rx, op in self._ops:
            if op.method == method.lower() and rx.match(path):
                return op
        return None


@functools.lru_cache(maxsize=4)
def load(path: Path) -> Description:
    return Description(path)
