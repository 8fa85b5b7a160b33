"""SeekerGym corpora (paper section 2.1, appendix B.1): documents split into goal passages.

A :class:`Document` has a title, an abstract (what the agent sees) and its goal passages in
document order; each :class:`Passage` carries its section path (heading texts) and an estimated
token count ``len(text) // 4`` as in the paper's tables. A :class:`Corpus` is a named list of
documents with a note of where they came from.

Builders:

- :func:`html_document` turns a generic HTML page into a document: the title from ``<h1>``
  (else ``<title>``), the abstract from the text before the first ``<h2>``, sections from
  ``<h2>``/``<h3>`` headings, one passage per paragraph; navigation, footers, figures and
  captions, code blocks, tables, tables of contents, link lists, boilerplate lines and very
  short fragments are dropped.
- :func:`wikipedia_document` does the same for Wikipedia's Parsoid (REST) article HTML, where
  sections are ``<section>`` elements; references, infoboxes, navboxes, hatnotes and the
  reference/link sections are dropped.
- :func:`import_jsonl` reads already-split documents, one JSON object a line.

:class:`CorpusFilter` holds the paper's quality filters (B.1.1 by default: at least 12
passages, fewer than 10% of passages under 48 tokens, abstract of 64-1024 tokens; optionally the
in/out link thresholds; :meth:`CorpusFilter.ml_surveys` gives B.1.2's survey filters).
:func:`save_corpus` / :func:`load_corpus` write and read a corpus as JSONL with deterministic bytes.
"""

from __future__ import annotations

import json
import re
import statistics
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from sgrgym.core.errors import UserError
from sgrgym.core.hashing import sha256_bytes
from sgrgym.core.inputs import BadJson, json_value, jsonl_lines, shorten
from sgrgym.core.io import write_atomic
from sgrgym.core.table import format_table

CORPUS_FORMAT = "sgrgym-seeker-corpus"
CORPUS_FORMAT_VERSION = 1


def estimate_tokens(text: str) -> int:
    """Tokens estimated as ``len(text) // 4`` (the paper's tables 5 and 7)."""
    return len(text) // 4


# --------------------------------------------------------------------------------------------
# Models


class Passage(BaseModel):
    """One goal passage: ``id`` is ``p<N>`` numbered from 1, ``order`` its 0-based position."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    section: tuple[str, ...]
    order: int = Field(ge=0)
    text: str = Field(min_length=1)

    @property
    def tokens(self) -> int:
        """Estimated tokens, ``len(text) // 4``."""
        return estimate_tokens(self.text)


class Document(BaseModel):
    """A document: the agent sees ``title`` and ``abstract``; ``passages`` are the goal set."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(min_length=1)
    title: str
    abstract: str
    topic: str = Field(min_length=1)
    passages: tuple[Passage, ...]

    @model_validator(mode="after")
    def _numbered(self) -> Document:
        for i, passage in enumerate(self.passages):
            if passage.order != i or passage.id != f"p{i + 1}":
                raise ValueError(
                    f"passage {i + 1} of document {self.id!r} has id {passage.id!r} and order "
                    f"{passage.order}; expected id 'p{i + 1}' and order {i}"
                )
        return self

    @property
    def n_passages(self) -> int:
        return len(self.passages)

    @property
    def abstract_tokens(self) -> int:
        return estimate_tokens(self.abstract)

    @property
    def tokens(self) -> int:
        """Estimated tokens of all passages together."""
        return sum(p.tokens for p in self.passages)

    @property
    def sections(self) -> list[tuple[str, ...]]:
        """Distinct section paths in document order."""
        return list(dict.fromkeys(p.section for p in self.passages))

    def short_passages(self, short_tokens: int = 48) -> int:
        """How many passages have fewer than ``short_tokens`` estimated tokens."""
        return sum(1 for p in self.passages if p.tokens < short_tokens)

    def short_ratio(self, short_tokens: int = 48) -> float:
        """Fraction of passages under ``short_tokens`` (1.0 for a document without passages)."""
        if not self.passages:
            return 1.0
        return self.short_passages(short_tokens) / len(self.passages)

    def passage(self, passage_id: str) -> Passage:
        """The passage with id ``passage_id``; a UserError when there is none."""
        for p in self.passages:
            if p.id == passage_id:
                return p
        raise UserError(f"document {self.id!r} has no passage {passage_id!r}")


class CorpusSource(BaseModel):
    """Where a corpus came from: a builder ``kind`` and, for packages, name and version."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: str
    package: str = ""
    version: str = ""
    note: str = ""


