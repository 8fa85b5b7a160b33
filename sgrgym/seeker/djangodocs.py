"""The demo corpus: the documentation in the Django 6.1.3 sdist (``docs/``, BSD-3-Clause).

The sdist is an immutable PyPI file pinned by sha256 (:data:`DJANGO_SDIST`); it is fetched with
``pip download --no-deps --no-binary django`` (:mod:`sgrgym.core.artifacts`) and read straight from
the tarball: nothing is installed and no text is committed. The pages are reStructuredText
written for Sphinx; each is rendered with docutils to HTML and then goes through the same
extraction, filters and selection as every other corpus (:mod:`sgrgym.seeker.corpus`,
:func:`sgrgym.seeker.pydocs.select_documents`): the paper's encyclopedic filters (appendix
B.1.1: >= 12 passages, short-passage ratio < 0.1, abstract of 64-1024 tokens) and its final
construction score ``log(inbound + 1) * (1 - short ratio)`` (appendix B.1), at most 8 pages
per cluster and 64 in all (ours, as for the Python docs).

Rendering rules (ours): Sphinx object descriptions (``.. class::``, ``.. method::``,
``.. setting::``, ``.. django-admin::`` ...) become a signature ``<dt class="sig">`` with its
description, one unit each like the Python docs' API entries; code blocks, console sessions,
version notes (``versionadded``/``versionchanged``/``deprecated``), "See also" boxes, tables of
contents, images, index entries and module markers are dropped; notes and warnings keep their
text. A cross-reference role shows its title, or its target (``~`` keeps the last dotted part);
a ``:ref:`` without title shows the title of the section its label marks. ``releases/`` (one
page per Django version), the theme and the Sphinx extensions are skipped.

Topic clusters are the docs' folders (``ref/models``, ``topics/http``, ``howto``, ``faq``, ...).
Links for the selection score are the ``:doc:`` and ``:ref:`` targets between parsed pages.
"""

from __future__ import annotations

import io
import itertools
import posixpath
import re
import tarfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sgrgym.core.artifacts import Artifact, fetch
from sgrgym.core.errors import UserError
from sgrgym.core.hashing import canonical_json
from sgrgym.core.home import home_path
from sgrgym.core.output import write_json
from sgrgym.seeker.corpus import (
    Corpus,
    CorpusFilter,
    CorpusSource,
    Profile,
    element_text,
    extract_page,
    make_document,
    parse_html,
)
from sgrgym.seeker.pydocs import (
    PYDOCS_EXTRACT,
    SPHINX,
    DocPage,
    PydocsManifest,
    PydocsSelection,
    load_manifest,
    make_manifest,
    select_documents,
    verify_corpus,
)

DJANGO_SDIST = Artifact(
    name="django",
    version="6.1.3",
    filename="django-6.1.3.tar.gz",
    sha256="b5d2d9e35295065d13b1927b3f19a59bd119f737aa6299def14ccca1ae3c8c0d",
    bytes=11306257,
)
CORPUS_NAME = "djangodocs"
DEFAULT_MANIFEST = home_path("tasks/seeker/djangodocs/manifest.json")
DOCS_PREFIX = f"django-{DJANGO_SDIST.version}/docs/"
SKIP_DIRS = frozenset({"releases", "_theme", "_ext", "man"})
SKIP_PAGES = frozenset({"requirements", "contents", "index"})  # top-level build/toc files
FIX = (
    "delete the cached file and rerun `sgrgym seeker build-corpus` to fetch the pinned sdist "
    f"({DJANGO_SDIST.filename}, sha256 {DJANGO_SDIST.sha256})"
)

