"""Running one episode under the appendix C budgets, enforced from outside the agent.

The agent's ``act`` runs in a worker thread; the calling thread is the watchdog. It wakes when
the wall-time limit (``Budget.max_wall_s`` after the start) or the stall limit
(``Budget.stall_s`` after the last progress: a tool call, a submitted answer or
:meth:`SgrEnv.progress`) is due, whether or not the agent calls tools, and stops the episode
then. Python cannot interrupt a thread, so an in-process agent stuck in a blocking call (a
model request, a sleep) is abandoned: the episode is closed and scored with the last answer
the agent submitted, and every tool call the abandoned thread makes later is refused
(:class:`~sgrgym.sgr.env.BudgetExceeded`), in later episodes too. Its eventual return value
is ignored.

A :class:`~sgrgym.core.errors.UserError` raised by the agent (a model call missing from a replay
cache, an endpoint that keeps failing) is not an agent failure but the run's: it is raised
again in the calling thread, so the command stops with its message (exit 2) and the episode
is not recorded (a rerun resumes there).
"""

from __future__ import annotations

import threading

from sgrgym.core.errors import UserError
from sgrgym.sgr.agents import Agent
from sgrgym.sgr.env import BudgetExceeded, Episode, SgrEnv, TaskObservation


def watch_episode(env: SgrEnv, agent: Agent, obs: TaskObservation) -> Episode:
    """Run ``agent`` on the episode ``env`` was reset to; the record says how it ended."""
    outcome: dict[str, object] = {}
    done = threading.Event()

    def work() -> None:
        env.claim()
        try:
            outcome["answer"] = agent.act(env, obs)
        except BudgetExceeded as exc:
            outcome["budget"] = exc
        except UserError as exc:
            outcome["user_error"] = exc
        except Exception as exc:  # an agent's failure is recorded, not raised
            outcome["error"] = f"{type(exc).__name__}: {exc}"
        finally:
            done.set()

    worker = threading.Thread(target=work, name=f"sgr-agent-{obs.task_id}", daemon=True)
    worker.start()
    overrun = False
    while not done.is_set():
        due = env.check_budget()
        if due is None:
            overrun = True
            break
        done.wait(due)
    if overrun:
        stopped = env.stopped
        reason = stopped.reason if stopped else "wall"
        return env.finish(None, f"budget: {reason}", str(stopped or ""))
    user_error = outcome.get("user_error")
    if isinstance(user_error, UserError):
        env.finish(None, "agent error", str(user_error))
        raise user_error
    if "answer" in outcome:
        answer = outcome["answer"]
        return env.finish(answer if isinstance(answer, str) else str(answer))
    exc = outcome.get("budget")
    if isinstance(exc, BudgetExceeded):
        return env.finish(None, f"budget: {exc.reason}", str(exc))
    return env.finish(None, "agent error", str(outcome.get("error", "")))