class Corpus(BaseModel):
    """A named list of documents with unique ids."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(min_length=1)
    source: CorpusSource
    documents: tuple[Document, ...]

    @model_validator(mode="after")
    def _unique_ids(self) -> Corpus:
        seen: set[str] = set()
        for doc in self.documents:
            if doc.id in seen:
                raise ValueError(f"duplicate document id {doc.id!r} in corpus {self.name!r}")
            seen.add(doc.id)
        return self

    @property
    def topics(self) -> list[str]:
        """Distinct topic clusters in document order."""
        return list(dict.fromkeys(d.topic for d in self.documents))

    @property
    def n_passages(self) -> int:
        return sum(d.n_passages for d in self.documents)

    def document(self, doc_id: str) -> Document:
        """The document with id ``doc_id``; a UserError when there is none."""
        for doc in self.documents:
            if doc.id == doc_id:
                return doc
        raise UserError(f"no document {doc_id!r} in corpus {self.name!r}")


def make_document(
    doc_id: str,
    title: str,
    abstract: str,
    topic: str,
    passages: Iterable[tuple[Sequence[str], str]],
) -> Document:
    """A document from ``(section path, text)`` pairs, numbering passages ``p1``, ``p2``, ..."""
    numbered = tuple(
        Passage(id=f"p{i + 1}", section=tuple(section), order=i, text=text)
        for i, (section, text) in enumerate(passages)
    )
    return Document(id=doc_id, title=title, abstract=abstract, topic=topic, passages=numbered)


# --------------------------------------------------------------------------------------------
# Filters (paper appendix B.1.1)


@dataclass(frozen=True)
class LinkCounts:
    """In-corpus links of one document: pages linking to it, pages it links to."""

    inbound: int
    outbound: int


_CAPTION = re.compile(r"^(?:Figure|Fig\.|Table|Listing|Algorithm|Chart)\s*[0-9IVX]+[.:]")


def caption_ratio(doc: Document) -> float:
    """Share of passages that read like a figure/table caption (``Figure 3: ...``)."""
    if not doc.passages:
        return 0.0
    return sum(1 for p in doc.passages if _CAPTION.match(p.text)) / len(doc.passages)


class CorpusFilter(BaseModel):
    """Document quality filters; defaults are the paper's encyclopedic ones (appendix B.1.1).

    A document passes with at least ``min_passages`` passages (and at most ``max_passages``), a
    short-passage ratio strictly below ``max_short_ratio`` (at most, with
    ``short_ratio_inclusive``; short: fewer than ``short_tokens`` tokens), an abstract of
    ``min_abstract_tokens`` to ``max_abstract_tokens`` tokens (both inclusive), and, where set,
    at least ``min_sections`` sections, a caption-like passage ratio strictly below
    ``max_caption_ratio``, at least ``min_inbound`` in-corpus pages linking to it and at least
    ``min_outbound`` it links to (B.1.1: 16 and 4 for the encyclopedic corpus; they need a
    source with a link graph). :meth:`ml_surveys` gives B.1.2's survey filters.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    min_passages: int = Field(default=12, ge=1)
    short_tokens: int = Field(default=48, ge=0)
    max_short_ratio: float = Field(default=0.1, gt=0.0, le=1.0)
    min_abstract_tokens: int = Field(default=64, ge=0)
    max_abstract_tokens: int = Field(default=1024, ge=0)
    max_passages: int | None = Field(default=None, ge=1)
    short_ratio_inclusive: bool = False
    min_sections: int | None = Field(default=None, ge=1)
    max_caption_ratio: float | None = Field(default=None, gt=0.0, le=1.0)
    min_inbound: int | None = Field(default=None, ge=0)
    min_outbound: int | None = Field(default=None, ge=0)

    @classmethod
    def ml_surveys(cls) -> CorpusFilter:
        """Appendix B.1.2: 30 < paragraphs < 237, >= 8 sections, short ratio <= 0.4195, caption
        ratio < 0.05 (no abstract bounds are given: none applied)."""
        return cls(
            min_passages=31,
            max_passages=236,
            max_short_ratio=0.4195,
            short_ratio_inclusive=True,
            min_sections=8,
            max_caption_ratio=0.05,
            min_abstract_tokens=0,
            max_abstract_tokens=10**9,
        )

    @property
    def needs_links(self) -> bool:
        return self.min_inbound is not None or self.min_outbound is not None

    def checks(self, doc: Document, links: LinkCounts | None = None) -> list[tuple[str, str]]:
        """(filter name, why ``doc`` fails it) for every filter it fails, in a fixed order."""
        out: list[tuple[str, str]] = []
        n = doc.n_passages
        if n < self.min_passages:
            out.append(("min passages", f"{n} passages (minimum {self.min_passages})"))
        if self.max_passages is not None and n > self.max_passages:
            out.append(("max passages", f"{n} passages (maximum {self.max_passages})"))
        ratio = doc.short_ratio(self.short_tokens)
        limit = self.max_short_ratio
        if ratio > limit or (ratio == limit and not self.short_ratio_inclusive):
            bound = "at most" if self.short_ratio_inclusive else "below"
            out.append(
                (
                    "short ratio",
                    f"short-passage ratio {ratio:.3f} (must be {bound} "
                    f"{limit}; short = under {self.short_tokens} tokens)",
                )
            )
        tokens = doc.abstract_tokens
        if not self.min_abstract_tokens <= tokens <= self.max_abstract_tokens:
            out.append(
                (
                    "abstract tokens",
                    f"abstract of {tokens} tokens (allowed "
                    f"{self.min_abstract_tokens}-{self.max_abstract_tokens})",
                )
            )
        if self.min_sections is not None and len(doc.sections) < self.min_sections:
            out.append(
                ("min sections", f"{len(doc.sections)} sections (minimum {self.min_sections})")
            )
        captions = caption_ratio(doc)
        if self.max_caption_ratio is not None and captions >= self.max_caption_ratio:
            out.append(
                (
                    "caption ratio",
                    f"caption-like ratio {captions:.3f} (must be below {self.max_caption_ratio})",
                )
            )
        if self.needs_links:
            if links is None:
                raise UserError(
                    f"{doc.id}: the in/out link filters need a source with an "
                    "in-corpus link graph; this one has none"
                )
            if self.min_inbound is not None and links.inbound < self.min_inbound:
                out.append(
                    (
                        "min inbound",
                        f"{links.inbound} in-corpus pages link to it (minimum {self.min_inbound})",
                    )
                )
            if self.min_outbound is not None and links.outbound < self.min_outbound:
                out.append(
                    (
                        "min outbound",
                        f"links to {links.outbound} in-corpus pages (minimum {self.min_outbound})",
                    )
                )
        return out

    def problems(self, doc: Document, links: LinkCounts | None = None) -> list[str]:
        """Why ``doc`` fails the filters (empty when it passes)."""
        return [why for _, why in self.checks(doc, links)]

    def passes(self, doc: Document, links: LinkCounts | None = None) -> bool:
        return not self.checks(doc, links)


