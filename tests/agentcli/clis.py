"""The real agent CLIs at pinned versions: installing them (cached outside the clone) and
pointing each one at the scripted model server.

Standard library only: `.ci/run` runs `python3 -m tests.agentcli.clis` before the venv exists to
install them best effort, like tmux. The cache is `~/.cache/gitliza-agent-clis/NAME-VERSION/`
(`$GITLIZA_AGENT_CLI_CACHE` overrides), an install is finished when `.complete` is there, and a
lock file per CLI keeps parallel pytest-xdist workers (and CI) from installing the same one twice.

Pointing a CLI at the server without touching anything the launch profile sets:
- Claude Code: ANTHROPIC_BASE_URL + ANTHROPIC_API_KEY, and its nonessential traffic, auto-updater,
  telemetry and error reporting switched off by environment.
- Codex: the user's `~/.codex/config.toml` (CODEX_HOME's default): a model provider `liza`
  (base_url = the server's /v1, wire_api = "responses"), model gpt-5.5 (in Codex's own catalog:
  the real tool set, apply_patch included), analytics, update check and plugins off (plugins sync
  a marketplace from github.com and chatgpt.com at start).
- Gemini CLI: GOOGLE_GEMINI_BASE_URL + GEMINI_API_KEY, and the user's `~/.gemini/settings.json`:
  auth type gemini-api-key, usage statistics, telemetry and auto-update off.
- Mistral Vibe: the user's `~/.vibe/config.toml`: the `mistral` provider's api_base = the server,
  an active model on it, telemetry, update checks, the model catalog, experiments (GrowthBook)
  and connectors off, vibe_base_url = the server (it fetches managed config from there).
Everything else that leaves the machine goes to HTTPS_PROXY, which is the server too: it refuses
and records (modelserver.py), so no test reaches the internet and a test sees every attempt.
"""
from __future__ import annotations

import fcntl
import glob
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

CACHE = Path(os.environ.get("GITLIZA_AGENT_CLI_CACHE") or
             Path(os.path.expanduser("~")) / ".cache" / "gitliza-agent-clis")
INSTALL_TIMEOUT = 900


@dataclass(frozen=True)
class Cli:
    name: str  # the `--cli` word
    exe: str
    version: str
    package: str  # npm package or PyPI distribution
    registry: str  # "npm" or "pypi"

    @property
    def home(self) -> Path:
        return CACHE / f"{self.exe}-{self.version}"

    @property
    def bin(self) -> Path:
        return self.home / ("node_modules/.bin" if self.registry == "npm" else "bin")

    @property
    def installed(self) -> bool:
        return (self.home / ".complete").is_file() and (self.bin / self.exe).exists()


CLIS = {c.name: c for c in (
    Cli("claude", "claude", "2.1.197", "@anthropic-ai/claude-code", "npm"),
    Cli("codex", "codex", "0.169.0", "@openai/codex", "npm"),
    Cli("gemini", "gemini", "0.61.0", "@google/gemini-cli", "npm"),
    Cli("mistral", "vibe", "3.0.2", "mistral-vibe", "pypi"),
)}

PYTHONS = ("python3.14", "python3.13", "python3.12")


def python312() -> str | None:
    """A Python 3.12 or newer for Vibe's venv: on PATH, or a pyenv version."""
    found = [shutil.which(p) for p in PYTHONS]
    found += sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.1[2-9]*/bin/python3.1[2-9]")),
                    reverse=True)
    found += [sys.executable, shutil.which("python3")]
    for exe in found:
        if not exe:
            continue
        r = subprocess.run([exe, "-c", "import sys, venv; print(sys.version_info >= (3, 12))"],
                           capture_output=True, text=True)
        if r.stdout.strip() == "True":
            return exe
    return None


def install(cli: Cli) -> str | None:
    """Install `cli` into the cache unless it is there: None when ready, else why not (one
    line). Idempotent, and locked per CLI across processes."""
    if cli.installed:
        return None
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / f".lock-{cli.exe}", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if cli.installed:  # another worker finished it while we waited
            return None
        shutil.rmtree(cli.home, ignore_errors=True)
        if cli.registry == "npm":
            if shutil.which("npm") is None or shutil.which("node") is None:
                return f"{cli.package}@{cli.version} needs node and npm, which are not installed"
            argv = ["npm", "install", "--prefix", str(cli.home), "--no-audit", "--no-fund",
                    "--loglevel=error", f"{cli.package}@{cli.version}"]
        else:
            py = python312()
            if py is None:
                return (f"{cli.package}=={cli.version} needs Python 3.12 or newer, and this "
                        f"machine has none")
            r = subprocess.run([py, "-m", "venv", str(cli.home)], capture_output=True,
                               text=True)
            if r.returncode != 0:
                return f"cannot make a venv for {cli.package} with {py}: {r.stderr.strip()[-200:]}"
            argv = [str(cli.home / "bin" / "python"), "-m", "pip", "install", "-q",
                    "--disable-pip-version-check", f"{cli.package}=={cli.version}"]
        try:
            r = subprocess.run(argv, capture_output=True, text=True, timeout=INSTALL_TIMEOUT)
        except subprocess.TimeoutExpired:
            return f"installing {cli.package} {cli.version} took over {INSTALL_TIMEOUT}s"
        if r.returncode != 0 or not (cli.bin / cli.exe).exists():
            err = (r.stderr.strip() or r.stdout.strip()).splitlines()
            return (f"cannot install {cli.package} {cli.version} from {cli.registry} "
                    f"(registry unreachable?): {err[-1] if err else r.returncode}")
        (cli.home / ".complete").write_text(f"{cli.package} {cli.version}\n")
    return None


