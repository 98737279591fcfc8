# Clipyard developer tasks. On a fresh machine run them through `./dev <recipe>`, which installs
# what is missing (Debian packages, .venv, uv, just) first. Every recipe syncs the environment
# from uv.lock before it runs, so each works whether or not .venv exists yet.

set shell := ["bash", "-euo", "pipefail", "-c"]
set positional-arguments := true

root := justfile_directory()
venv := root / ".venv"
bin := venv / "bin"
uv_version := "0.13.9"
sync_lock := "/tmp/clipyard-uv.lock"
export UV_PROJECT_ENVIRONMENT := venv

# List the recipes
default:
    @{{ bin }}/just --justfile {{ justfile() }} --list --unsorted

# Create .venv and its pinned uv if missing, then sync every workspace member from uv.lock
install:
    #!/usr/bin/env bash
    set -euo pipefail
    cd "{{root}}"
    if [ ! -x "{{bin}}/uv" ]; then
        [ -x "{{bin}}/python" ] || python3 -m venv "{{venv}}"
        "{{bin}}/pip" install --quiet --disable-pip-version-check "uv=={{uv_version}}"
    fi
    flock "{{sync_lock}}" "{{bin}}/uv" sync --all-packages --frozen --quiet

# Start the local stack in the foreground (honours CLIPYARD_HOME, CLIPYARD_HTTP_PORT, CLIPYARD_ADMIN_KEY); Ctrl-C stops it. `--skip SERVICE` leaves one out
up *args: install
    exec "{{bin}}/clipyard" up "$@"

# A replicated control plane on this machine (3 NATS nodes, PostgreSQL, two replicas of each replicable service; `--home`, `--http-port`, `--nats-port`); Ctrl-C stops it
cluster *args: install
    exec "{{bin}}/clipyard" cluster up "$@"

# Stop the stack a `just up` runs with this CLIPYARD_HOME (from another terminal)
down: install
    "{{bin}}/clipyard" down

# Ping every service and show the event stream's state
status: install
    "{{bin}}/clipyard" status

# Follow the local stack's logs ($CLIPYARD_HOME/logs)
logs:
    tail -n 50 -F "${CLIPYARD_HOME:-$HOME/.clipyard}"/logs/*.log

# Run one service in the foreground with the stack's settings (next to `just up --skip <service>`)
run service: install
    exec "{{bin}}/clipyard" run "$1"

# Every test tier but benchmarks: what CI runs. Unit and integration tests (each worker its own servers) run on CLIPYARD_TEST_WORKERS (3) workers (they mostly wait on servers and processes: three keep two cores busy); the whole-stack tiers (e2e, cluster, chaos, browser) then one at a time. Extra arguments go to both pytest runs
test *args: install
    #!/usr/bin/env bash
    set -uo pipefail
    cd "{{root}}"
    whole="e2e or cluster or chaos or browser"
    "{{bin}}/pytest" -n "${CLIPYARD_TEST_WORKERS:-3}" -m "not bench and not ($whole)" "$@"; first=$?
    "{{bin}}/pytest" -m "not bench and ($whole)" "$@"; second=$?
    # 5: that run had no test to run (arguments naming tests of the other run only)
    if [ "$first" -eq 5 ] && [ "$second" -eq 5 ]; then exit 5; fi
    [ "$first" -eq 5 ] && first=0
    [ "$second" -eq 5 ] && second=0
    exit $(( first > second ? first : second ))

# Unit tests only (no servers)
test-unit *args: install
    cd "{{root}}" && "{{bin}}/pytest" -m "not integration and not e2e and not cluster and not bench" "$@"

# Integration tests: real nats-server and PostgreSQL
test-integration *args: install
    cd "{{root}}" && "{{bin}}/pytest" -m "integration and not bench" "$@"

# End-to-end tests: the whole stack as real processes, through HTTP
test-e2e *args: install
    cd "{{root}}" && "{{bin}}/pytest" -m "e2e and not bench" tests/e2e "$@"

# The kill suite: `clipyard up` under load while each of its processes is SIGKILLed (CLIPYARD_CHAOS_SEED replays a run)
test-chaos *args: install
    cd "{{root}}" && "{{bin}}/pytest" -m "chaos and not bench" tests/chaos "$@"

# The cluster tier: `clipyard cluster up`'s replicated control plane, taken apart on purpose (tests/cluster)
test-cluster *args: install
    cd "{{root}}" && "{{bin}}/pytest" -m "cluster and not bench" tests/cluster "$@"

# Browser tests: the operator page in headless Debian chromium against the whole stack (screenshots in artifacts/screenshots)
test-browser *args: install
    cd "{{root}}" && "{{bin}}/pytest" -m "browser and not bench" tests/browser "$@"

# Regenerate the operator page's screenshots of README.md (docs/images/workspace-page.png, run-page.png) from the browser tests that open those pages
screenshots: install
    cd "{{root}}" && CLIPYARD_DOC_SCREENSHOTS="{{root}}/docs/images" "{{bin}}/pytest" -q -p no:randomly \
        tests/browser/test_workspace_diff.py::test_two_commits_and_an_untracked_file_show_in_the_workspace_diff \
        tests/browser/test_runs_and_session_end.py::test_a_run_appears_live_its_page_follows_its_log_and_cancel_ends_it

# Benchmarks (tests/bench), never part of `just test`: each row's ratio to its physical limit and its goal, printed as one table and written to tests/bench/results/latest.json
bench *args: install
    cd "{{root}}" && "{{bin}}/pytest" -m "bench and not scale" tests/bench -p no:cacheprovider "$@"

# Benchmarks at scale (1,000 workspaces, 200 services; CLIPYARD_BENCH_WORKSPACES sets the 1,000): the same table, written to tests/bench/results/scale.json
bench-scale *args: install
    cd "{{root}}" && CLIPYARD_BENCH_RESULTS=scale.json "{{bin}}/pytest" -m "bench and scale" tests/bench -p no:cacheprovider "$@"

# Lint and format check (ruff)
lint: install
    cd "{{root}}" && "{{bin}}/ruff" check . && "{{bin}}/ruff" format --check .

# Format the code and apply safe lint fixes
fmt: install
    cd "{{root}}" && "{{bin}}/ruff" format . && "{{bin}}/ruff" check --fix .

# Type-check every package (mypy strict)
typecheck: install
    #!/usr/bin/env bash
    set -euo pipefail
    cd "{{root}}"
    src_dirs=(contracts/src libs/*/src services/*/src)
    packages=()
    for dir in "${src_dirs[@]}"; do
        for pkg in "$dir"/*/__init__.py; do packages+=(-p "$(basename "$(dirname "$pkg")")"); done
    done
    MYPYPATH="$(IFS=:; echo "${src_dirs[*]}")" "{{bin}}/mypy" "${packages[@]}"

