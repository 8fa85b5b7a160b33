"""The task prompt every SGR agent receives (SGR-Bench appendix C), from a versioned template.

Appendix C: all agents get the same prompt, made of the current date, the task instruction and
the required output schema; it gives no start URL, names the retrieval tools to use and forbids
any other retrieval path. The template is a file of the package (``prompts/``); its sha256
goes into every run card, so a changed prompt is a different run.
"""

from __future__ import annotations

from collections.abc import Sequence
from importlib import resources
from string import Template

from sgrgym.core.hashing import sha256_bytes

PROMPT_TEMPLATE = "task_prompt.v1.txt"

TOOL_HELP: dict[str, str] = {
    "search": "search(query): web search; returns ranked results, each with address, title "
    "and a short snippet.",
    "fetch": "fetch(url): the page at an address, as text (with its links and tables).",
    "pdf": "pdf(url): the text of a PDF document at an address.",
    "operate": "operate(site, operation): use a control of a site the way its links do: set or "
    "clear a filter, select a view, open a hierarchy node, set a scope or a time window, sort, "
    "go to a page, or go to an address of the site.",
    "submit_answer": "submit_answer(answer): record your answer so far (the last one counts).",
}
DEFAULT_TOOLS = ("search", "fetch", "pdf", "operate", "submit_answer")


def template_text() -> str:
    return (resources.files("sgrgym.sgr") / "prompts" / PROMPT_TEMPLATE).read_text("utf-8")


def template_sha256() -> str:
    return sha256_bytes(template_text().encode("utf-8"))


def _separator_name(separator: str) -> str:
    names = {"\n": "a new line", "\t": "a tab", ";": '";"', "|": '"|"'}
    return names.get(separator, repr(separator))


def task_prompt(
    current_date: str,
    instruction: str,
    output_format: str,
    columns: Sequence[str],
    field_separator: str = "|",
    record_separator: str = "\n",
    tools: Sequence[str] = DEFAULT_TOOLS,
) -> str:
    """The prompt text for one task (the template with its fields filled in)."""
    return Template(template_text()).substitute(
        current_date=current_date,
        instruction=instruction,
        output_format=output_format,
        columns=", ".join(columns),
        field_separator=field_separator,
        record_separator_name=_separator_name(record_separator),
        tools="\n".join(f"- {TOOL_HELP[t]}" for t in tools),
    )