@dataclass(frozen=True)
class FilterResult:
    """Documents that passed, and for each rejected document id the reasons."""

    kept: list[Document]
    rejected: dict[str, list[str]]


def filter_documents(documents: Iterable[Document], filters: CorpusFilter) -> FilterResult:
    """Split ``documents`` into those that pass ``filters`` and the rejected ones with reasons."""
    kept: list[Document] = []
    rejected: dict[str, list[str]] = {}
    for doc in documents:
        problems = filters.problems(doc)
        if problems:
            rejected[doc.id] = problems
        else:
            kept.append(doc)
    return FilterResult(kept, rejected)


# --------------------------------------------------------------------------------------------
# A small HTML tree on the standard library parser


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_VOID = _words("area base br col embed hr img input link meta param source track wbr")
# Start tags that close an open <p> (HTML's implied end tags, simplified).
_CLOSES_P = _words(
    "address article aside blockquote details div dl fieldset figcaption figure footer form "
    "h1 h2 h3 h4 h5 h6 header hr main nav ol p pre section table ul"
)
# Elements that bound the search for an open <p> / <li> / <dt> to close.
_SCOPES = _words("html body div section article main td th li dd dt blockquote table")
_BLOCK = _words(
    "address article aside blockquote body dd details div dl dt fieldset figcaption figure footer "
    "form h1 h2 h3 h4 h5 h6 header hr html li main nav ol p pre section summary table tbody td "
    "tfoot th thead tr ul caption br"
)
_HEADINGS = {f"h{n}": n for n in range(1, 7)}


@dataclass(eq=False)
class Element:
    """An HTML element: tag, attributes and children (elements or text)."""

    tag: str
    attrs: dict[str, str]
    children: list[Element | str] = field(default_factory=list)

    @property
    def classes(self) -> frozenset[str]:
        return frozenset(self.attrs.get("class", "").split())

    def elements(self) -> Iterator[Element]:
        """Child elements (not text)."""
        return (c for c in self.children if isinstance(c, Element))

    def iter(self) -> Iterator[Element]:
        """This element and all descendant elements in document order."""
        stack: list[Element] = [self]
        while stack:
            node = stack.pop()
            yield node
            stack.extend(reversed([c for c in node.children if isinstance(c, Element)]))

    def find(self, predicate: Callable[[Element], bool]) -> Element | None:
        """The first element (this one included) for which ``predicate`` holds."""
        return next((e for e in self.iter() if predicate(e)), None)


class _TreeBuilder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Element("#document", {})
        self.stack: list[Element] = [self.root]

    def _close_open(self, tags: frozenset[str], bounds: frozenset[str]) -> None:
        for i in range(len(self.stack) - 1, 0, -1):
            tag = self.stack[i].tag
            if tag in tags:
                del self.stack[i:]
                return
            if tag in bounds:
                return

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _CLOSES_P:
            self._close_open(frozenset({"p"}), _SCOPES)
        if tag == "li":
            self._close_open(frozenset({"li"}), frozenset({"ul", "ol"}))
        elif tag in ("dt", "dd"):
            self._close_open(frozenset({"dt", "dd"}), frozenset({"dl"}))
        elif tag == "tr":
            self._close_open(frozenset({"tr"}), frozenset({"table"}))
        elif tag in ("td", "th"):
            self._close_open(frozenset({"td", "th"}), frozenset({"tr", "table"}))
        element = Element(tag, {k: v or "" for k, v in attrs})
        self.stack[-1].children.append(element)
        if tag not in _VOID:
            self.stack.append(element)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.stack[-1].children.append(Element(tag, {k: v or "" for k, v in attrs}))

    def handle_endtag(self, tag: str) -> None:
        for i in range(len(self.stack) - 1, 0, -1):
            if self.stack[i].tag == tag:
                del self.stack[i:]
                return

    def handle_data(self, data: str) -> None:
        children = self.stack[-1].children
        if children and isinstance(children[-1], str):
            children[-1] += data
        else:
            children.append(data)


def parse_html(html: str) -> Element:
    """Parse ``html`` into an :class:`Element` tree (root tag ``#document``)."""
    builder = _TreeBuilder()
    builder.feed(html)
    builder.close()
    return builder.root


