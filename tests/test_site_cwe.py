"""The cwe replica site: model, pages, HTTP handler, tasks and their reference answers."""

from __future__ import annotations

import pytest
from site_checks import SiteTaskChecks, http_get, site_fixtures

from sgrgym.core.loopback import serve_http
from sgrgym.sgr.sites.app import NotFound, SiteApp
from sgrgym.sgr.sites.model import SiteError
from sgrgym.sgr.sites.page import extract_tables

pytest.importorskip("cwe2")

app, tasks = site_fixtures("cwe")


class TestCweTasks(SiteTaskChecks):
    """Reference script, task-set shape and reference paths of the cwe tasks."""

    site = "cwe"
    source = "cwe2 "
    licence = ("MIT", "Terms of Use")


def test_default_page_has_results(app: SiteApp) -> None:
    tables = extract_tables(app.render(app.model.default_state()))
    assert tables["results"]
    assert {"facet", "value", "entries"} <= set(tables["results"][0])


def test_bad_states(app: SiteApp) -> None:
    model = app.model
    with pytest.raises(NotFound):
        app.render(model.state("/weaknesses", {"page": "999"}))
    with pytest.raises(SiteError):
        app.render(model.state("/weaknesses", {"from": "2023", "to": "2021"}))
    with pytest.raises(SiteError):
        app.render(model.state("/weaknesses", {"sort": "name", "order": "sideways"}))
    with pytest.raises(SiteError):
        model.state("/hierarchy", {"id": "137"})  # a category, not a weakness


def test_http_handler(app: SiteApp) -> None:
    model = app.model
    with serve_http(app.handler()) as base:
        status, body = http_get(base, model.base + "/views?view=1425")
        assert status == 200
        assert extract_tables(body)["results"][2]["cwe_id"] == "CWE-89"
        status, body = http_get(base, "/hierarchy")
        assert status == 200
        assert len(extract_tables(body)["results"]) == 10
        status, _ = http_get(base, "/weaknesses?status=Bogus")
        assert status == 400
        status, _ = http_get(base, "/views?view=1425&page=3")
        assert status == 404
