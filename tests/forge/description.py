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
        self._registry: Any = None
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

    def sample(self, schema: Any, depth: int = 0, objects: bool = False) -> Any:
        """The smallest value `schema` accepts: its required properties only, a nullable one as
        null, the first of an enum or of anyOf/oneOf, allOf merged. The stand-in fills what it
        knows over this, so its answers carry every field GitHub's schemas require. With
        `objects`, a nullable object is sampled as an object (for payloads the stand-in
        writes REST objects over, which lack some of the fields the payload's schema wants)."""
        schema = self.resolve(schema)
        if not isinstance(schema, dict) or depth > 40:
            return None
        if "allOf" in schema:
            merged: dict[str, Any] = {}
            for part in schema["allOf"]:
                got = self.sample(part, depth + 1, objects)
                if isinstance(got, dict):
                    merged.update(got)
            return merged
        for key in ("anyOf", "oneOf"):
            if key in schema:
                return self.sample(schema[key][0], depth + 1, objects)
        if "enum" in schema:
            return next((v for v in schema["enum"] if v is not None), None)
        kind = schema.get("type")
        if kind == "object" or "properties" in schema:
            props = schema.get("properties", {})
            out: dict[str, Any] = {}
            for name in schema.get("required", []):
                sub = self.resolve(props.get(name, {}))
                keep = objects and isinstance(sub, dict) and (
                    sub.get("type") == "object" or "properties" in sub)
                out[name] = None if isinstance(sub, dict) and sub.get("nullable") and not keep \
                    else self.sample(sub, depth + 1, objects)
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

    def errors(self, schema: str, value: Any) -> list[str]:
        """What `value` breaks of components/schemas/`schema` (JSON Schema draft 4 with
        OpenAPI 3.0's `nullable`, as Prism reads it), one line each; [] when valid. For what
        Prism cannot check: the webhook payloads (`webhook-*` schemas of `x-webhooks`)."""
        import jsonschema  # type: ignore[import-untyped]
        import referencing
        import referencing.jsonschema

        if self._registry is None:
            root = {"components": {"schemas": _json_schema(self.doc["components"]["schemas"],
                                                           mapping=True)}}
            resource = referencing.Resource.from_contents(
                root, default_specification=referencing.jsonschema.DRAFT4)
            self._registry = referencing.Registry().with_resource(_ROOT, resource)
        v = jsonschema.Draft4Validator({"$ref": f"{_ROOT}#/components/schemas/{schema}"},
                                       registry=self._registry)
        out: set[str] = set()

        def leaves(e: Any) -> None:
            # "is not valid under any of the given schemas" (a nullable object): say why the
            # non-null alternative failed, which is what a reader needs
            inner = [c for c in e.context or []
                     if not (c.validator == "type" and c.validator_value == "null")]
            if not inner:
                out.add(f"{'.'.join(map(str, e.absolute_path)) or '(top)'}: {e.message[:200]}")
            for c in inner:
                leaves(c)

        for e in v.iter_errors(value):
            leaves(e)
        return sorted(out)

    def response_schema(self, method: str, template: str, code: int) -> Any:
        resp = self.resolve(self.doc["paths"][template][method]["responses"][str(code)])
        return resp["content"]["application/json"]["schema"]

    def operation(self, method: str, path: str) -> Operation | None:
        path = path.split("?", 1)[0]
        for rx, op in self._ops:
            if op.method == method.lower() and rx.match(path):
                return op
        return None


_ROOT = "urn:github-openapi"
# OpenAPI 3.0 words that are no JSON Schema validation keywords (or mean something else there).
_NOT_JSON_SCHEMA = {"nullable", "example", "examples", "discriminator", "xml", "externalDocs",
                    "deprecated", "readOnly", "writeOnly"}


def _json_schema(node: Any, mapping: bool = False) -> Any:
    """OpenAPI 3.0 schema -> JSON Schema draft 4: `nullable: true` becomes "or null"; the
    OpenAPI-only words go. In a `properties` mapping the keys are names, left as they are."""
    if isinstance(node, list):
        return [_json_schema(x) for x in node]
    if not isinstance(node, dict):
        return node
    if mapping:
        return {k: _json_schema(v) for k, v in node.items()}
    out = {k: _json_schema(v, mapping=k in ("properties", "patternProperties", "definitions"))
           for k, v in node.items() if k not in _NOT_JSON_SCHEMA}
    if node.get("nullable"):
        if "enum" in out and None not in out["enum"]:
            out["enum"] = [*out["enum"], None]
        return {"anyOf": [{"type": "null"}, out]}
    return out


@functools.lru_cache(maxsize=4)
def load(path: Path) -> Description:
    return Description(path)
