"""Fixtures for testing a forge bridge against GitHub's published OpenAPI description, served by
real Prism (tests/forge/harness.py, docs/forge.md "How this is tested"):

- `prism_github`: a Prism *mock* of api.github.com (`--errors`), behind a front that can make it
  answer a given status, GitHub's rate-limit refusals, or refuse connections.

Both skip with one line when Prism or the description is not installed (`python3 -m
tests.forge.tools`; CI installs them). Prism itself starts once per pytest process.
"""
from __future__ import annotations

from typing import Iterator

import pytest

from tests.forge import harness
from tests.forge.harness import PrismGitHub


@pytest.fixture(scope="session")
def _forge_prisms(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """Owns the process's Prism processes: stops them at the session's end."""
    yield tmp_path_factory.mktemp("prism")
    harness.stop_all()


@pytest.fixture
def prism_github(_forge_prisms: object) -> Iterator[PrismGitHub]:
    from pathlib import Path
    assert isinstance(_forge_prisms, Path)
    mock = harness.session_mock(_forge_prisms)
    if isinstance(mock, str):
        pytest.skip(mock)
    p = PrismGitHub(mock, harness.description())
    try:
        yield p
    finally:
        p.close()
