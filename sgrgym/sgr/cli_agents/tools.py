"""The SGR tools as an external agent sees them: versioned schemas, calls into :class:`SgrEnv`.

The schemas and descriptions live in a package file (``tools.v2.json``); its sha256 goes into
the run card, so a changed description is a different run. Every call goes through the SGR
environment (budgets, trajectory, diagnostics as for the built-in agents); the result is the
text the agent reads. SGR-Bench appendix C: the CLI agents' only retrieval tools were search,
fetch and PDF; site operations are offered only on request (``site_ops``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources
from typing import Any

from pydantic import ValidationError

from sgrgym.core.hashing import sha256_bytes
from sgrgym.sgr.env import Page, SgrEnv
from sgrgym.sgr.sites.model import Op

TOOLS_FILE = "tools.v2.json"
PAPER_TOOLS = ("search", "fetch", "pdf", "submit_answer")  # appendix C, plus interim answers


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    input_schema: dict[str, Any]
    site_ops: bool


class ToolCallError(ValueError):
    """A call the tool cannot take (unknown tool, missing or mistyped argument)."""


def tools_text() -> str:
    return (resources.files("sgrgym.sgr.cli_agents") / TOOLS_FILE).read_text("utf-8")


def tools_sha256() -> str:
    return sha256_bytes(tools_text().encode("utf-8"))


def tool_specs(site_ops: bool = False) -> list[ToolSpec]:
    """The tools offered: the paper's three and submit_answer, plus operate with ``site_ops``."""
    specs = []
    for raw in json.loads(tools_text())["tools"]:
        if raw["site_ops"] and not site_ops:
            continue
        specs.append(ToolSpec(raw["name"], raw["description"], raw["inputSchema"], raw["site_ops"]))
    return specs


def tool_names(site_ops: bool = False) -> tuple[str, ...]:
    return tuple(spec.name for spec in tool_specs(site_ops))


def _arguments(spec: ToolSpec, arguments: dict[str, Any] | None) -> dict[str, str]:
    given = dict(arguments or {})
    properties = spec.input_schema["properties"]
    unknown = sorted(set(given) - set(properties))
    if unknown:
        raise ToolCallError(
            f"{spec.name}: unknown argument(s) {unknown}; takes {sorted(properties)}"
        )
    for name in spec.input_schema.get("required", []):
        if name not in given:
            raise ToolCallError(f"{spec.name}: missing argument {name!r}")
    for name, value in given.items():
        if not isinstance(value, str):
            raise ToolCallError(f"{spec.name}: argument {name!r} must be a string")
    return given


def page_text(page: Page) -> str:
    """A page as the agent reads it: address, status, then the text."""
    return f"{page.url}\nHTTP status {page.status}\n\n{page.text}"


def call_tool(
    env: SgrEnv, name: str, arguments: dict[str, Any] | None, site_ops: bool = False
) -> str:
    """Run one tool call in ``env``; the text result (BudgetExceeded once the episode is over)."""
    spec = next((s for s in tool_specs(site_ops) if s.name == name), None)
    if spec is None:
        raise ToolCallError(f"no tool {name!r}; tools: {', '.join(tool_names(site_ops))}")
    args = _arguments(spec, arguments)
    if name == "search":
        hits = env.search(args["query"])
        if not hits:
            return "No results."
        return "\n\n".join(f"{h.rank}. {h.title}\n{h.url}\n{h.snippet}" for h in hits)
    if name == "fetch":
        return page_text(env.fetch(args["url"]))
    if name == "pdf":
        return page_text(env.pdf(args["url"]))
    if name == "submit_answer":
        env.submit_answer(args["answer"])
        return "Answer recorded. The last answer you record is the one that counts."
    try:
        op = Op.model_validate({k: v for k, v in args.items() if k != "site"})
    except ValidationError as exc:
        raise ToolCallError(f"operate: {exc.errors()[0]['msg']}") from None
    return page_text(env.operate(args["site"], op))
