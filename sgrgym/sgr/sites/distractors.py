"""Distractor sites: small text-only sites that share the task sites' vocabulary.

A web search engine does not only return the one site that holds the answer. These sites (a
chemistry blog, a security newsletter, a geography quiz site and a study forum) talk about
elements, isotopes, weaknesses, countries and cities in general terms, with no data tables
and no lists of values, so that a search for a task's instruction returns them beside the
target site's entry pages and finding the right site is a real step. All text is written
here; every page is indexable and none has controls.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from sgrgym.sgr.sites.app import SiteApp
from sgrgym.sgr.sites.model import Route, SiteModel, State
from sgrgym.sgr.sites.page import render_text_page

LICENCE = "text written for sgrgym (same licence as sgrgym)"


@dataclass(frozen=True)
class Article:
    title: str
    paragraphs: tuple[str, ...]

    @property
    def path(self) -> str:
        slug = re.sub(r"[^a-z0-9]+", "-", self.title.lower()).strip("-")
        return f"/{slug}"


class TextSite(SiteApp):
    """A site of articles: a front page listing them, and one page per article."""

    def __init__(self, name: str, title: str, intro: str, articles: Sequence[Article]) -> None:
        self.intro = intro
        self.articles = {a.path: a for a in articles}
        routes = (
            Route(path="/", title="Home"),
            *(Route(path=a.path, title=a.title) for a in articles),
        )
        self.model = SiteModel(
            name=name,
            title=title,
            host=f"{name}.sgrgym.test",
            routes=routes,
            source="sgrgym",
            licence=LICENCE,
            indexable=tuple(a.path for a in articles),
        )

    def pages(self) -> dict[str, Callable[[State], bytes]]:
        pages: dict[str, Callable[[State], bytes]] = {"/": self._front}
        for path in self.articles:
            pages[path] = self._article
        return pages

    def _front(self, state: State) -> bytes:
        listing = [f"{a.title}: {a.paragraphs[0]}" for a in self.articles.values()]
        return render_text_page(self.model, state, self.model.title, [self.intro, *listing])

    def _article(self, state: State) -> bytes:
        article = self.articles[state.path]
        return render_text_page(self.model, state, article.title, article.paragraphs)

    def states(self) -> Iterable[State]:
        return [self.model.state(route.path) for route in self.model.routes]


def chem_notes() -> TextSite:
    """A chemistry teacher's blog."""
    return TextSite(
        "chem-notes",
        "Chem Notes - a classroom chemistry blog",
        "Short essays for students about the periodic table, its series and its isotopes.",
        [
            Article(
                "Why the actinide series is hard to teach",
                (
                    "The actinides fill the 5f subshell, and most of them were made in reactors "
                    "or accelerators rather than found in rocks.",
                    "Students often ask which actinide was discovered first and which one last. "
                    "We suggest looking it up in a proper element database and sorting by "
                    "discovery year instead of trusting a textbook table, which may be out of "
                    "date.",
                    "Keep in mind that the discovery year of an element is a matter of record "
                    "keeping: some were isolated long after they were first identified.",
                ),
            ),
            Article(
                "Halogens in the kitchen and the lab",
                (
                    "Fluorine, chlorine, bromine and iodine are the halogens everyone meets first: "
                    "in toothpaste, table salt, old photographs and disinfectant.",
                    "Each halogen has a handful of isotopes, most of them radioactive with short "
                    "half-lives. Which ones were found in the 1930s and 1940s, when particle "
                    "accelerators became common, is a good exercise for a library session.",
                ),
            ),
            Article(
                "Counting isotopes: stable, radioactive, natural",
                (
                    "An isotope is stable when no decay has been observed. Radioactive isotopes "
                    "have a half-life, given in units from fractions of a second to billions of "
                    "years. Naturally occurring isotopes are the ones found on Earth in measurable "
                    "abundance, given as a percentage.",
                    "Light elements of the s block such as potassium and calcium have several "
                    "naturally occurring isotopes; the mass number tells them apart.",
                ),
            ),
            Article(
                "Blocks and periods of the periodic table",
                (
                    "The table is split into s, p, d and f blocks by the subshell being filled. "
                    "Each row is a period; the fifth period of the d block runs from yttrium to "
                    "cadmium.",
                    "Group numbers run from 1 to 18 across the table. Transition metals sit in the "
                    "d block, lanthanides and actinides in the f block.",
                ),
            ),
        ],
    )


