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
        self.doc = doc
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

    def resolve(self, node: Any) -> Any:
        while isinstance(node, dict) and "$ref" in node:
            ref = str(node["$ref"])
            node = self.doc
            for part in ref.removeprefix("#/").split("/"):
                node = node[part]
        return node

    def schema(self, name: str) -> dict[str, Any]:
        got: dict[str, Any] = self.doc["components"]["schemas"][name]
        return got

    def sample(self, schema: Any, depth: int = 0) -> Any:
        """The smallest value `schema` accepts: its required properties only, a nullable one as
        null, the first of an enum or of anyOf/oneOf, allOf merged. The stand-in fills what it
        knows over this, so its answers carry every field GitHub's schemas require."""
        schema = self.resolve(schema)
        if not isinstance(schema, dict) or depth > 40:
            return None
        if "allOf" in schema:
            merged: dict[str, Any] = {}
            for part in schema["allOf"]:
                got = self.sample(part, depth + 1)
                if isinstance(got, dict):
                    merged.update(got)
            return merged
        for key in ("anyOf", "oneOf"):
            if key in schema:
                return self.sample(schema[key][0], depth + 1)
        if "enum" in schema:
            return next((v for v in schema["enum"] if v is not None), None)
        kind = schema.get("type")
        if kind == "object" or "properties" in schema:
            props = schema.get("properties", {})
            out: dict[str, Any] = {}
            for name in schema.get("required", []):
                sub = self.resolve(props.get(name, {}))
                out[name] = None if isinstance(sub, dict) and sub.get("nullable") else \
                    self.sample(sub, depth + 1)
            return out
        if kind == "array":
            return []
        if kind == "integer" or kind == "number":
            return int(schema.get("minimum", 1))
        if kind == "boolean":
            return False
        if kind == "string":
            fmt = schema.get("format", "")
            return {"date-time": "2026-01-01T00:00:00Z", "uri": "https://example.invalid/",
                    "email": "nobody@example.invalid", "date": "2026-01-01"}.get(fmt, "")
        return None

    def response_schema(self, method: str, template: str, code: int) -> Any:
        resp = self.resolve(self.doc["paths"][template][method]["responses"][str(code)])
        return resp["content"]["application/json"]["schema"]

    def operation(self, method: str, path: str) -> Operation | None:
        path = path.split("?", 1)[0]
        for rx, op in self._ops:
            if op.method == method.lower() and rx.match(path):
                return op
        return None


@functools.lru_cache(maxsize=4)
def load(path: Path) -> Description:
    return Description(path)