# Everything: lint, typecheck, then each workspace member synced alone into a throwaway venv and tested there
check: lint typecheck
    #!/usr/bin/env bash
    set -euo pipefail
    cd "{{root}}"
    scratch="$(mktemp -d "${TMPDIR:-/tmp}/clipyard-check.XXXXXX")"
    trap 'rm -rf "$scratch"' EXIT
    failed=()
    for member in contracts libs/* services/*; do
        [ -f "$member/pyproject.toml" ] || continue
        name="$("{{bin}}/python" -c 'import sys, tomllib; print(tomllib.load(open(sys.argv[1], "rb"))["project"]["name"])' "$member/pyproject.toml")"
        env_dir="$scratch/$name"
        echo "== $name: sync alone"
        # Only the member, its declared dependencies and the test tools (the root dev group).
        UV_PROJECT_ENVIRONMENT="$env_dir" "{{bin}}/uv" sync --package "$name" --group dev --frozen --quiet
        if [ ! -d "$member/tests" ]; then echo "== $name: no tests"; continue; fi
        echo "== $name: test alone"
        rc=0
        "$env_dir/bin/python" -m pytest -q -m "not bench" "$member/tests" || rc=$?
        if [ "$rc" -ne 0 ] && [ "$rc" -ne 5 ]; then failed+=("$name"); fi
    done
    if [ "${#failed[@]}" -gt 0 ]; then echo "failed alone: ${failed[*]}"; exit 1; fi
    echo "every member passes alone"

# Write fresh secrets for docker compose into .env, mode 0600; an existing .env is kept, and only
# the secrets it lacks (one added by a newer docker-compose.yml) are appended to it
compose-env: install
    #!/usr/bin/env bash
    set -euo pipefail
    cd "{{root}}"
    if [ ! -e .env ]; then
        (umask 077 && "{{bin}}/clipyard" compose-env > .env)
        echo "wrote .env"
        exit 0
    fi
    added=()
    while IFS= read -r line; do
        name="${line%%=*}"
        if ! grep -q "^${name}=" .env; then
            printf '%s\n' "$line" >> .env
            added+=("$name")
        fi
    done < <("{{bin}}/clipyard" compose-env | grep -v '^#')
    if [ "${#added[@]}" -gt 0 ]; then echo ".env exists; added ${added[*]}"; else echo ".env exists; keeping it"; fi

# Build and run the containers of docker-compose.yml (needs a Docker engine)
compose-up: compose-env
    cd "{{root}}" && docker compose up --build
