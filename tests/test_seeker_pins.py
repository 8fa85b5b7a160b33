"""The passage store and the corpus are verified before use: damaged LanceDB files, any changed
column, and a changed corpus are exit-2 errors naming the file (no lance traceback)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from sgrgym.cli import main
from sgrgym.core.errors import UserError
from sgrgym.seeker.store import PassageStore

ROOT = Path(__file__).resolve().parent.parent
STORE = ROOT / "embeddings" / "djangodocs__minilm-l6-onnx"
CORPUS = ROOT / "tasks" / "seeker" / "djangodocs" / "corpus.jsonl"
DOC = "howto/auth-remote-user"  # rows 0-12 of the demo store


@pytest.fixture
def store_copy(tmp_path: Path) -> Path:
    """A copy of the demo store with its rows file (derived on the first open of a clone)."""
    PassageStore.open(STORE)
    copy = tmp_path / "store"
    shutil.copytree(STORE, copy)
    return copy


def test_a_store_without_its_rows_file_derives_it_from_the_checked_table(
    store_copy: Path,
) -> None:
    rows = store_copy / "passages.arrow"
    written = rows.read_bytes()
    rows.unlink()
    assert PassageStore.open(store_copy).matrix(DOC)[1].shape == (12, 384)
    assert rows.read_bytes() == written  # the same bytes build-store writes
    rows.unlink()
    import lancedb

    table = lancedb.connect(str(store_copy)).open_table("passages")
    table.update(where=f"doc_id = '{DOC}'", values_sql={"order": "99"})
    with pytest.raises(UserError, match=r"the LanceDB table 'passages' does not match"):
        PassageStore.open(store_copy)
    assert not rows.exists()  # nothing derived from a table that fails its pins


def test_committed_demo_store_matches_its_pin() -> None:
    store = PassageStore.open(STORE)
    assert store.manifest.rows == sum(len(store.matrix(d)[0]) for d in store.documents()) == 3494
    store.verify()  # the LanceDB table and the rows file, every row


def test_the_run_path_reads_one_document_without_lancedb() -> None:
    code = (
        "import sys; from pathlib import Path; from sgrgym.seeker.store import PassageStore\n"
        f"ids, matrix = PassageStore.open(Path({str(STORE)!r})).matrix({DOC!r})\n"
        "assert len(ids) == 12 and matrix.shape == (12, 384), matrix.shape\n"
        "assert 'lancedb' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_flipped_lance_footer_is_a_user_error(store_copy: Path) -> None:
    data = next((store_copy / "passages.lance" / "data").glob("*.lance"))
    raw = bytearray(data.read_bytes())
    raw[-20] ^= 0xFF
    data.write_bytes(bytes(raw))
    store = PassageStore.open(store_copy)  # episodes read the rows file: still usable
    with pytest.raises(UserError, match=rf"{store_copy}: cannot read the LanceDB table"):
        store.verify()


def test_flipped_rows_file_footer_is_a_user_error(store_copy: Path) -> None:
    rows = store_copy / "passages.arrow"
    raw = bytearray(rows.read_bytes())
    raw[-12] ^= 0xFF
    rows.write_bytes(bytes(raw))
    with pytest.raises(UserError, match=rf"{store_copy}: cannot read passages.arrow .*build-store"):
        PassageStore.open(store_copy)


@pytest.mark.parametrize(
    ("column", "value"), [("section", "'Somewhere else'"), ("order", "99"), ("passage_id", "'p0'")]
)
def test_every_column_of_the_table_is_in_the_content_hash(
    store_copy: Path, column: str, value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    import lancedb

    table = lancedb.connect(str(store_copy)).open_table("passages")
    table.update(where=f"doc_id = '{DOC}'", values_sql={column: value})
    with pytest.raises(
        UserError, match=f"do not match the manifest.*differ from documents.json: {DOC}"
    ):
        PassageStore.open(store_copy).verify()
    assert main(["seeker", "check-store", "--store", str(store_copy)]) == 2
    assert "do not match the manifest" in capsys.readouterr().err


def _rewrite_rows(store: Path, change: Callable[[dict[str, list[Any]], int], None]) -> None:
    """Rewrite the rows file with ``change(columns, row)`` applied to the first row of DOC."""
    import pyarrow as pa

    path = store / "passages.arrow"
    with pa.memory_map(str(path)) as source:
        table = pa.ipc.open_file(source).read_all()
    columns = table.to_pydict()
    change(columns, columns["doc_id"].index(DOC))
    changed = pa.table(columns, schema=table.schema)
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(changed)


def _nudge_vector(columns: dict[str, list[Any]], row: int) -> None:
    vector = np.array(columns["vector"][row], dtype=np.float32)
    vector[7] = np.nextafter(vector[7], np.float32(1))  # one ulp
    columns["vector"][row] = vector.tolist()


@pytest.mark.parametrize(
    "change",
    [
        _nudge_vector,
        lambda columns, row: columns["section"].__setitem__(row, "Somewhere else"),
        lambda columns, row: columns["order"].__setitem__(row, 99),
        lambda columns, row: columns["text_sha256"].__setitem__(row, "0" * 64),
    ],
)
def test_a_changed_row_is_refused_when_its_document_is_read(
    store_copy: Path, change: Callable[[dict[str, list[Any]], int], None]
) -> None:
    _rewrite_rows(store_copy, change)
    store = PassageStore.open(store_copy)  # the open reads no document
    other = next(d for d in store.documents() if d != DOC)
    assert store.matrix(other)[1].tobytes() == PassageStore.open(STORE).matrix(other)[1].tobytes()
    with pytest.raises(UserError) as caught:
        store.matrix(DOC)
    message = str(caught.value)
    assert str(store_copy) in message and repr(DOC) in message
    assert "do not match the store's index documents.json" in message
    assert "rebuild it with `sgrgym seeker build-store`" in message
    with pytest.raises(UserError, match=f"passages.arrow.*differ from documents.json: {DOC}"):
        store.verify()


def test_a_changed_index_is_refused(store_copy: Path) -> None:
    index = store_copy / "documents.json"
    text = index.read_text(encoding="utf-8")
    index.write_text(text.replace(f'["{DOC}", 0, 12,', f'["{DOC}", 0, 11,'), encoding="utf-8")
    with pytest.raises(UserError, match=r"documents.json: sha256 \w+ does not match the manifest"):
        PassageStore.open(store_copy)
    index.unlink()
    with pytest.raises(
        UserError, match=r"documents.json: per-document index not found.*build-store"
    ):
        PassageStore.open(store_copy)


def test_an_old_format_store_is_a_user_error(
    store_copy: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = json.loads((store_copy / "manifest.json").read_text(encoding="utf-8"))
    del manifest["index_sha256"]
    (store_copy / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    (store_copy / "documents.json").unlink()
    (store_copy / "passages.arrow").unlink()
    with pytest.raises(
        UserError, match=r"an older format .*rebuild it with `sgrgym seeker build-s"
    ):
        PassageStore.open(store_copy)
    argv = ["seeker", "run", "--store", str(store_copy), "--docs", DOC, "--steps", "1"]
    assert main([*argv, "--out", str(tmp_path / "run"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "older format" in err and "build-store" in err and "Traceback" not in err


def test_seeker_run_on_a_damaged_store_is_exit_2(
    store_copy: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (store_copy / "manifest.json").write_text('{"corpus": "djangodocs"}', encoding="utf-8")
    code = main(
        [
            "seeker",
            "run",
            "--store",
            str(store_copy),
            "--docs",
            "howto/auth-remote-user",
            "--steps",
            "1",
            "--out",
            str(tmp_path / "run"),
            "--quiet",
        ]
    )
    err = capsys.readouterr().err
    assert code == 2 and str(store_copy / "manifest.json") in err and "Traceback" not in err


def _flip_a_doc_id(tmp_path: Path) -> Path:
    lines = CORPUS.read_text(encoding="utf-8").splitlines(keepends=True)
    lines[1] = lines[1].replace('"id":"howto/auth-remote-user"', '"id":"howto/auth-remote-usex"', 1)
    assert lines[1] != CORPUS.read_text(encoding="utf-8").splitlines(keepends=True)[1]
    changed = tmp_path / "corpus.jsonl"
    changed.write_text("".join(lines), encoding="utf-8")
    return changed


READERS = [
    [
        "seeker",
        "calibrate",
        "--estimator",
        "constant",
        "--no-stopping",
        "--splits",
        "1",
        "--estimator-seeds",
        "1",
        "--quiet",
    ],
    ["seeker", "calibrate", "--estimator", "visible-count", "--no-stopping", "--quiet"],
    [
        "seeker",
        "run",
        "--docs",
        "howto/auth-remote-usex",
        "--steps",
        "1",
        "--quiet",
        "--out",
        "{T}",
    ],
]


@pytest.mark.parametrize("argv", READERS)
def test_changed_corpus_is_refused_by_every_command(
    argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    changed = _flip_a_doc_id(tmp_path)
    args = [a.replace("{T}", str(tmp_path / "run")) for a in argv]
    assert main([*args, "--corpus-file", str(changed)]) == 2
    err = capsys.readouterr().err
    assert str(changed) in err and "pinned" in err


def test_changed_demo_corpus_is_refused_by_build_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    demo = tmp_path / "tasks" / "seeker" / "djangodocs"
    demo.mkdir(parents=True)
    shutil.copy(CORPUS.parent / "manifest.json", demo / "manifest.json")
    shutil.copy(_flip_a_doc_id(tmp_path), demo / "corpus.jsonl")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SGRGYM_HOME", str(tmp_path))  # a data home holding the changed corpus
    assert main(["seeker", "build-store", "--out", str(tmp_path / "store"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "tasks/seeker/djangodocs/corpus.jsonl" in err and "does not match its pin" in err


def test_check_store_passes_on_the_demo_and_names_a_damaged_store(
    store_copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if not CORPUS.is_file():
        pytest.skip("the demo corpus is not built (sgrgym seeker build-corpus)")
    assert main(["seeker", "check-store"]) == 0
    assert "3494 passages of djangodocs match the corpus" in capsys.readouterr().out
    (store_copy / "theta-selection.json").write_text("{}", encoding="utf-8")
    assert main(["seeker", "check-store", "--store", str(store_copy)]) == 2
    assert str(store_copy) in capsys.readouterr().err
