"""Agent CLI profiles: how to start one CLI under the paper's protocol, as a small data file.

A profile (``profiles/<name>.json`` in the package, or any ``--profile FILE``) names the
executable (relative to the folder the CLI was installed into), its command line for a
non-interactive session, its environment, the config files to write into the fresh session
folders (a strict MCP config exposing only ``sgrgym mcp``, its own web tools disabled), the
transcript format and where the CLI keeps its session logs. Strings may use placeholders,
replaced per session:

``{project}`` the fresh project folder (the CLI's working directory), ``{home}`` the fresh home
folder, ``{cli_dir}`` the install folder, ``{executable}``, ``{base_url}`` the model endpoint,
``{model}``, ``{api_key}``, ``{prompt}`` the task prompt, ``{mcp_command}`` (the Python that
runs sgrgym), ``{mcp_args_json}`` (the server's arguments as a JSON array, also valid TOML);
a list item that is exactly ``{mcp_args}`` is replaced by the arguments themselves.
"""

from __future__ import annotations

import json
import re
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from sgrgym.core.errors import UserError
from sgrgym.core.hashing import sha256_bytes
from sgrgym.core.inputs import field_problem

from .transcripts import FORMATS

_PLACEHOLDER = re.compile(r"\{([a-z_]+)\}")
PLACEHOLDERS = (
    "project",
    "home",
    "cli_dir",
    "executable",
    "base_url",
    "model",
    "api_key",
    "prompt",
    "mcp_command",
    "mcp_args_json",
)


class ProfileFile(BaseModel):
    """A file written before the session: ``json`` (an object) or ``text`` content."""

    model_config = ConfigDict(extra="forbid")

    path: str  # with placeholders, e.g. "{home}/.qwen/settings.json"
    json_content: dict[str, Any] | None = Field(default=None, alias="json")
    text: str | None = None


class Profile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    about: str
    install: str  # how to install it (shown when the executable is missing)
    executable: str  # relative to the install folder
    argv: list[str]
    env: dict[str, str] = {}
    files: list[ProfileFile] = []
    transcript_format: str
    session_logs: list[str] = []  # folders the CLI writes its own session logs into
    notes: list[str] = []  # measured findings about this CLI


def profile_names() -> list[str]:
    folder = resources.files("sgrgym.sgr.cli_agents") / "profiles"
    return sorted(p.name[: -len(".json")] for p in folder.iterdir() if p.name.endswith(".json"))


def load_profile(name_or_file: str) -> tuple[Profile, str]:
    """(profile, sha256 of its file) from a packaged name or a file path."""
    path = Path(name_or_file)
    if name_or_file.endswith(".json") or path.is_file():
        if not path.is_file():
            raise UserError(f"{path}: no such profile file")
        data, where = path.read_bytes(), str(path)
    else:
        entry = resources.files("sgrgym.sgr.cli_agents") / "profiles" / f"{name_or_file}.json"
        if not entry.is_file():
            raise UserError(
                f"cli:{name_or_file}: no such agent CLI profile; profiles: "
                f"{', '.join(profile_names())} (or cli:PATH/TO/profile.json)"
            )
        data, where = entry.read_bytes(), f"profile {name_or_file}"
    try:
        profile = Profile.model_validate_json(data)
    except ValidationError as exc:
        raise UserError(f"{where}: {field_problem(exc)}") from None
    if profile.transcript_format not in FORMATS:
        raise UserError(
            f"{where}: transcript_format {profile.transcript_format!r} is not one of {FORMATS}"
        )
    _check_placeholders(profile, where)
    return profile, sha256_bytes(data)


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    return []


def _check_placeholders(profile: Profile, where: str) -> None:
    if any("{api_key}" in a for a in profile.argv):
        raise UserError(
            f"{where}: argv holds {{api_key}}: a command line is visible to every local user; "
            "pass the key in env (or a file under {home})"
        )
    everything = _strings(profile.model_dump(exclude={"notes", "about", "install"}))
    for text in everything:
        for name in _PLACEHOLDER.findall(text):
            if name not in PLACEHOLDERS and text != "{mcp_args}":
                raise UserError(
                    f"{where}: unknown placeholder {{{name}}} in {text!r}; known: "
                    f"{', '.join('{' + p + '}' for p in PLACEHOLDERS)}, {{mcp_args}}"
                )


def fill(value: Any, values: dict[str, str], mcp_args: list[str]) -> Any:
    """``value`` with its placeholders replaced (lists splice ``{mcp_args}``)."""
    if isinstance(value, str):
        return _PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), value)
    if isinstance(value, list):
        out: list[Any] = []
        for item in value:
            if item == "{mcp_args}":
                out += mcp_args
            else:
                out.append(fill(item, values, mcp_args))
        return out
    if isinstance(value, dict):
        return {k: fill(v, values, mcp_args) for k, v in value.items()}
    return value


def write_files(profile: Profile, values: dict[str, str], mcp_args: list[str]) -> list[Path]:
    """Write the profile's config files for one session; their paths."""
    written = []
    for spec in profile.files:
        path = Path(fill(spec.path, values, mcp_args))
        path.parent.mkdir(parents=True, exist_ok=True)
        if spec.json_content is not None:
            content = json.dumps(fill(spec.json_content, values, mcp_args), indent=2) + "\n"
        else:
            content = str(fill(spec.text or "", values, mcp_args))
        path.write_text(content, encoding="utf-8")
        written.append(path)
    return written
