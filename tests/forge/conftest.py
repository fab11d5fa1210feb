"""Fixtures for testing a forge bridge against GitHub's published OpenAPI description, served by
real Prism (tests/forge/harness.py, docs/forge.md "How this is tested"):

- `prism_github`: a Prism *mock* of api.github.com (`--errors`), behind a front that can make it
  answer a given status, GitHub's rate-limit refusals, or refuse connections.
- `github_standin`: a stateful stand-in GitHub (standin.py) over a bare repository, reached through
  a real Prism *proxy* (`--errors`, request validation on, responses validated too) except
  /graphql, which goes to the stand-in directly.

Both skip with one line when Prism or the description is not installed (`python3 -m
tests.forge.tools`; CI installs them). Prism itself starts once per pytest process.
"""
from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Iterator

import pytest

from tests.forge import harness
from tests.forge.harness import PrismGitHub
from tests.forge.standin import StandIn


@pytest.fixture(scope="session")
def _forge_prisms(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """Owns the process's Prism processes: stops them at the session's end."""
    yield tmp_path_factory.mktemp("prism")
    harness.stop_all()


@pytest.fixture
def prism_github(_forge_prisms: object) -> Iterator[PrismGitHub]:
    assert isinstance(_forge_prisms, Path)
    mock = harness.session_mock(_forge_prisms)
    if isinstance(mock, str):
        pytest.skip(mock)
    p = PrismGitHub(mock, harness.description())
    try:
        yield p
    finally:
        p.close()


@pytest.fixture
def github_standin(tmp_path: Path, _forge_prisms: object) -> Iterator[StandIn]:
    assert isinstance(_forge_prisms, Path)
    got = harness.session_standin(_forge_prisms)
    if isinstance(got, str):
        pytest.skip(got)
    server, proxy = got
    bare = tmp_path / "forge.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(bare)], check=True,
                   capture_output=True, timeout=60)
    s = StandIn(server, proxy, harness.description(), bare)
    try:
        yield s
    finally:
        s.close()
