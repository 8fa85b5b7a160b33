"""How much the SGR LLM agent lets a conversation grow (defaults of ``sgr run --agent llm``).

Kept apart from :mod:`sgrgym.sgr.llm_agent` so that building the command line stays light.
Each tool result is cut to ``result_chars`` characters and only the last ``keep_results``
result messages stay in full (:mod:`sgrgym.sgr.llm_agent`); an episode has at most
``max_turns`` model calls. The paper bounds runs by time only (appendix C); these bounds are
ours, chosen so that requests stay near the 2-3k tokens issue 15 asks of built-in prompts.
"""

from __future__ import annotations

DEFAULT_MAX_TURNS = 30
DEFAULT_RESULT_CHARS = 3000
DEFAULT_KEEP_RESULTS = 2
