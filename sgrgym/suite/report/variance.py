"""Variance decomposition of final completeness, laid out like SeekerGym table 9 (appendix C.1).

Observations are episodes (agent, belief, document, seed). Two fits, both with statsmodels:

- a Type III ANOVA of an OLS model ``c ~ belief * agent + document`` (sum-to-zero contrasts):
  df, F, η² = SS / SS_total and partial η²_p = SS / (SS + SS_residual) per factor;
- the mixed-effects model of appendix C.1: ``c ~ belief * agent + topic`` with the document as
  random intercept (``mixedlm``; documents are nested in topics, so the topic is a fixed effect
  here and not in the OLS model, where the documents absorb it); reported: the document's
  share of the remaining variance, var_doc / (var_doc + residual), and whether the fit
  converged.

On tiny or degenerate data (one agent, one belief, a factor without effect, no residual
degrees of freedom) a fit can fail or not converge: that is reported as a note, never raised.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel


class Factor(BaseModel):
    factor: str
    df: float
    f: float | None
    eta2: float | None
    eta2_partial: float | None


class Decomposition(BaseModel):
    observations: int
    factors: list[Factor]
    document_share_mixed: float | None
    notes: list[str]


_NAMES = {
    "C(belief, Sum)": "Belief representation",
    "C(agent, Sum)": "Agent / model",
    "C(belief, Sum):C(agent, Sum)": "Belief × agent",
    "C(document, Sum)": "Document",
    "Residual": "Residual",
}


def _number(value: Any) -> float | None:
    try:
        x = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(x) or math.isinf(x) else round(x, 4)


def decompose(episodes: Sequence[dict[str, Any]]) -> Decomposition:
    """Table 9 from episode records (``agent``, ``belief``, ``doc_id``, ``final_completeness``)."""
    import pandas as pd
    import statsmodels.formula.api as smf
    from statsmodels.stats.anova import anova_lm

    frame = pd.DataFrame(
        {
            "c": [float(e["final_completeness"]) for e in episodes],
            "agent": [str(e["agent"]) for e in episodes],
            "belief": [str(e["belief"]) for e in episodes],
            "document": [str(e["doc_id"]) for e in episodes],
            "topic": [str(e.get("topic", "")) for e in episodes],
        }
    )
    levels = {col: frame[col].nunique() for col in ("belief", "agent")}
    notes: list[str] = [
        f"the {col} factor does not vary here (one {col}): it has no row"
        for col, n in levels.items()
        if n == 1
    ]
    terms = [f"C({col}, Sum)" for col, n in levels.items() if n > 1]
    if len(terms) == 2:
        terms.append("C(belief, Sum):C(agent, Sum)")
    if frame["document"].nunique() > 1:
        terms.append("C(document, Sum)")
    factors: list[Factor] = []
    if not terms:
        notes.append("one agent, one belief and one document: nothing to decompose")
    else:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                fit = smf.ols("c ~ " + " + ".join(terms), data=frame).fit()
                table = anova_lm(fit, typ=3)
            table = table.drop(index="Intercept", errors="ignore")
            total = float(table["sum_sq"].sum())
            residual = float(table.loc["Residual", "sum_sq"]) if "Residual" in table.index else 0.0
            for name, row in table.iterrows():
                ss = float(row["sum_sq"])
                partial = ss / (ss + residual) if ss + residual > 0 else math.nan
                factors.append(
                    Factor(
                        factor=_NAMES.get(str(name), str(name)),
                        df=float(row["df"]),
                        f=_number(row.get("F")),
                        eta2=_number(ss / total) if total > 0 else None,
                        eta2_partial=_number(partial),
                    )
                )
            if residual <= 1e-12 * max(total, 1e-300):
                notes.append(
                    "no residual variance (every episode of a cell is identical): F is undefined"
                )
        except Exception as exc:  # statsmodels raises many kinds on degenerate designs
            notes.append(
                f"the ANOVA could not be fitted on this data ({type(exc).__name__}: "
                f"{str(exc)[:120]})"
            )
    share = None
    if frame["document"].nunique() > 1:
        fixed_terms = [t for t in terms if "document" not in t]
        if frame["topic"].nunique() > 1:
            fixed_terms.append("C(topic, Sum)")
        fixed = " + ".join(fixed_terms) or "1"
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                mixed = smf.mixedlm("c ~ " + fixed, frame, groups=frame["document"]).fit()
            var_doc = float(mixed.cov_re.iloc[0, 0])
            share = _number(var_doc / (var_doc + float(mixed.scale)))
            if not mixed.converged or any("converge" in str(w.message).lower() for w in caught):
                notes.append(
                    "the mixed-effects fit did not converge on this data; its "
                    "document share is shown but is not reliable"
                )
        except Exception as exc:
            notes.append(
                f"the mixed-effects model could not be fitted ({type(exc).__name__}: "
                f"{str(exc)[:120]})"
            )
    return Decomposition(
        observations=len(frame), factors=factors, document_share_mixed=share, notes=notes
    )