def normalize_space(text: str) -> str:
    """Collapse runs of whitespace to one space and strip the ends."""
    return " ".join(text.split())


# --------------------------------------------------------------------------------------------
# Extraction profiles: what to drop and where the content is

_CAPTION = re.compile(
    r"^\s*(fig(ure)?\.?|table|tab\.|listing|image|photo|plate|chart)"
    r"\s*[0-9ivx]+[a-z]?\s*[.:|—–-]",
    re.IGNORECASE,
)
_BOILERPLATE = re.compile(
    r"(©|\(c\)\s*\d{4}|copyright\b|all rights reserved|skip to (main )?content|back to top|"
    r"jump to (navigation|search|content)|edit this page|share (this|on)\b|cookies?\b|"
    r"privacy policy|terms of (use|service)|subscribe\b|sign (in|up)\b|log ?in\b|"
    r"last (updated|modified)|powered by|read more|table of contents|^contents$|^navigation$|"
    r"(previous|next) (page|topic|article|chapter)\b|found a bug\?|report a bug)",
    re.IGNORECASE,
)
_BOILERPLATE_MAX_CHARS = 200  # only short fragments are judged as boilerplate by their wording
_NO_DROP_TEXT = re.compile(r"(?!)")  # matches nothing

_GENERIC_DROP_TAGS = _words(
    "script style noscript template nav footer aside form button figure figcaption table pre "
    "svg math iframe select textarea object embed canvas audio video img picture caption head "
    "link meta input label dialog menu header"
)
_GENERIC_DROP_CLASSES = _words(
    "toc nav navbar navigation menu sidebar footer breadcrumb breadcrumbs caption figure "
    "skip-link cookie cookies share social advert ads advertisement pagination pager "
    "related-posts comments code highlight sr-only visually-hidden screen-reader-text "
    "footnote-reference"
)
_GENERIC_DROP_ROLES = _words("navigation contentinfo banner complementary search menu")
_GENERIC_DROP_IDS = _words("toc footer nav navigation sidebar menu header comments")
_SKIP_SECTIONS = frozenset(
    {
        "references",
        "notes",
        "citations",
        "sources",
        "bibliography",
        "external links",
        "further reading",
        "see also",
        "footnotes",
        "works cited",
        "notes and references",
    }
)


def _generic_root(tree: Element) -> Element:
    for predicate in (
        lambda e: e.tag == "main",
        lambda e: e.tag == "article",
        lambda e: e.attrs.get("role") == "main",
        lambda e: e.tag == "body",
    ):
        found = tree.find(predicate)
        if found is not None:
            return found
    return tree


def _never(_: Element) -> bool:
    return False


@dataclass(frozen=True)
class Profile:
    """Extraction rules for one kind of HTML source."""

    name: str
    drop_tags: frozenset[str] = _GENERIC_DROP_TAGS
    drop_classes: frozenset[str] = _GENERIC_DROP_CLASSES
    drop_class_prefixes: tuple[str, ...] = ()
    drop_roles: frozenset[str] = _GENERIC_DROP_ROLES
    drop_ids: frozenset[str] = _GENERIC_DROP_IDS
    drop_attr_values: tuple[tuple[str, str], ...] = ()  # (attribute, substring of its value)
    drop_text: re.Pattern[str] = _NO_DROP_TEXT  # paragraphs matching this are removed
    skip_sections: frozenset[str] = _SKIP_SECTIONS  # headings (lower case) whose content goes
    root: Callable[[Element], Element] = _generic_root
    api_entry: Callable[[Element], bool] = _never  # a <dl> whose entries stay separate units
    keep_header_with_h1: bool = True

    def dropped(self, e: Element) -> bool:
        """Whether element ``e`` (and everything in it) is removed."""
        if e.tag in self.drop_tags:
            return not (e.tag == "header" and self.keep_header_with_h1 and _has_h1(e))
        attrs = e.attrs
        if "hidden" in attrs or attrs.get("aria-hidden") == "true":
            return True
        if attrs.get("role") in self.drop_roles or attrs.get("id", "").lower() in self.drop_ids:
            return True
        for name, part in self.drop_attr_values:
            if part in attrs.get(name, ""):
                return True
        classes = attrs.get("class", "").split()
        if any(c in self.drop_classes for c in classes):
            return True
        if self.drop_class_prefixes and any(
            c.startswith(self.drop_class_prefixes) for c in classes
        ):
            return True
        return e.tag in ("ul", "ol") and _is_link_list(e)


def _has_h1(e: Element) -> bool:
    return e.find(lambda x: x.tag == "h1") is not None


def _is_link_list(e: Element) -> bool:
    """A list of at least two items that consist only of links (a TOC or navigation)."""
    items = [c for c in e.elements() if c.tag == "li"]
    if len(items) < 2:
        return False
    for item in items:
        text = normalize_space(_raw_text(item))
        links = normalize_space(
            " ".join(_raw_text(a) for a in item.iter() if a.tag == "a" and "href" in a.attrs)
        )
        if not text or text.replace(" ", "") != links.replace(" ", ""):
            return False
    return True


