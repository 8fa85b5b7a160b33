"""Domain → source family map (SGR-Bench section 3.3 and figure 3: six source families).

The map ships as package data (``families.json``): each published ``domain`` (e.g.
``WATER_QUALITY_PORTAL``) belongs to one of the paper's six families. ``--families FILE``
adds to or overrides it with a JSON object ``{"DOMAIN": "family", ...}`` (or a file of the
shipped shape, ``{"domains": {...}}``). Domains that map to no family are reported, not
guessed.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

from sgrgym.core.errors import UserError
from sgrgym.core.inputs import read_json


def _shipped() -> dict[str, object]:
    text = resources.files("sgrgym.sgr").joinpath("families.json").read_text(encoding="utf-8")
    data: dict[str, object] = json.loads(text)
    return data


def paper_families() -> tuple[str, ...]:
    """The paper's six family names, in the order of section 3.3."""
    names = _shipped()["families"]
    assert isinstance(names, list)
    return tuple(str(n) for n in names)


def _domains(data: object, where: str) -> dict[str, str]:
    if isinstance(data, dict) and isinstance(data.get("domains"), dict):
        data = data["domains"]
    if not isinstance(data, dict) or not all(
        isinstance(k, str) and isinstance(v, str) and v.strip() for k, v in data.items()
    ):
        raise UserError(
            f"{where}: expected a JSON object mapping domains to family names, "
            'e.g. {"WATER_QUALITY_PORTAL": "environmental monitoring"}'
        )
    return {str(k): str(v).strip() for k, v in data.items()}


def load_families(path: str | Path | None = None) -> dict[str, str]:
    """The shipped domain → family map, with ``path``'s entries added or overriding."""
    families = _domains(_shipped(), "families.json")
    if path is None:
        return families
    path = Path(path)
    data = read_json(path, "families file")
    families.update(_domains(data, str(path)))
    return families
