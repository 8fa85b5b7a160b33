# Shared by setup/demo and setup/test (sourced, not run): a virtualenv with the pinned install,
# then every artifact built or checked against its pin. Each step is skipped when its result
# is already there and matches its pin, so running again is cheap.
#
# Environment: PYTHON (default: the newest of python3.13 ... python3.10 found), VENV (default
# .venv), SGRGYM_CACHE (downloaded registry files; default ~/.cache/sgrgym).

STEP=0
STEPS=${STEPS:-5}
step() {
    STEP=$((STEP + 1))
    printf '\n== [%d/%d] %s (%s)\n' "$STEP" "$STEPS" "$1" "$(date +%H:%M:%S)"
}

pick_python() {
    if [ -n "${PYTHON:-}" ]; then
        command -v "$PYTHON" >/dev/null || { echo "setup: PYTHON=$PYTHON not found" >&2; exit 2; }
        echo "$PYTHON"
        return
    fi
    for candidate in python3.13 python3.12 python3.11 python3.10 python3; do
        if command -v "$candidate" >/dev/null; then
            echo "$candidate"
            return
        fi
    done
    echo "setup: no python3 found; install Python 3.10-3.13 (apt-get install python3 python3-venv)" >&2
    exit 2
}

# make_venv EXTRAS: create $VENV if needed and install the package with the pinned versions;
# skipped when the install stamp matches constraints.txt, pyproject.toml and EXTRAS.
make_venv() {
    local extras=$1 python stamp want
    VENV=${VENV:-.venv}
    python=$(pick_python)
    "$python" - <<'PY' || exit 2
import sys
if not (3, 10) <= sys.version_info[:2] <= (3, 13):
    sys.exit(f"setup: Python {sys.version.split()[0]} found; sgrgym needs 3.10-3.13 (set PYTHON)")
PY
    if [ ! -x "$VENV/bin/python" ]; then
        echo "creating $VENV with $("$python" --version)"
        "$python" -m venv "$VENV" || {
            echo "setup: '$python -m venv' failed; on Debian: apt-get install python3-venv" >&2
            exit 2
        }
    fi
    # shellcheck disable=SC1091
    . "$VENV/bin/activate"
    stamp="$VENV/.sgrgym-install"
    pins="$(python --version) $(cat constraints.txt pyproject.toml | sha256sum | cut -c1-64)"
    want="$pins [$extras]"
    # The dev extra holds every other extra the scripts use.
    if [ -f "$stamp" ] && { [ "$(cat "$stamp")" = "$want" ] || [ "$(cat "$stamp")" = "$pins [dev]" ]; }; then
        echo "$VENV: pinned install already done ($(cat "$stamp" | sed 's/.* //'))"
        return
    fi
    echo "installing .[$extras] with the versions pinned in constraints.txt"
    export PIP_CONSTRAINT="$PWD/constraints.txt"
    # --no-compile: modules get their .pyc when first imported (saves ~150 MB of bytecode for
    # modules never loaded).
    python -m pip install --quiet --disable-pip-version-check --no-compile \
        -c constraints.txt -e ".[$extras]"
    python -m pip check >/dev/null || { python -m pip check; exit 2; }
    echo "$want" >"$stamp"
}

# build_artifacts: the embedding model, the SeekerGym demo corpus, the SGR demo pack and the
# passage store's checks, each against its committed pin (a mismatch stops with exit 2):
# `sgrgym setup`, the same command an installed sgrgym runs.
build_artifacts() {
    export ORT_DISABLE_TELEMETRY=1
    step "artifacts (sgrgym setup): model, demo corpus, demo pack, passage store, each against its pin"
    sgrgym setup
}