def _raw_text(e: Element) -> str:
    parts: list[str] = []
    for c in e.children:
        parts.append(c if isinstance(c, str) else " " + _raw_text(c) + " ")
    return "".join(parts)


GENERIC = Profile(name="html")

WIKIPEDIA = Profile(
    name="wikipedia",
    drop_classes=_GENERIC_DROP_CLASSES
    | _words(
        "reference references reflist mw-references-wrap mw-references infobox navbox "
        "navbox-styles vertical-navbox hatnote mw-editsection metadata ambox sidebar thumb "
        "gallery noprint mw-empty-elt shortdescription portalbox sistersitebox "
        "mw-cite-backlink side-box mbox-small dablink rellink mw-ref"
    ),
    drop_attr_values=(("typeof", "mw:Extension/references"), ("typeof", "mw:Extension/ref")),
    drop_roles=_GENERIC_DROP_ROLES | {"note"},
)


# --------------------------------------------------------------------------------------------
# Walking a page: headings and text blocks in document order


@dataclass(frozen=True)
class Heading:
    level: int
    text: str


@dataclass(frozen=True)
class Block:
    """A paragraph, or a definition/API entry (term + description) kept as one unit."""

    text: str
    unit: bool = False


class ExtractOptions(BaseModel):
    """How page text becomes passages.

    ``min_fragment_chars``: drop paragraphs shorter than this (stray labels, bylines).
    ``merge_min_tokens``: merge consecutive paragraphs of one section until a passage has at
    least this many tokens (0: one paragraph per passage); a short rest joins the previous
    passage of its section. ``section_depth``: heading levels below the title that start
    sections (2: ``<h2>`` and ``<h3>``); deeper headings do not split sections.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    min_fragment_chars: int = Field(default=20, ge=0)
    merge_min_tokens: int = Field(default=0, ge=0)
    section_depth: int = Field(default=2, ge=1, le=5)


class _Walker:
    def __init__(self, profile: Profile, options: ExtractOptions) -> None:
        self.profile = profile
        self.options = options
        self.events: list[Heading | Block] = []

    def keep(self, text: str) -> bool:
        """Whether a paragraph survives the text-level cleanup."""
        if len(text) < self.options.min_fragment_chars:
            return False
        if self.profile.drop_text.search(text) or _CAPTION.search(text):
            return False
        return not (len(text) <= _BOILERPLATE_MAX_CHARS and _BOILERPLATE.search(text))

    def text(self, e: Element) -> str:
        """Inline text of ``e`` without dropped descendants, whitespace collapsed."""
        return normalize_space("".join(self._text_parts(e)))

    def _text_parts(self, e: Element) -> Iterator[str]:
        for c in e.children:
            if isinstance(c, str):
                yield c
            elif not self.profile.dropped(c):
                block = c.tag in _BLOCK
                if block:
                    yield " "
                yield from self._text_parts(c)
                if block:
                    yield " "

    def walk(self, e: Element) -> None:
        """Append the headings and blocks under ``e`` to ``self.events``."""
        inline: list[str] = []
        for c in e.children:
            if isinstance(c, str):
                inline.append(c)
                continue
            if self.profile.dropped(c):
                continue
            if c.tag in _HEADINGS:
                self._flush(inline)
                self.events.append(Heading(_HEADINGS[c.tag], self.text(c)))
            elif c.tag == "dl":
                self._flush(inline)
                self.events.extend(self._entries(c))
            elif c.tag in _BLOCK:
                self._flush(inline)
                self.walk(c)
            else:
                inline.extend(self._text_parts(c))
        self._flush(inline)

    def _flush(self, inline: list[str], into: list[str] | None = None) -> None:
        text = normalize_space("".join(inline))
        inline.clear()
        if text and self.keep(text):
            if into is None:
                self.events.append(Block(text))
            else:
                into.append(text)

    def _entries(self, dl: Element) -> list[Heading | Block]:
        """Each entry of a definition list (its terms and descriptions) as one unit.

        API entries nested in a description follow their parent as units of their own; other
        nested definition lists are flattened into the description. An API entry without any
        description text (a signature alone) is dropped.
        """
        out: list[Heading | Block] = []
        terms: list[str] = []
        parts: list[str] = []
        nested: list[Heading | Block] = []

        def emit() -> None:
            head = "; ".join(t for t in terms if t)
            if parts:
                body = "\n".join(parts)
                text = f"{head}\n{body}" if head else body
                if not self.profile.drop_text.search(text):
                    out.append(Block(text, unit=True))
            elif head and not self.profile.api_entry(dl) and self.keep(head):
                out.append(Block(head))
            out.extend(nested)
            terms.clear()
            parts.clear()
            nested.clear()

        for c in dl.elements():
            if self.profile.dropped(c):
                continue
            if c.tag == "dt":
                if parts or nested:
                    emit()
                terms.append(self.text(c))
            elif c.tag == "dd":
                self._description(c, parts, nested)
        emit()
        return out

    def _description(self, e: Element, parts: list[str], nested: list[Heading | Block]) -> None:
        """Collect the paragraphs under ``e`` into ``parts``; nested API entries into ``nested``."""
        inline: list[str] = []
        for c in e.children:
            if isinstance(c, str):
                inline.append(c)
                continue
            if self.profile.dropped(c):
                continue
            if c.tag == "dl":
                self._flush(inline, parts)
                entries = self._entries(c)
                if self.profile.api_entry(c):
                    nested.extend(entries)
                else:
                    parts.extend(e.text for e in entries if isinstance(e, Block))
            elif c.tag in _BLOCK or c.tag in _HEADINGS:
                self._flush(inline, parts)
                self._description(c, parts, nested)
            else:
                inline.extend(self._text_parts(c))
        self._flush(inline, parts)


def element_text(e: Element, profile: Profile) -> str:
    """The text of ``e`` under ``profile``'s drop rules, whitespace collapsed."""
    return _Walker(profile, ExtractOptions()).text(e)


