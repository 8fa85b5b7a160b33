"""The ``elements`` replica site: model, pages, HTTP handler, tasks and their reference answers."""

from __future__ import annotations

import importlib.metadata
import importlib.util

import pytest

# mendeleev's own import pulls in pandas; the site only reads its database file.
if importlib.util.find_spec("mendeleev") is None:  # pragma: no cover - optional data package
    pytest.skip("the mendeleev package is not installed", allow_module_level=True)

from site_checks import SiteTaskChecks, http_get, site_fixtures

from sgrgym.core.loopback import serve_http
from sgrgym.sgr.sites.app import NotFound, SiteApp
from sgrgym.sgr.sites.model import Op, SiteError
from sgrgym.sgr.sites.page import extract_tables

app, tasks = site_fixtures("elements")


class TestElementsTasks(SiteTaskChecks):
    """Reference script, task-set shape and reference paths of the elements tasks."""

    site = "elements"
    source = "mendeleev "
    licence = ("MIT",)


def _results(page: bytes) -> list[dict[str, str]]:
    return extract_tables(page)["results"]


def test_source_names_the_installed_version(app: SiteApp) -> None:
    assert app.model.source == f"mendeleev {importlib.metadata.version('mendeleev')}"
    assert app.model.licence == "MIT"


def test_default_page_is_the_block_overview(app: SiteApp) -> None:
    rows = _results(app.render(app.model.default_state()))
    assert [r["block"] for r in rows] == ["s", "p", "d", "f"]
    assert sum(int(r["element_count"]) for r in rows) == 118


def test_pages_hold_at_most_twenty_rows_and_link_their_pager(app: SiteApp) -> None:
    model = app.model
    first = model.state("/isotopes", {"element": "Sn"})
    page = app.render(first)
    assert len(_results(page)) == 20
    second = model.apply(first, Op(op="page", control="page", value="2"))
    assert model.url(second).encode() in page.replace(b"&amp;", b"&")
    assert _results(app.render(second))[0]["isotope"] != _results(page)[0]["isotope"]
    with pytest.raises(NotFound):
        app.render(model.state("/isotopes", {"element": "Sn", "page": "9"}))


def test_filters_window_and_sort_change_the_rows(app: SiteApp) -> None:
    model = app.model
    rows = _results(app.render(model.state("/elements", {"group": "18", "period": "4"})))
    assert [r["symbol"] for r in rows] == ["Kr"]
    state = model.state(
        "/isotopes",
        {"element": "Fe", "kind": "stable", "sort": "abundance", "order": "desc"},
    )
    assert [r["isotope"] for r in _results(app.render(state))] == [
        "Fe-56",
        "Fe-54",
        "Fe-57",
        "Fe-58",
    ]
    window = model.state("/isotopes", {"element": "Fe", "from": "1930", "to": "1939"})
    years = {int(r["discovery_year"]) for r in _results(app.render(window))}
    assert years and all(1930 <= y <= 1939 for y in years)
    with pytest.raises(SiteError):
        app.render(model.state("/isotopes", {"from": "1950", "to": "1940"}))


def test_http_handler_serves_proxy_and_origin_requests(app: SiteApp) -> None:
    model = app.model
    with serve_http(app.handler()) as base:
        status, body = http_get(base, model.base + "/elements?series=halogens&sort=year")
        assert status == 200
        assert [r["symbol"] for r in _results(body)][:2] == ["Cl", "I"]
        status, body = http_get(base, "/isotopes?element=Cl&from=1930&to=1949")
        assert status == 200
        assert body == app.render(
            model.state("/isotopes", {"element": "Cl", "from": "1930", "to": "1949"})
        )
        assert http_get(base, "/elements?group=99")[0] == 400
        assert http_get(base, "/isotopes?order=sideways")[0] == 400
        assert http_get(base, "/elements?page=99")[0] == 404
