"""Images in task content (a spec's Markdown) on the web board: shown only when they
are files of the repository, served by the board itself from the integration branch
(`/repo/PATH`, raster images only); any other (`http://...?leak=...`, `data:`, a path out of the
repository) is shown as text, never fetched. With the Content-Security-Policy every response
carries (auth.py: `img-src 'self'`), a browser would refuse such a fetch anyway: this keeps the
page honest about it."""
from __future__ import annotations

import posixpath
import re
from html import escape
from typing import Any
from urllib.parse import quote

import pygit2

from gitliza.git import treepath

ROUTE = "/repo/"
TYPES = {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif",
         ".webp": "image/webp"}  # no SVG: an SVG is a document that may hold scripts
MAX_BYTES = 8 << 20
_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def repo_path(src: str, base: str) -> str | None:
    """The repository path an image's `src` names, relative to the directory `base` of the
    Markdown it is in; None when it names anything else (a URL, an absolute or `..` path out of
    the repository, a query, a fragment, a control character)."""
    if not src or _SCHEME.match(src) or src.startswith(("/", "\\")) or \
            any(c in src for c in "?#\\") or any(ord(c) < 0x20 or ord(c) == 0x7f for c in src):
        return None
    path = posixpath.normpath(posixpath.join(base, src))
    if path.startswith("../") or path == ".." or path.startswith("/") or path == ".":
        return None
    return path if posixpath.splitext(path)[1].lower() in TYPES else None


def image_rule(renderer: Any, tokens: Any, idx: int, options: Any, env: Any) -> str:
    """markdown-it's `image` renderer (`add_render_rule`): an <img> of the board's own `/repo/`
    route, or text."""
    token = tokens[idx]
    alt = renderer.renderInlineAsText(token.children or [], options, env)
    src = token.attrGet("src") or ""
    path = repo_path(src, (env or {}).get("base", ""))
    if path is None:
        return (f'<span class="image-off">[image not shown: {escape(alt)} '
                f'({escape(src)})]</span>')
    return f'<img src="{ROUTE}{quote(path)}" alt="{escape(alt)}">'


def repo_image(repo: pygit2.Repository, branch: str, path: str) -> tuple[bytes, str] | None:
    """(bytes, media type) of the image `path` on the integration branch; None if it is not
    one there (another type, a link, too large, no such file)."""
    kind = TYPES.get(posixpath.splitext(path)[1].lower())
    if kind is None or repo_path(path, "") != path:
        return None
    try:
        tip = repo.lookup_reference(f"refs/heads/{branch}").peel(pygit2.Commit)
        entry = treepath.entry(tip.tree, path)
    except (KeyError, ValueError, pygit2.GitError):
        return None
    if not isinstance(entry, pygit2.Blob) or entry.filemode == pygit2.GIT_FILEMODE_LINK or \
            entry.size > MAX_BYTES:
        return None
    return entry.data, kind