@dataclass(frozen=True)
class ExtractedPage:
    """Title, abstract paragraphs and ``(section path, text)`` passages of one page."""

    title: str
    abstract: list[str]
    passages: list[tuple[tuple[str, ...], str]]


def _heading_key(text: str) -> str:
    return text.strip().rstrip(":.").strip().lower()


def extract_page(
    tree: Element, profile: Profile, options: ExtractOptions, title: str
) -> ExtractedPage:
    """Walk the content root of ``tree``: the abstract is everything before the first heading
    of level 2; ``<h2>``.. headings down to ``options.section_depth`` levels build section paths.
    """
    walker = _Walker(profile, options)
    walker.walk(profile.root(tree))
    abstract: list[str] = []
    blocks: list[tuple[tuple[str, ...], str]] = []
    path: list[str] = []
    seen_h2 = False
    skip_level: int | None = None
    deepest = 1 + options.section_depth
    for event in walker.events:
        if isinstance(event, Heading):
            if event.level == 1:
                continue
            if skip_level is not None and event.level <= skip_level:
                skip_level = None
            if event.level == 2:
                seen_h2 = True
            if skip_level is None and _heading_key(event.text) in profile.skip_sections:
                skip_level = event.level
            if event.level <= deepest:
                path = [*path[: event.level - 2], event.text]  # a skipped level just nests
            continue
        if skip_level is not None:
            continue
        if not seen_h2:
            abstract.append(event.text)
        else:
            blocks.append((tuple(path), event.text))
    passages = merge_paragraphs(blocks, options.merge_min_tokens)
    return ExtractedPage(title=title, abstract=abstract, passages=passages)


def merge_paragraphs(
    blocks: Sequence[tuple[tuple[str, ...], str]], min_tokens: int
) -> list[tuple[tuple[str, ...], str]]:
    """Merge consecutive paragraphs of the same section until each has ``min_tokens`` tokens.

    A short rest at a section's end joins the section's previous passage; a section whose
    paragraphs together stay short remains one short passage. ``min_tokens=0`` keeps one
    passage per paragraph.
    """
    out: list[tuple[tuple[str, ...], str]] = []
    i = 0
    while i < len(blocks):
        section = blocks[i][0]
        texts: list[str] = []
        while i < len(blocks) and blocks[i][0] == section:
            texts.append(blocks[i][1])
            i += 1
        merged: list[str] = []
        buffer: list[str] = []
        for text in texts:
            buffer.append(text)
            joined = "\n\n".join(buffer)
            if estimate_tokens(joined) >= min_tokens:
                merged.append(joined)
                buffer = []
        if buffer:
            rest = "\n\n".join(buffer)
            if merged:
                merged[-1] = merged[-1] + "\n\n" + rest
            else:
                merged.append(rest)
        out.extend((section, text) for text in merged)
    return out


def _page_title(tree: Element, walker: _Walker, root: Element) -> str:
    for scope in (root, tree):
        h1 = scope.find(lambda e: e.tag == "h1")
        if h1 is not None and walker.text(h1):
            return walker.text(h1)
    title = tree.find(lambda e: e.tag == "title")
    return normalize_space(_raw_text(title)) if title is not None else ""


def _document_from_html(
    html: str, doc_id: str, topic: str, profile: Profile, options: ExtractOptions
) -> Document:
    tree = parse_html(html)
    walker = _Walker(profile, options)
    title = _page_title(tree, walker, profile.root(tree))
    page = extract_page(tree, profile, options, title)
    return make_document(doc_id, page.title, "\n\n".join(page.abstract), topic, page.passages)


def html_document(
    html: str, doc_id: str, topic: str, options: ExtractOptions | None = None
) -> Document:
    """A document from a generic HTML page (see the module docstring for the rules)."""
    return _document_from_html(html, doc_id, topic, GENERIC, options or ExtractOptions())


def _wikipedia_title(tree: Element) -> str:
    title = tree.find(lambda e: e.tag == "title")
    if title is not None and normalize_space(_raw_text(title)):
        return normalize_space(_raw_text(title))
    h1 = tree.find(lambda e: e.tag == "h1")
    return normalize_space(_raw_text(h1)) if h1 is not None else ""


def wikipedia_document(
    html: str, doc_id: str, topic: str, options: ExtractOptions | None = None
) -> Document:
    """A document from Wikipedia's Parsoid/REST article HTML.

    The lead section (before the first ``<h2>``) is the abstract; ``<section>`` elements with
    ``<h2>``/``<h3>`` headings give the section paths. References and citation markers,
    infoboxes, navboxes, hatnotes, figures, tables and the reference/link sections (References,
    Notes, External links, See also, ...) are dropped.
    """
    opts = options or ExtractOptions()
    tree = parse_html(html)
    page = extract_page(tree, WIKIPEDIA, opts, _wikipedia_title(tree))
    return make_document(doc_id, page.title, "\n\n".join(page.abstract), topic, page.passages)