# -- pointing a CLI at the scripted model server ---------------------------------------------------

CODEX_CONFIG = """\
model_provider = "liza"
model = "gpt-5.5"
check_for_update_on_startup = false

[model_providers.liza]
name = "liza scripted model"
base_url = "{url}/v1"
wire_api = "responses"
env_key = "SCRIPTED_MODEL_KEY"

[analytics]
enabled = false

[features]
plugins = false
remote_plugin = false
plugin_sharing = false
"""

GEMINI_SETTINGS = {
    "security": {"auth": {"selectedType": "gemini-api-key"}},
    "privacy": {"usageStatisticsEnabled": False},
    "telemetry": {"enabled": False},
    "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
}

VIBE_CONFIG = """\
active_model = "liza"
enable_telemetry = false
enable_update_checks = false
enable_auto_update = false
enable_notifications = false
enable_otel = false
enable_connectors = false
experimental_enable_model_catalog = false
vibe_base_url = "{url}"

[experiments]
enable = false

[[providers]]
name = "mistral"
api_base = "{url}/v1"
api_key_env_var = "MISTRAL_API_KEY"
backend = "mistral"

[[models]]
name = "mistral-medium-latest"
provider = "mistral"
alias = "liza"
"""


def configure_home(home: Path, url: str) -> None:
    """The user-level configuration of every CLI in `home` (a test's own HOME)."""
    (home / ".codex").mkdir(parents=True, exist_ok=True)
    (home / ".codex" / "config.toml").write_text(CODEX_CONFIG.format(url=url))
    (home / ".gemini").mkdir(parents=True, exist_ok=True)
    (home / ".gemini" / "settings.json").write_text(json.dumps(GEMINI_SETTINGS, indent=2))
    (home / ".vibe").mkdir(parents=True, exist_ok=True)
    (home / ".vibe" / "config.toml").write_text(VIBE_CONFIG.format(url=url))


def environment(base: dict[str, str], home: Path, url: str, bins: list[Path]) -> dict[str, str]:
    """The environment a supervisor (and so its agent CLI) runs in: `base` with HOME, the CLIs
    on PATH, each CLI pointed at the server at `url`, and the proxy trap."""
    env = dict(base)
    # The git identity only in ~/.gitconfig, as a user has it (not GIT_AUTHOR_* variables,
    # which would hide a CLI that makes git ignore the global config).
    for k in [k for k in env if k.startswith(("GIT_AUTHOR_", "GIT_COMMITTER_", "LIZA_"))]:
        del env[k]
    env.update({
        "HOME": str(home),
        "PATH": os.pathsep.join([*map(str, bins), env.get("PATH", "")]),
        "HTTPS_PROXY": url, "HTTP_PROXY": url, "https_proxy": url, "http_proxy": url,
        "ALL_PROXY": url, "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost",
        # Claude Code
        "ANTHROPIC_BASE_URL": url, "ANTHROPIC_API_KEY": "sk-ant-liza-test",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1",
        "DISABLE_TELEMETRY": "1", "DISABLE_ERROR_REPORTING": "1",
        # Codex (the provider in ~/.codex/config.toml reads its key from here; not LIZA_*,
        # which `git liza team` keeps from its supervisors)
        "SCRIPTED_MODEL_KEY": "sk-liza-test",
        # Gemini CLI (no relaunch of node with a larger heap: ~3 s less per run)
        "GOOGLE_GEMINI_BASE_URL": url, "GEMINI_API_KEY": "liza-test-key",
        "GEMINI_CLI_NO_RELAUNCH": "true",
        # Mistral Vibe
        "MISTRAL_API_KEY": "liza-test-key",
    })
    return env


def main() -> int:
    """Install every CLI (best effort): one line each."""
    for cli in CLIS.values():
        why = install(cli)
        print(f"agent CLI {cli.exe} {cli.version}: " + ("ready" if why is None else why),
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
