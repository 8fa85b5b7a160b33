"""The passage store and the corpus are verified before use: damaged LanceDB files, any changed
column, and a changed corpus are exit-2 errors naming the file (no lance traceback)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from sgrgym.cli import main
from sgrgym.core.errors import UserError
from sgrgym.seeker.store import PassageStore

ROOT = Path(__file__).resolve().parent.parent
STORE = ROOT / "embeddings" / "djangodocs__minilm-l6-onnx"
CORPUS = ROOT / "tasks" / "seeker" / "djangodocs" / "corpus.jsonl"


@pytest.fixture
def store_copy(tmp_path: Path) -> Path:
    copy = tmp_path / "store"
    shutil.copytree(STORE, copy)
    return copy


def test_committed_demo_store_matches_its_pin() -> None:
    store = PassageStore.open(STORE)
    assert store.manifest.rows == len(store._ids) == 3494


def test_flipped_lance_footer_is_a_user_error(store_copy: Path) -> None:
    data = next((store_copy / "passages.lance" / "data").glob("*.lance"))
    raw = bytearray(data.read_bytes())
    raw[-20] ^= 0xFF
    data.write_bytes(bytes(raw))
    with pytest.raises(UserError, match=rf"{store_copy}: cannot read the LanceDB table"):
        PassageStore.open(store_copy)


@pytest.mark.parametrize(
    ("column", "value"), [("section", "'Somewhere else'"), ("order", "99"), ("passage_id", "'p0'")]
)
def test_every_column_is_in_the_content_hash(store_copy: Path, column: str, value: str) -> None:
    import lancedb

    table = lancedb.connect(str(store_copy)).open_table("passages")
    table.update(where="doc_id = 'howto/auth-remote-user'", values_sql={column: value})
    with pytest.raises(UserError, match="do not match the manifest"):
        PassageStore.open(store_copy)


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
        "--seeds",
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
