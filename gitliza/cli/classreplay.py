"""Build a gitliza dataclass again from what its first build left, without `@dataclass`'s
analysis of it.

classcache.py keeps the compiled code of the methods `@dataclass` generates, but the analysis
around that code still ran at every CLI start: for each field three regular-expression tests of its
annotation (ClassVar? InitVar? KW_ONLY?), a `Field` made and checked, each method's source
assembled string by string. ~0.2 ms a class, ~5 ms of every `status` for the model's entities
alone. Its outcome depends only on the class definition, so it is kept (in classcache.py's file of
the module, with the compiled code: gitliza/cli/caches.py), keyed by everything it depends on: the
class's name, the decorator's arguments, the annotations, and each field's default (none, a value,
or a `field(...)` and its flags). A class whose key is known is built here the way dataclasses'
`_process_class` builds it, from its own helpers: the same `Field` objects, the same code run with
the same names bound, the same slotted class (tests/cli/test_classreplay.py compares every class of
gitliza both ways). What a key cannot vouch for goes through dataclasses itself: a class with a
base, without a docstring, with its own dunder methods, `order`/`unsafe_hash`, or a ClassVar,
InitVar or KW_ONLY field (the first build finds those and keeps no recipe), and any other library's
class. Installed by classcache.install(), so by the CLI entry point only.
"""
from __future__ import annotations

import _thread
import abc
import dataclasses as dc
import sys
from typing import Any, Callable

# The methods `_process_class` may add: a class that defines one itself is left to it.
_OWN = frozenset(("__init__", "__repr__", "__eq__", "__hash__", "__setattr__", "__delattr__",
                  "__match_args__", "__slots__", "__post_init__", "__getstate__", "__setstate__",
                  "__lt__", "__le__", "__gt__", "__ge__"))
_original: Callable[..., Any] | None = None
_exec: Callable[..., None] = exec  # classcache's caching exec, set by install()
_RECORDING = _thread.allocate_lock()


def keep_in(recipes_of: Callable[[str], dict[Any, Any]], changed: Callable[[str], None]) -> None:
    """Where the recipes are kept: classcache.py's file of each module (no import of it here)."""
    global _of, _changed
    _of, _changed = recipes_of, changed


def install(cached_exec: Callable[..., None]) -> None:
    """Route gitliza's dataclasses through the recipes (idempotent)."""
    global _original, _exec
    if _original is not None:
        return
    _original, _exec = dc._process_class, cached_exec  # type: ignore[attr-defined]
    dc._process_class = _process  # type: ignore[attr-defined]


def _no_recipes(module: str) -> dict[Any, Any]:
    return {}


# classcache's, set by install(): the recipes kept in a module's file, and that file to write
_of: Callable[[str], dict[Any, Any]] = _no_recipes
_changed: Callable[[str], None] = lambda module: None  # noqa: E731


def _process(cls: type, *params: Any) -> type:
    assert _original is not None
    module = cls.__module__
    key = _key(cls, params) if module.startswith("gitliza") else None
    if key is None:
        return _original(cls, *params)  # type: ignore[no-any-return]
    recipes = _of(module)
    recipe = recipes.get(key)
    if _sound(recipe):
        return _build(cls, params, recipe)
    sources: list[str] = []
    me = _thread.get_ident()

    def recording(source: Any, globals_: Any = None, locals_: Any = None, /) -> None:
        if _thread.get_ident() == me:  # another thread's class is not this one's recipe
            sources.append(source)
        _exec(source, globals_, locals_)
    with _RECORDING:  # one recording at a time (a supervisor's threads may import at once)
        dc.exec = recording  # type: ignore[attr-defined]
        try:
            built: type = _original(cls, *params)
        finally:
            dc.exec = _exec  # type: ignore[attr-defined]
    found = _recipe(built, params, sources)
    if found is not None:
        recipes[key] = found
        _changed(module)  # written with the module's code at exit
    return built


def _key(cls: type, params: tuple[Any, ...]) -> tuple[Any, ...] | None:
    """What `_process_class`'s outcome depends on, or None when this module does not rebuild it."""
    init, repr_, eq, order, unsafe_hash, _frozen, _match, kw_only, _slots, weakref = params
    d = cls.__dict__
    if (cls.__bases__ != (object,) or not d.get("__doc__") or not (init and repr_ and eq)
            or order or unsafe_hash or weakref or not _OWN.isdisjoint(d)):
        return None
    annotations = d.get("__annotations__", {})
    if any(isinstance(v, dc.Field) and k not in annotations for k, v in d.items()):
        return None  # dataclasses' TypeError: a field without a type
    fields: list[Any] = []
    for name, annotation in annotations.items():
        if type(annotation) is not str:
            return None
        default = getattr(cls, name, dc.MISSING)
        if default is dc.MISSING:
            fields.append((name, annotation))
        elif isinstance(default, dc.Field):
            fields.append((name, annotation, default.default is dc.MISSING,
                           default.default_factory is dc.MISSING, default.init, default.repr,
                           default.hash, default.compare,
                           None if default.kw_only is dc.MISSING else default.kw_only))
        elif type(default).__hash__ is None or type(default).__name__ == "member_descriptor":
            return None  # dataclasses refuses the first, ignores the second: its own answer
        else:
            fields.append((name, annotation, True))
    # sys.version: what dataclasses generates may change with Python's own patch release
    return (sys.version, cls.__qualname__, params, tuple(fields))


