"""The Django docs corpus: reST rendering rules on pages of our own, the sdist reader, the pinned
build (verified against its manifest when the pinned sdist is cached)."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import pytest

from sgrgym.core.artifacts import cache_dir
from sgrgym.core.errors import UserError
from sgrgym.seeker.corpus import CorpusFilter
from sgrgym.seeker.djangodocs import (
    DEFAULT_MANIFEST,
    DJANGO_SDIST,
    DOCS_PREFIX,
    build_django_corpus,
    parse_pages,
    read_sources,
    topic_of,
)
from sgrgym.seeker.pydocs import PydocsSelection, load_manifest, make_manifest

ROOT = Path(__file__).resolve().parent.parent
SDIST = cache_dir() / "artifacts" / DJANGO_SDIST.filename

WORDS = "the cache keeps rendered fragments near the request so later visits skip the database "


def _para(n: int, seed: str) -> str:
    return f"{seed} " + WORDS * n


PAGE = f"""
.. _caching-guide:

=================
Caching in detail
=================

{_para(8, "Intro")} See :doc:`the sessions page <sessions>` and :setting:`CACHES`.

.. versionadded:: 6.0

    {_para(3, "Versionnote")}

Backends
========

{_para(6, "Backends")} Use :class:`~django.core.cache.backends.base.BaseCache` directly.

.. code-block:: python

    CACHES = {{"default": {{}}}}

.. setting:: CACHE_TIMEOUT

    {_para(6, "Timeout")}

.. note::

    {_para(6, "Notebox")}

Tuning
------

{_para(6, "Tuning")} Read :ref:`caching-guide` and :ref:`sessions-intro`.
"""

SESSIONS = f"""
.. _sessions-intro:

Sessions
========

{_para(8, "Sessionsintro")} Back to :doc:`/topics/cache`.

Second top-level part
=====================

Stored data
-----------

{_para(6, "Stored")}
"""


def _sources() -> dict[str, str]:
    return {"topics/cache": PAGE, "topics/sessions": SESSIONS}


def test_rendering_rules_on_a_page_of_our_own() -> None:
    pages = {p.document.id: p for p in parse_pages(_sources())}
    doc = pages["topics/cache"].document
    assert doc.title == "Caching in detail" and doc.topic == "topics"
    assert doc.abstract.startswith("Intro ") and "the sessions page and CACHES." in doc.abstract
    text = "\n".join(p.text for p in doc.passages)
    assert "Versionnote" not in text and "CACHES = {" not in text  # version note, code dropped
    assert "Use BaseCache directly." in text  # ~ keeps the last dotted part
    assert "CACHE_TIMEOUT" in text and "Timeout" in text  # a signature with its description
    assert "Notebox" in text  # notes keep their text
    assert "Read Caching in detail and Sessions." in text  # :ref: shows the section title
    assert {p.section for p in doc.passages} >= {("Backends",), ("Backends", "Tuning")}
    assert pages["topics/cache"].links == {"topics/sessions"}
    assert pages["topics/sessions"].links == {"topics/cache"}


def test_several_top_level_sections_take_the_first_as_title() -> None:
    doc = next(p.document for p in parse_pages(_sources()) if p.document.id == "topics/sessions")
    assert doc.title == "Sessions" and doc.abstract.startswith("Sessionsintro")
    assert [p.section for p in doc.passages] == [("Stored data",)]


def test_topic_is_the_folder() -> None:
    assert topic_of("ref/models/fields") == "ref/models"
    assert topic_of("howto/windows") == "howto" and topic_of("glossary") == "top"


def _tarball(tmp_path: Path, files: dict[str, str]) -> Path:
    path = tmp_path / "django-test.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        for name, text in files.items():
            data = text.encode("utf-8")
            info = tarfile.TarInfo(DOCS_PREFIX + name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def test_sdist_reader_skips_releases_theme_and_build_files(tmp_path: Path) -> None:
    sdist = _tarball(
        tmp_path,
        {
            "topics/cache.txt": PAGE,
            "releases/6.1.txt": PAGE,
            "requirements.txt": "sphinx",
            "index.txt": "x",
            "topics/notes.rst": PAGE,
        },
    )
    assert list(read_sources(sdist)) == ["topics/cache"]
    (tmp_path / "bad.tar.gz").write_bytes(b"not a tarball")
    with pytest.raises(UserError, match=r"bad\.tar\.gz: cannot read the Django docs"):
        read_sources(tmp_path / "bad.tar.gz")


def test_build_verifies_against_a_manifest_and_names_a_changed_document(tmp_path: Path) -> None:
    sdist = _tarball(tmp_path, {f"topics/{k.split('/')[1]}.txt": v for k, v in _sources().items()})
    filters = CorpusFilter(min_passages=1, min_abstract_tokens=1, max_short_ratio=1.0)
    corpus = build_django_corpus(filters, manifest=None, sdist=sdist)
    assert [d.id for d in corpus.documents] == ["topics/cache", "topics/sessions"]
    manifest = make_manifest(corpus, DJANGO_SDIST.version, filters, PydocsSelection())
    path = tmp_path / "manifest.json"
    path.write_text(manifest.model_dump_json(), encoding="utf-8")
    again = build_django_corpus(filters, manifest=path, sdist=sdist)
    assert again == corpus
    data = json.loads(path.read_text(encoding="utf-8"))
    data["documents"][1]["passage_sha256"][0] = "0" * 64
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(UserError, match=r"'topics/sessions' does not match .*passage p1.*sdist"):
        build_django_corpus(filters, manifest=path, sdist=sdist)


@pytest.mark.skipif(not SDIST.is_file(), reason="the pinned Django sdist is not cached")
def test_the_pinned_sdist_builds_the_pinned_demo_corpus() -> None:
    manifest = load_manifest(ROOT / DEFAULT_MANIFEST)
    corpus = build_django_corpus(manifest=ROOT / DEFAULT_MANIFEST, sdist=SDIST)  # verifies
    assert len(corpus.documents) == len(manifest.documents) == 64
    assert sum(d.n_passages for d in corpus.documents) == manifest.stats.passages == 3494
    assert not any(d.id.startswith("releases/") for d in corpus.documents)
    assert all(CorpusFilter().passes(d) for d in corpus.documents)