# Sphinx object descriptions: a signature and its description (kept as one unit).
OBJECT_DIRECTIVES = (
    "attribute",
    "method",
    "class",
    "function",
    "setting",
    "django-admin-option",
    "fieldlookup",
    "templatefilter",
    "exception",
    "templatetag",
    "data",
    "django-admin",
    "classmethod",
    "staticmethod",
    "envvar",
    "object",
    "option",
    "describe",
    "decorator",
)
# Directives whose whole content is dropped (code, version notes, navigation, markers).
DROPPED_DIRECTIVES = (
    "code-block",
    "sourcecode",
    "console",
    "versionadded",
    "versionchanged",
    "deprecated",
    "toctree",
    "module",
    "currentmodule",
    "index",
    "seealso",
    "program",
    "highlight",
    "literalinclude",
    "parsed-literal",
    "rubric",
    "image",
    "figure",
    "contents",
    "snippet",
    "only",
)
# Directives whose content is kept as ordinary text.
CONTAINER_DIRECTIVES = ("glossary", "tip", "hint", "caution", "important", "note", "warning")

_ROLE = re.compile(r":(?:[a-z]+:)?([a-z][a-z0-9-]*):`")
_LABEL = re.compile(r"^\.\. _([^:`]+):\s*$")
_UNDERLINE = re.compile(r"^([=\-`:'\"~^_*+#<>])\1{2,}\s*$")
_TITLED = re.compile(r"^(.*?)\s*<([^<>]+)>$", re.DOTALL)
_LINK_ROLES = re.compile(r":(doc|ref):`([^`]+)`")

DJANGO = Profile(
    name="djangodocs",
    drop_tags=SPHINX.drop_tags - {"aside"},
    drop_classes=SPHINX.drop_classes | frozenset({"system-message", "literal-block"}),
    drop_class_prefixes=SPHINX.drop_class_prefixes,
    drop_text=SPHINX.drop_text,
    api_entry=SPHINX.api_entry,
)


# --------------------------------------------------------------------------------------------
# reStructuredText -> HTML (docutils, with the Sphinx markup the pages use)


def _labels(sources: dict[str, str]) -> dict[str, tuple[str, str]]:
    """``.. _label:`` -> (page id, title of the section it marks, or "")."""
    out: dict[str, tuple[str, str]] = {}
    for page_id, text in sources.items():
        lines = text.splitlines()
        for i, line in enumerate(lines):
            m = _LABEL.match(line)
            if not m:
                continue
            rest = [x for x in lines[i + 1 : i + 6] if x.strip()]
            title = ""
            for a, b in itertools.pairwise(rest):
                if _UNDERLINE.match(b) and not _UNDERLINE.match(a) and not a.startswith(".."):
                    title = a.strip()
                    break
                if not _UNDERLINE.match(a):
                    break
            out.setdefault(m.group(1).strip().lower(), (page_id, title))
    return out


def _role_text(text: str, role: str, labels: dict[str, tuple[str, str]]) -> tuple[str, bool]:
    """(shown text, is code) of a cross-reference role's content."""
    m = _TITLED.match(text)
    if m and m.group(1):
        return m.group(1), False
    target = text.lstrip("!")
    if role == "ref":
        title = labels.get(target.lower(), ("", ""))[1]
        return (title or target), False
    if role in ("doc", "term", "file", "menuselection", "pypi", "ticket", "commit", "source"):
        return target, False
    if target.startswith("~"):
        target = target[1:].rsplit(".", 1)[-1]
    return target, True


