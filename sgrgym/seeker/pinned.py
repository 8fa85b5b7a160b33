"""A corpus is read only after it is checked against its pins.

The pins of a corpus file: the ``corpus_sha256`` of the passage store built from it
(``embeddings/<corpus>__<model>/manifest.json``) and, for a pinned corpus (the demo
``djangodocs``, or ``pydocs`` from Debian's package), the one in
``tasks/seeker/<corpus>/manifest.json``. Every command that reads a corpus loads it here, so a
changed document id or passage is refused even where no vector is used (``calibrate`` with a
count-only estimator).
"""

from __future__ import annotations

from pathlib import Path

from sgrgym.core.errors import PinError
from sgrgym.core.home import home_path
from sgrgym.seeker.corpus import Corpus, corpus_sha256, load_corpus
from sgrgym.seeker.store import MANIFEST, load_store_manifest

# Built corpora with a committed manifest of content hashes: corpus file -> manifest.
PINNED_CORPORA = {
    home_path(f"tasks/seeker/{name}/corpus.jsonl"): home_path(f"tasks/seeker/{name}/manifest.json")
    for name in ("djangodocs", "pydocs")
}


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve()
    except OSError:
        return False


def load_pinned_corpus(corpus_file: Path, store_dir: Path | None, need_store: bool) -> Corpus:
    """Load ``corpus_file`` and check it against the store's pin (``need_store``: the store
    must exist; otherwise its pin is checked when it does) and, for a pinned corpus (the demo),
    its manifest's."""
    corpus = load_corpus(corpus_file)
    digest = corpus_sha256(corpus)
    for built, pin_file in PINNED_CORPORA.items():
        if not (_same_file(corpus_file, built) and pin_file.is_file()):
            continue
        from sgrgym.seeker.pydocs import load_manifest

        pinned = load_manifest(pin_file).corpus_sha256
        if digest != pinned:
            raise PinError(
                f"{corpus_file}: the corpus does not match its pin in {pin_file} "
                f"(sha256 {digest}, pinned {pinned}); rebuild it with "
                "`sgrgym seeker build-corpus`"
            )
    if store_dir is not None and (need_store or (store_dir / MANIFEST).exists()):
        manifest = load_store_manifest(store_dir)
        if manifest.corpus_sha256 != digest:
            raise PinError(
                f"{corpus_file}: does not match the corpus the passage store {store_dir} was "
                f"built from (sha256 {digest}, pinned {manifest.corpus_sha256} in "
                f"{store_dir / MANIFEST}); rebuild the corpus (sgrgym seeker build-corpus) or "
                "the store (sgrgym seeker build-store)"
            )
    return corpus