def secure_digest() -> TextSite:
    """A software security newsletter."""
    return TextSite(
        "secure-digest",
        "Secure Digest - notes on software weaknesses",
        "A newsletter about weakness catalogues, vulnerability rankings and secure coding.",
        [
            Article(
                "Reading a weakness catalogue entry",
                (
                    "A catalogue entry describes a type of mistake, not a single vulnerability. "
                    "Entries carry an identifier, a name, an abstraction level such as Pillar, "
                    "Class, Base or Variant, and a status such as Draft, Incomplete or Stable.",
                    "The likelihood of exploit field, when present, is an editorial judgement and "
                    "ranges from Low to High. The submission date records when an entry was first "
                    "proposed, not when the weakness was first seen.",
                ),
            ),
            Article(
                "What the yearly Top 25 lists measure",
                (
                    "Every year a list of the 25 most dangerous software weaknesses is published, "
                    "ranked by how often and how severely they appear in published "
                    "vulnerabilities. The 2020 and 2023 editions differ in method and in order.",
                    "Out-of-bounds writes, injection flaws and use-after-free bugs have been near "
                    "the top in recent editions, but the exact rank of each changes from year to "
                    "year, so quote a rank only together with its edition.",
                ),
            ),
            Article(
                "Views and categories in weakness taxonomies",
                (
                    "The same weaknesses can be arranged in several views: a research view built "
                    "on ChildOf relations, a software development view built from categories, and "
                    "views that are simply lists such as a Top 25 edition.",
                    "A category groups weaknesses by a shared theme, such as memory buffer errors "
                    "or injection. Many members of a category are still marked Draft.",
                ),
            ),
            Article(
                "New Base weaknesses since 2021",
                (
                    "Recent catalogue versions added many Base-level entries, especially for "
                    "hardware designs and machine learning systems. If you need the exact list, "
                    "filter the catalogue by submission year and abstraction level yourself.",
                ),
            ),
        ],
    )


def atlas_trivia() -> TextSite:
    """A geography quiz site."""
    return TextSite(
        "atlas-trivia",
        "Atlas Trivia - geography quizzes",
        "Quiz questions and background reading about countries, capitals and cities.",
        [
            Article(
                "South America by the numbers",
                (
                    "South America has twelve sovereign countries and a few territories. The most "
                    "populous country holds about half of the continent's people, and its largest "
                    "states and regions each contain several cities above half a million "
                    "inhabitants.",
                    "Quiz tip: population figures differ between sources and years, so always say "
                    "which data release your numbers come from.",
                ),
            ),
            Article(
                "The two CFA francs",
                (
                    "Two currencies share the name CFA franc: one used in Central Africa (code "
                    "XAF) "
                    "and one in West Africa (code XOF). Both are pegged to the euro.",
                    "The Central African countries that use it range from very large in area to "
                    "quite small; sorting them by area in square kilometres makes a good quiz.",
                ),
            ),
            Article(
                "Cities of Oceania",
                (
                    "Oceania's population is concentrated in a few countries, and most of its "
                    "people live in coastal cities. Only a small number of cities there pass a "
                    "quarter of a million inhabitants.",
                ),
            ),
            Article(
                "Germany's federal states",
                (
                    "Germany is divided into sixteen federal states, which are the first-level "
                    "administrative regions in most gazetteers, each with its own code.",
                    "North Rhine-Westphalia has the most towns of more than 15,000 people; the "
                    "city states of Berlin, Hamburg and Bremen are regions of their own.",
                ),
            ),
        ],
    )


def study_forum() -> TextSite:
    """A homework question forum."""
    return TextSite(
        "study-forum",
        "Study Forum - questions and answers",
        "Students ask, other students answer. Answers are not checked by teachers.",
        [
            Article(
                "Where do I find discovery years of elements",
                (
                    "Question: my assignment asks for the discovery year of each element in a "
                    "series, sorted from earliest to latest. Where can I find reliable years?",
                    "Answer: use a reference portal that lets you filter the element list by "
                    "series and sort it by discovery year; copying from random web pages gets "
                    "you conflicting years.",
                ),
            ),
            Article(
                "How to list isotopes with half-life and unit",
                (
                    "Question: for a lab report I need isotopes with their mass number, "
                    "half-life and the unit of the half-life, only those discovered in a given "
                    "span of years. Is there a list?",
                    "Answer: isotope lists in element databases usually let you set a window of "
                    "discovery years and sort by half-life, descending or ascending.",
                ),
            ),
            Article(
                "Which weakness list should I cite",
                (
                    "Question: my report cites the weakness ranked third in the Top 25, but my "
                    "classmates quote a different weakness. Who is right?",
                    "Answer: probably both. Check the edition year and the catalogue version; "
                    "ranks are only meaningful together with them.",
                ),
            ),
            Article(
                "Counting cities per region for a geography project",
                (
                    "Question: I need, for every first-level region of a country, the number of "
                    "cities above 15,000 inhabitants and the largest city with its population.",
                    "Answer: a gazetteer with an area browser (continent, country, region) shows "
                    "such counts directly; otherwise filter a city list by country and region.",
                ),
            ),
        ],
    )
