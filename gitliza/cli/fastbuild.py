"""Build the spec that gitliza/cli/fastpath.py runs commands from, out of the click command that typer
builds from gitliza/cli/app/ (passed in: only that folder imports typer) and the folder's sources.

A command is fast when its body is the usual single call `_run(_helper().fn, <args>)` (or
`_run(alias.fn, ...)` after a local `from ... import ... as alias`), each argument being one of the
command's parameters or a literal, and every parameter of a plain type. A helper is a module-level
`def _x(): from M import N; return N` of any module of the folder (app/base.py holds the shared
ones). For such a command the spec records the target function and how the call maps parameters
to arguments; typer's parsing is mirrored by fastpath. Anything else is recorded as not fast and
always goes through typer.
"""
from __future__ import annotations

import ast
import os
from typing import Any

from gitliza import __version__

from gitliza.cli import fastpath

_TYPES = {"StringParamType": "str", "IntParamType": "int", "TyperPath": "path", "Path": "path"}


def sources() -> dict[str, str]:
    """The source of each module of gitliza/cli/app/, by dotted name (what `build` reads)."""
    out = {}
    for name in sorted(os.listdir(fastpath._CLI)):
        if name.endswith(".py"):
            stem = name[:-3]
            module = "gitliza.cli.app" + ("" if stem == "__init__" else f".{stem}")
            with open(os.path.join(fastpath._CLI, name), encoding="utf-8") as f:
                out[module] = f.read()
    return out


def build(group: Any, sources: dict[str, str]) -> fastpath.Spec:
    """The spec of the click `group`, whose commands' callbacks are defined in `sources` (module
    name -> source)."""
    helpers: dict[str, str] = {}
    funcs: dict[tuple[str, str], ast.FunctionDef] = {}
    for module, source in sources.items():
        tree = ast.parse(source)
        for name, target in _helpers(tree).items():
            if helpers.setdefault(name, target) != target:  # the same loader name, two targets
                raise ValueError(f"{module}: {name}() loads {target}, elsewhere {helpers[name]}")
        funcs.update(((module, n.name), n) for n in tree.body if isinstance(n, ast.FunctionDef))
    spec: fastpath.Spec = {"key": fastpath.spec_key(), "version": f"git-liza version {__version__}",
                          "groups": {}, "commands": {}, "help": {}}
    root = group.context_class(group, info_name="git liza", terminal_width=78,
                               **group.context_settings)
    spec["help"][""] = group.get_help(root)
    _walk(spec, group, root, "", funcs, helpers)
    return spec


def _walk(spec: fastpath.Spec, group: Any, parent: Any, prefix: str,
          funcs: dict[tuple[str, str], ast.FunctionDef], helpers: dict[str, str]) -> None:
    for name, cmd in group.commands.items():
        path = f"{prefix} {name}".strip()
        ctx = cmd.context_class(cmd, info_name=name, parent=parent, **cmd.context_settings)
        spec["help"][path] = cmd.get_help(ctx)
        if hasattr(cmd, "commands"):
            spec["groups"][path] = True
            _walk(spec, cmd, ctx, path, funcs, helpers)
            continue
        spec["commands"][path] = _command(cmd, funcs, helpers)


def _command(cmd: Any, funcs: dict[tuple[str, str], ast.FunctionDef],
             helpers: dict[str, str]) -> fastpath.Spec:
    params = [_param(p) for p in cmd.params]
    out: fastpath.Spec = {"fast": False, "params": [p for p in params if p is not None]}
    callback = getattr(cmd.callback, "__wrapped__", cmd.callback)
    fdef = funcs.get((getattr(callback, "__module__", ""), getattr(callback, "__name__", "")))
    if None in params or fdef is None or cmd.context_settings:
        return out
    call = _run_call(fdef, helpers, {p["name"] for p in out["params"]})
    if call is not None and callable(getattr(_module(call["target"][0]), call["target"][1], None)):
        out.update(call, fast=True)
    return out