# --------------------------------------------------------------------------------------------
# JSONL: import of split corpora, and save/load


class CorpusFileError(UserError):
    """Records of a corpus file are invalid; nothing was loaded."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        shown = problems[:20]
        text = "\n".join(f"  - {p}" for p in shown)
        if len(problems) > len(shown):
            text += f"\n  ... and {len(problems) - len(shown)} more"
        super().__init__(f"invalid corpus file, nothing loaded:\n{text}")


class _RawPassage(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    id: str | None = None
    section: list[str]
    text: str = Field(min_length=1)


class _RawDocument(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    id: str = Field(min_length=1)
    title: str
    abstract: str
    topic: str = Field(min_length=1)
    passages: list[_RawPassage]


class _Header(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    format: str
    version: int
    name: str = Field(min_length=1)
    source: CorpusSource
    documents: int


def _field_path(loc: Sequence[int | str]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(record)"


def _parse_document(record: Any, where: str) -> tuple[Document | None, list[str]]:
    try:
        raw = _RawDocument.model_validate(record)
    except ValidationError as err:
        return None, [f"{where}: field {_field_path(e['loc'])}: {e['msg']}" for e in err.errors()]
    problems = [
        f"{where}: field passages[{i}].id: {shorten(repr(p.id))} should be 'p{i + 1}' "
        "(passages are numbered from 1 in order)"
        for i, p in enumerate(raw.passages)
        if p.id is not None and p.id != f"p{i + 1}"
    ]
    if problems:
        return None, problems
    doc = make_document(
        raw.id, raw.title, raw.abstract, raw.topic, ((p.section, p.text) for p in raw.passages)
    )
    return doc, []


def _read_lines(path: Path) -> Iterator[tuple[int, str]]:
    return jsonl_lines(path, "corpus file", allow_empty=True)


def _parse_documents(
    lines: Iterable[tuple[int, str]], path: Path, problems: list[str]
) -> list[Document]:
    documents: list[Document] = []
    first_line: dict[str, int] = {}
    for number, line in lines:
        where = f"{path} line {number}"
        try:
            record = json_value(line)
        except BadJson as err:
            problems.append(f"{where}: {err}")
            continue
        doc, errors = _parse_document(record, where)
        problems.extend(errors)
        if doc is None:
            continue
        if doc.id in first_line:
            problems.append(
                f"{where}: field id: duplicate document id {shorten(repr(doc.id))} (first on line "
                f"{first_line[doc.id]})"
            )
            continue
        first_line[doc.id] = number
        documents.append(doc)
    return documents


def import_jsonl(path: Path, name: str | None = None) -> Corpus:
    """Read already-split documents, one JSON object a line::

        {"id": ..., "title": ..., "abstract": ..., "topic": ...,
         "passages": [{"section": ["Heading", "Subheading"], "text": ...}, ...]}

    Passages are numbered ``p1``, ``p2``, ... in line order (an optional ``id`` must match).
    Every problem is reported with file, line and field; nothing is loaded if any is found.
    The corpus is named ``name`` or the file's stem. Filters are not applied.
    """
    problems: list[str] = []
    documents = _parse_documents(_read_lines(path), path, problems)
    if not documents and not problems:
        problems.append(f"{path}: no documents")
    if problems:
        raise CorpusFileError(problems)
    return Corpus(
        name=name or path.stem,
        source=CorpusSource(kind="jsonl", note=path.name),
        documents=tuple(documents),
    )


def _dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def document_record(doc: Document) -> dict[str, Any]:
    """The JSON record of a document (the import format, with passage ids)."""
    return {
        "id": doc.id,
        "title": doc.title,
        "abstract": doc.abstract,
        "topic": doc.topic,
        "passages": [
            {"id": p.id, "section": list(p.section), "text": p.text} for p in doc.passages
        ],
    }


def corpus_bytes(corpus: Corpus) -> bytes:
    """The saved form: a header line, then one document per line (sorted keys, compact)."""
    header = {
        "format": CORPUS_FORMAT,
        "version": CORPUS_FORMAT_VERSION,
        "name": corpus.name,
        "source": corpus.source.model_dump(),
        "documents": len(corpus.documents),
    }
    lines = [_dumps(header)] + [_dumps(document_record(d)) for d in corpus.documents]
    return ("\n".join(lines) + "\n").encode("utf-8")


def corpus_sha256(corpus: Corpus) -> str:
    """sha256 of :func:`corpus_bytes` (the same corpus always gives the same hash)."""
    return sha256_bytes(corpus_bytes(corpus))


def save_corpus(corpus: Corpus, path: Path) -> str:
    """Write ``corpus`` to ``path`` atomically (deterministic bytes); returns their sha256."""
    data = corpus_bytes(corpus)
    write_atomic(path, data, parents=True)
    return sha256_bytes(data)


def load_corpus(path: Path) -> Corpus:
    """Read a corpus written by :func:`save_corpus`; problems name the file, line and field."""
    lines = list(_read_lines(path))
    if not lines:
        raise CorpusFileError([f"{path}: empty file"])
    number, first = lines[0]
    try:
        header = _Header.model_validate(json_value(first))
    except (BadJson, ValidationError):
        raise CorpusFileError(
            [
                f"{path} line {number}: not a saved corpus header (expected format "
                f"{CORPUS_FORMAT!r}); to read plain documents use import_jsonl"
            ]
        ) from None
    if header.format != CORPUS_FORMAT or header.version != CORPUS_FORMAT_VERSION:
        raise CorpusFileError(
            [
                f"{path} line {number}: format {shorten(repr(header.format))} version "
                f"{header.version} is not {CORPUS_FORMAT!r} version {CORPUS_FORMAT_VERSION}"
            ]
        )
    problems: list[str] = []
    documents = _parse_documents(lines[1:], path, problems)
    if not problems and len(documents) != header.documents:
        problems.append(
            f"{path}: header announces {header.documents} documents, the file has "
            f"{len(documents)} (truncated?)"
        )
    if problems:
        raise CorpusFileError(problems)
    return Corpus(name=header.name, source=header.source, documents=tuple(documents))


def build_corpus(
    name: str,
    documents: Iterable[Document],
    source: CorpusSource,
    filters: CorpusFilter | None = None,
) -> tuple[Corpus, FilterResult]:
    """A corpus of the documents that pass ``filters`` (the paper's defaults when None)."""
    result = filter_documents(documents, filters or CorpusFilter())
    return Corpus(name=name, source=source, documents=tuple(result.kept)), result


# --------------------------------------------------------------------------------------------
# Statistics (paper table 2 and tables 5/7)


class Summary(BaseModel):
    """Mean, median, quartiles and range of a list of numbers."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    mean: float
    median: float
    q1: float
    q3: float
    min: float
    max: float

    @classmethod
    def of(cls, values: Sequence[float]) -> Summary:
        if not values:
            return cls(mean=0.0, median=0.0, q1=0.0, q3=0.0, min=0.0, max=0.0)
        ordered = sorted(values)
        if len(ordered) == 1:
            q1 = median = q3 = float(ordered[0])
        else:
            q1, median, q3 = statistics.quantiles(ordered, n=4, method="inclusive")
        return cls(
            mean=round(statistics.fmean(ordered), 4),
            median=round(median, 4),
            q1=round(q1, 4),
            q3=round(q3, 4),
            min=float(ordered[0]),
            max=float(ordered[-1]),
        )


class CorpusStats(BaseModel):
    """Corpus-level numbers like the paper's table 2 (tokens estimated as ``len // 4``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    documents: int
    clusters: int
    passages: int
    passages_per_document: Summary
    tokens_per_passage: Summary
    abstract_tokens: Summary
    short_passage_ratio: float  # fraction of all passages under 48 tokens
    documents_per_cluster: dict[str, int]


def corpus_stats(corpus: Corpus, short_tokens: int = 48) -> CorpusStats:
    """Statistics of ``corpus`` (short passages: fewer than ``short_tokens`` tokens)."""
    docs = corpus.documents
    tokens = [p.tokens for d in docs for p in d.passages]
    per_cluster: dict[str, int] = {}
    for d in docs:
        per_cluster[d.topic] = per_cluster.get(d.topic, 0) + 1
    short = sum(1 for t in tokens if t < short_tokens)
    return CorpusStats(
        documents=len(docs),
        clusters=len(per_cluster),
        passages=len(tokens),
        passages_per_document=Summary.of([d.n_passages for d in docs]),
        tokens_per_passage=Summary.of(tokens),
        abstract_tokens=Summary.of([d.abstract_tokens for d in docs]),
        short_passage_ratio=round(short / len(tokens), 4) if tokens else 0.0,
        documents_per_cluster=dict(sorted(per_cluster.items())),
    )


def render_stats(stats: CorpusStats, name: str = "", by_cluster: bool = False) -> str:
    """Plain-text tables of ``stats``: counts, then mean / median [Q1-Q3] / range per measure."""
    counts = format_table(
        [name or "Corpus", "Value"],
        [
            ["Documents", str(stats.documents)],
            ["Topic clusters", str(stats.clusters)],
            ["Passages", str(stats.passages)],
            ["Short passages (< 48 tokens)", f"{100 * stats.short_passage_ratio:.1f}%"],
        ],
    )

    def row(label: str, s: Summary) -> list[str]:
        return [
            label,
            f"{s.mean:.1f}",
            f"{s.median:g}",
            f"{s.q1:g}-{s.q3:g}",
            f"{s.min:g}-{s.max:g}",
        ]

    spread = format_table(
        ["Measure", "Mean", "Median", "Q1-Q3", "Min-Max"],
        [
            row("Passages / document", stats.passages_per_document),
            row("Tokens / passage", stats.tokens_per_passage),
            row("Abstract tokens", stats.abstract_tokens),
        ],
    )
    out = counts + "\n\n" + spread
    if by_cluster:
        out += "\n\n" + format_table(
            ["Topic cluster", "Documents"],
            [[t, str(n)] for t, n in stats.documents_per_cluster.items()],
        )
    return out