def _register_docutils(labels: dict[str, tuple[str, str]], roles_used: set[str]) -> Any:
    try:
        from docutils import nodes
        from docutils.core import publish_parts
        from docutils.parsers.rst import Directive, directives, roles
    except ImportError:
        raise UserError(
            "building the Django docs corpus needs docutils: pip install 'sgrgym[seeker]' "
            "(with the project's constraints file)"
        ) from None

    class ObjectDescription(Directive):  # type: ignore[misc]
        has_content = True
        required_arguments = 0
        optional_arguments = 1
        final_argument_whitespace = True
        option_spec = None

        def run(self) -> list[Any]:
            signature = " ".join(self.arguments).strip()
            term = nodes.term("", signature, classes=["sig"])
            body = nodes.definition()
            self.state.nested_parse(self.content, self.content_offset, body)
            item = nodes.definition_list_item("", term, body)
            return [nodes.definition_list("", item)]

    class Dropped(Directive):  # type: ignore[misc]
        has_content = True
        optional_arguments = 10
        final_argument_whitespace = True
        option_spec = None

        def run(self) -> list[Any]:
            return []

    class Container(Directive):  # type: ignore[misc]
        has_content = True
        optional_arguments = 10
        final_argument_whitespace = True
        option_spec = None

        def run(self) -> list[Any]:
            box = nodes.container()
            self.state.nested_parse(self.content, self.content_offset, box)
            return [box]

    for name in OBJECT_DIRECTIVES:
        directives.register_directive(name, ObjectDescription)
    for name in DROPPED_DIRECTIVES:
        directives.register_directive(name, Dropped)
    for name in CONTAINER_DIRECTIVES:
        directives.register_directive(name, Container)

    def make_role(role: str) -> Callable[..., Any]:
        def role_fn(
            name: str,
            rawtext: str,
            text: str,
            lineno: int,
            inliner: Any,
            options: Any = None,
            content: Any = None,
        ) -> tuple[list[Any], list[Any]]:
            shown, code = _role_text(text, role, labels)
            node = nodes.literal(rawtext, shown) if code else nodes.Text(shown)
            return [node], []

        return role_fn

    for role in roles_used:
        if role not in ("rfc", "pep", "sup", "sub", "abbr", "emphasis", "strong", "literal"):
            roles.register_local_role(role, make_role(role))
    return publish_parts


def render_html(source: str, publish: Any) -> str:
    """One page's HTML body: the document title as ``<h1>``, its sections as ``<h2>`` ...

    A page with several top-level sections (docutils then promotes none to the title) is
    rendered with those sections as ``<h1>``: the first one's heading is the page title, as in
    Sphinx, and their subsections are the page's sections.
    """
    settings = {
        "report_level": 5,
        "halt_level": 5,
        "warning_stream": io.StringIO(),
        "file_insertion_enabled": False,
        "raw_enabled": False,
        "doctitle_xform": True,
        "initial_header_level": 2,
        "embed_stylesheet": False,
        "stylesheet_path": "",
        "input_encoding": "unicode",
    }
    parts = publish(source, writer="html5", settings_overrides=settings)
    if parts["title"]:
        return f"<main><h1>{parts['title']}</h1>{parts['body']}</main>"
    parts = publish(
        source, writer="html5", settings_overrides={**settings, "initial_header_level": 1}
    )
    return f"<main>{parts['body']}</main>"


# --------------------------------------------------------------------------------------------
# Pages


def read_sources(sdist: Path) -> dict[str, str]:
    """Page id -> reST text of every page under ``docs/`` (skipped folders and files left out)."""
    sources: dict[str, str] = {}
    try:
        with tarfile.open(sdist, "r:gz") as tar:
            for member in tar.getmembers():
                name = member.name
                if not (member.isfile() and name.startswith(DOCS_PREFIX) and name.endswith(".txt")):
                    continue
                page_id = name[len(DOCS_PREFIX) : -len(".txt")]
                top = page_id.split("/", 1)[0]
                if top in SKIP_DIRS or page_id in SKIP_PAGES:
                    continue
                handle = tar.extractfile(member)
                if handle is not None:
                    sources[page_id] = handle.read().decode("utf-8")
    except (tarfile.TarError, OSError, UnicodeDecodeError) as exc:
        raise UserError(f"{sdist}: cannot read the Django docs ({exc}); {FIX}") from None
    if not sources:
        raise UserError(f"{sdist}: no pages under {DOCS_PREFIX}; {FIX}")
    return dict(sorted(sources.items()))


def topic_of(page_id: str) -> str:
    """The page's folder (``ref/models``, ``topics/http``, ``howto``); ``top`` at the root."""
    folder = posixpath.dirname(page_id)
    return folder or "top"