def _module(name: str) -> Any:
    import importlib
    try:
        return importlib.import_module(name)
    except ImportError:  # a helper that returns something other than a module
        return None


def _param(p: Any) -> fastpath.Spec | None:
    kind = p.param_type_name  # "option" | "argument"
    flag = bool(getattr(p, "is_flag", False))
    type_ = "flag" if flag else _TYPES.get(type(p.type).__name__)
    if kind not in ("option", "argument") or type_ is None or p.nargs != 1 or (
            flag and (p.multiple or getattr(p, "flag_value", True) is not True)) or (
            p.envvar is not None and not isinstance(p.envvar, str)) or p.callback is not None or (
            p.multiple and kind == "argument"):
        return None
    default: Any = p.default
    if callable(default) or not isinstance(default, (str, int, bool, list, tuple, type(None))):
        return None
    if p.multiple:
        default = list(default) if isinstance(default, (list, tuple)) else []
    return {"name": p.name, "kind": kind, "opts": list(p.opts) if kind == "option" else [],
            "secondary": list(getattr(p, "secondary_opts", [])), "type": type_, "flag": flag,
            "multiple": bool(p.multiple), "required": bool(p.required), "default": default,
            "envvar": p.envvar}


def _helpers(tree: ast.Module) -> dict[str, str]:
    """Module-level `def _x(): from M import N; return N` helpers: their name -> "M.N"."""
    out = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and not node.args.args:
            body = _strip_doc(node.body)
            if (len(body) == 2 and isinstance(body[0], ast.ImportFrom)
                    and isinstance(body[1], ast.Return) and isinstance(body[1].value, ast.Name)):
                target = _imported(body[0], body[1].value.id)
                if target:
                    out[node.name] = target
    return out


def _imported(node: ast.ImportFrom, name: str) -> str | None:
    for alias in node.names:
        if (alias.asname or alias.name) == name and node.module and not node.level:
            return f"{node.module}.{alias.name}"
    return None


def _strip_doc(body: list[ast.stmt]) -> list[ast.stmt]:
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        return body[1:]
    return body


def _run_call(fdef: ast.FunctionDef, helpers: dict[str, str],
              params: set[str]) -> fastpath.Spec | None:
    """The call's target and argument mapping, if the body is exactly one `_run(...)` call after
    optional local imports of modules."""
    local: dict[str, str] = {}
    body = _strip_doc(fdef.body)
    while body and isinstance(body[0], ast.ImportFrom):
        for alias in body[0].names:
            if body[0].module and not body[0].level:
                local[alias.asname or alias.name] = f"{body[0].module}.{alias.name}"
        body = body[1:]
    if len(body) != 1 or not isinstance(body[0], ast.Expr):
        return None
    call = body[0].value
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
            and call.func.id == "_run" and call.args and isinstance(call.args[0], ast.Attribute)):
        return None
    fn = call.args[0]
    holder = fn.value
    if isinstance(holder, ast.Call) and isinstance(holder.func, ast.Name) and not holder.args \
            and not holder.keywords and holder.func.id in helpers:
        module = helpers[holder.func.id]
    elif isinstance(holder, ast.Name) and holder.id in local:
        module = local[holder.id]
    else:
        return None
    args = [_ref(a, params) for a in call.args[1:]]
    kwargs = {k.arg: _ref(k.value, params) for k in call.keywords if k.arg}
    if len(args) > 3 or None in args or None in kwargs.values() or \
            len(kwargs) != len(call.keywords) or any(k.arg in ("agent", "json", "no_sync")
                                                     for k in call.keywords):
        return None
    return {"target": [module, fn.attr], "args": args, "kwargs": kwargs}


def _ref(node: ast.expr, params: set[str]) -> list[Any] | None:
    if isinstance(node, ast.Name) and node.id in params:
        return ["param", node.id]
    if isinstance(node, ast.Constant) and isinstance(node.value, (str, int, bool, type(None))):
        return ["const", node.value]
    return None