def _recipe(built: type, params: tuple[Any, ...], sources: list[Any]) -> Any:
    """What the build of `built` did, to do again: the generated methods' source in order, the
    match args, and whether `__hash__` was set to None (an unfrozen class with `eq`)."""
    fields = built.__dict__.get("__dataclass_fields__", {})
    if any(f._field_type is not dc._FIELD for f in fields.values()):  # type: ignore[attr-defined]
        return None  # a ClassVar, an InitVar or KW_ONLY: dataclasses' every time
    if not all(isinstance(s, str) for s in sources):
        return None
    names = [_name(s) for s in sources]
    made = {"__init__", "__repr__", "__eq__"} | (
        {"__setattr__", "__delattr__"} if params[5] else set()) | (
        {"__hash__"} if callable(built.__dict__.get("__hash__")) else set())
    if sorted(names) != sorted(made):  # exactly the methods dataclasses made, each once
        return None
    hash_none = "__hash__" not in names and built.__dict__.get("__hash__", 0) is None
    match = built.__dict__.get("__match_args__") if params[6] else None
    return (tuple((s, tuple(_locals(s))) for s in sources), match, hash_none)


def _sound(recipe: Any) -> bool:
    """Whether a recipe read from the cache has the shape `_recipe` gives (a damaged file is
    ignored: the class is built by dataclasses and its recipe kept again)."""
    return (type(recipe) is tuple and len(recipe) == 3 and type(recipe[0]) is tuple
            and all(type(s) is tuple and len(s) == 2 and type(s[0]) is str
                    and type(s[1]) is tuple for s in recipe[0])
            and (recipe[1] is None or type(recipe[1]) is tuple) and type(recipe[2]) is bool)


def _name(source: str) -> str:
    """The method a `__create_fn__` source makes (dataclasses' `_create_fn`: `... return NAME`)."""
    return source.rsplit(" return ", 1)[-1].strip()


def _locals(source: str) -> list[str]:
    """The names `__create_fn__` binds (its first line: `def __create_fn__(a, b):`)."""
    head = source.split("\n", 1)[0]
    inner = head[head.index("(") + 1:head.rindex(")")]
    return [n.strip() for n in inner.split(",") if n.strip()]


def _build(cls: type, params: tuple[Any, ...], recipe: Any) -> type:
    """`_process_class` for a class of a known key, step for step in its order."""
    init, repr_, eq, order, unsafe_hash, frozen, _match, kw_only, slots, weakref = params
    sources, match, hash_none = recipe
    module = sys.modules.get(cls.__module__)
    globals_ = module.__dict__ if module is not None else {}
    setattr(cls, "__dataclass_params__",
            dc._DataclassParams(init, repr_, eq, order, unsafe_hash, frozen))  # type: ignore[attr-defined]
    fields: dict[str, dc.Field[Any]] = {}
    for name, annotation in cls.__dict__.get("__annotations__", {}).items():
        default = getattr(cls, name, dc.MISSING)
        made: Any = default if isinstance(default, dc.Field) else dc.field(default=default)
        made.name, made.type, made._field_type = name, annotation, dc._FIELD  # type: ignore[attr-defined]
        if made.kw_only is dc.MISSING:
            made.kw_only = kw_only
        fields[name] = made
    for f in fields.values():  # as dataclasses does: the class attribute is the plain default
        if isinstance(getattr(cls, f.name, None), dc.Field):
            if f.default is dc.MISSING:
                delattr(cls, f.name)
            else:
                setattr(cls, f.name, f.default)
    setattr(cls, "__dataclass_fields__", fields)
    bound = {"MISSING": dc.MISSING, "_HAS_DEFAULT_FACTORY": dc._HAS_DEFAULT_FACTORY,  # type: ignore[attr-defined]
             "__dataclass_builtins_object__": object, "cls": cls,
             "FrozenInstanceError": dc.FrozenInstanceError, "_return_type": None}
    for source, names in sources:
        values: dict[str, Any] = {}
        for n in names:
            if n.startswith("_type_"):
                values[n] = fields[n[6:]].type
            elif n.startswith("_dflt_"):
                f = fields[n[6:]]
                values[n] = f.default if f.default_factory is dc.MISSING else f.default_factory
            else:
                values[n] = bound[n]
        ns: dict[str, Any] = {}
        _exec(source, globals_, ns)
        fn = ns["__create_fn__"](**values)
        if fn.__name__ == "__repr__":
            fn = dc._recursive_repr(fn)  # type: ignore[attr-defined]
        setattr(cls, fn.__name__, dc._set_qualname(cls, fn))  # type: ignore[attr-defined]
    if hash_none:
        cls.__hash__ = None  # type: ignore[assignment]
    if match is not None:
        setattr(cls, "__match_args__", match)
    if slots:
        cls = dc._add_slots(cls, frozen, weakref)  # type: ignore[attr-defined]
    abc.update_abstractmethods(cls)
    return cls