def _links(page_id: str, text: str, labels: dict[str, tuple[str, str]]) -> frozenset[str]:
    out: set[str] = set()
    for role, body in _LINK_ROLES.findall(text):
        m = _TITLED.match(body)
        target = (m.group(2) if m else body).strip().lstrip("~!")
        if role == "ref":
            page = labels.get(target.lower(), ("", ""))[0]
        else:
            base = "" if target.startswith("/") else posixpath.dirname(page_id)
            page = posixpath.normpath(posixpath.join(base, target.lstrip("/")))
        if page and page != page_id:
            out.add(page)
    return frozenset(out)


def parse_pages(
    sources: dict[str, str], progress: Callable[[int, int, str], None] | None = None
) -> list[DocPage]:
    """Every page rendered and extracted, in id order (documents are not filtered)."""
    labels = _labels(sources)
    roles_used = {m for text in sources.values() for m in _ROLE.findall(text)}
    publish = _register_docutils(labels, roles_used)
    pages: list[DocPage] = []
    for i, (page_id, text) in enumerate(sources.items(), start=1):
        tree = parse_html(render_html(text, publish))
        root = DJANGO.root(tree)
        h1 = root.find(lambda e: e.tag == "h1")
        title = element_text(h1, DJANGO) if h1 is not None else ""
        page = extract_page(tree, DJANGO, PYDOCS_EXTRACT, title)
        document = make_document(
            page_id, title, "\n\n".join(page.abstract), topic_of(page_id), page.passages
        )
        links = _links(page_id, text, labels) & set(sources)
        pages.append(DocPage(document, links))
        if progress is not None:
            progress(i, len(sources), page_id)
    return pages


# --------------------------------------------------------------------------------------------
# Build and pin


def build_django_corpus(
    filters: CorpusFilter | None = None,
    *,
    selection: PydocsSelection | None = None,
    manifest: Path | None = DEFAULT_MANIFEST,
    progress: Callable[[int, int, str], None] | None = None,
    sdist: Path | None = None,
    quiet: bool = True,
    name: str = CORPUS_NAME,
) -> Corpus:
    """Fetch (or reuse) the pinned sdist, build the corpus and verify it against ``manifest``
    (``manifest=None``: unverified, for other filters or to re-pin)."""
    filters = filters or CorpusFilter()
    selection = selection or PydocsSelection()
    pinned: PydocsManifest | None = None
    if manifest is not None:
        pinned = load_manifest(manifest)
        if pinned.filters != filters or pinned.selection != selection or name != CORPUS_NAME:
            raise UserError(
                f"the filters/selection differ from those pinned in {manifest}; build an "
                "unverified corpus under another name instead"
            )
        if pinned.extract != PYDOCS_EXTRACT:
            raise UserError(f"{manifest}: extraction options differ from this version's")
    path = sdist if sdist is not None else fetch(DJANGO_SDIST, quiet=quiet)
    pages = parse_pages(read_sources(path), progress)
    corpus = Corpus(
        name=name,
        source=CorpusSource(kind="django-docs", package="django", version=DJANGO_SDIST.version),
        documents=tuple(select_documents(pages, filters, selection)),
    )
    if pinned is not None:
        verify_corpus(corpus, pinned, None, fix=FIX)
    return corpus


def write_manifest(path: Path = DEFAULT_MANIFEST, sdist: Path | None = None) -> PydocsManifest:
    """(Re)build the corpus unverified and pin it in ``path``."""
    filters, selection = CorpusFilter(), PydocsSelection()
    corpus = build_django_corpus(filters, selection=selection, manifest=None, sdist=sdist)
    pinned = make_manifest(corpus, DJANGO_SDIST.version, filters, selection)
    pinned = pinned.model_copy(update={"corpus": CORPUS_NAME, "package": "django"})
    write_json(canonical_json(pinned.model_dump(mode="json")).rstrip("\n"), path)
    return pinned
