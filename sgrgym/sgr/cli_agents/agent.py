"""The agent CLIs as registered agents: ``cli:NAME`` builds a :class:`CliAgent`, which runs
every task of a world in its own CLI session over MCP (:mod:`.runner`), behind the egress
sandbox unless it is turned off.
"""

from __future__ import annotations

import os
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from sgrgym.core import defaults
from sgrgym.core.errors import UserError

if TYPE_CHECKING:
    from sgrgym.core.output import Progress
    from sgrgym.sgr.cli_agents.profiles import Profile
    from sgrgym.sgr.make import SgrWorld
    from sgrgym.sgr.score import ScoreReport

LOCAL_API_KEY = "sgrgym-local"  # sent when no --api-key-env names a key (local servers)


@dataclass(frozen=True)
class CliAgentOptions:
    """An agent CLI's model endpoint, install folder and sandbox (``sgr run --agent cli:NAME``)."""

    base_url: str
    model: str
    api_key_env: str | None = None  # the variable holding the key (never stored)
    allow_hosts: tuple[str, ...] = ()  # HOST:PORT the sandbox lets out (default: the endpoint)
    egress_sandbox: bool = True
    cli_dir: Path | None = None  # default benchmarks/cli-agents/PROFILE
    poll_s: float = defaults.CLI_POLL_S
    site_ops: bool = False


def endpoint_host(url: str) -> tuple[str, int]:
    """(host, port) of an http(s) base URL; anything else is a UserError."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UserError(f"--base-url {url!r}: give an http(s) URL, e.g. http://127.0.0.1:8080/v1")
    return parts.hostname.lower(), parts.port or (443 if parts.scheme == "https" else 80)


@dataclass(frozen=True)
class CliAgent:
    """One agent CLI profile with its endpoint: a task runner (it is given the world, not the
    tools, and runs each task in a fresh CLI session)."""

    name: str  # cli:PROFILE-OR-FILE, as the run card records it
    profile: Profile
    profile_sha256: str
    options: CliAgentOptions
    api_key: str
    allow: tuple[tuple[str, int], ...]
    seed: int

    @classmethod
    def load(cls, profile_name: str, options: CliAgentOptions, seed: int) -> CliAgent:
        """The profile ``profile_name`` (packaged or a file) with ``options``; a missing
        endpoint, an empty key variable or a bad host is a UserError before anything runs."""
        from sgrgym.sgr.cli_agents.egress import parse_host_port
        from sgrgym.sgr.cli_agents.profiles import load_profile

        name = f"cli:{profile_name}"
        profile, profile_sha256 = load_profile(profile_name)
        if not options.base_url or not options.model:
            raise UserError(f"--agent {name}: give the model endpoint (--base-url and --model)")
        api_key = LOCAL_API_KEY
        if options.api_key_env:
            api_key = os.environ.get(options.api_key_env, "")
            if not api_key:
                raise UserError(
                    f"--api-key-env {options.api_key_env}: that variable is empty or unset"
                )
        allow = tuple(parse_host_port(h) for h in options.allow_hosts) or (
            endpoint_host(options.base_url),
        )
        return cls(name, profile, profile_sha256, options, api_key, allow, seed)

    def run_world(
        self, world: SgrWorld, out_dir: Path, *, progress: Progress | None, jobs: int
    ) -> ScoreReport:
        """Run every task of ``world`` not yet answered in ``out_dir``. The world's env is
        closed first: each session's MCP server opens the pack itself."""
        from sgrgym.sgr.cli_agents.egress import Egress
        from sgrgym.sgr.cli_agents.episode import episode_prompt
        from sgrgym.sgr.cli_agents.runner import CliRunCard, CliSettings, run_cli_tasks
        from sgrgym.sgr.cli_agents.tools import tools_sha256
        from sgrgym.sgr.run import run_card

        env, options = world.env, self.options
        prompts = {t.task_id: episode_prompt(env, t, options.site_ops) for t in world.tasks}
        egress = Egress(list(self.allow)) if options.egress_sandbox else None
        card = CliRunCard(
            **run_card(env, self.name, self.seed, world.files, world.selection).model_dump(),
            profile=self.profile.name,
            profile_sha256=self.profile_sha256,
            tools_sha256=tools_sha256(),
            site_ops=options.site_ops,
            model=options.model,
            base_url=options.base_url,
            poll_s=options.poll_s,
            egress=[f"{h}:{p}" for h, p in self.allow] if egress else [],
        )
        settings = CliSettings(
            profile=self.profile,
            cli_dir=(
                options.cli_dir or Path(defaults.CLI_AGENTS_ROOT) / self.profile.name
            ).resolve(),
            base_url=options.base_url,
            model=options.model,
            api_key=self.api_key,
            pack_dir=env.snapshot.pack_dir.resolve(),
            task_files=tuple(p.resolve() for p in world.files),
            budget=env.budget,
            current_date=env.current_date,
            site_ops=options.site_ops,
            no_render=env.renderer is None,
            poll_s=options.poll_s,
            egress=egress,
        )
        if env.renderer is not None:
            # Each session's server loads only the apps it renders; an app the pack was not
            # built with is refused here, once, before any session rather than inside one.
            env.renderer.load_all()
        env.snapshot.close()
        env.close()
        with egress or nullcontext():
            return run_cli_tasks(
                settings,
                env.sites,
                world.tasks,
                prompts,
                out_dir,
                card,
                jobs=jobs,
                progress=progress,
            )
