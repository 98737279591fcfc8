# syntax=docker/dockerfile:1
# workspace-realizer, built from the repository root: docker build -f deploy/docker/workspace-realizer.Dockerfile .
# Only this service's package and its declared dependencies are installed (uv sync --package).
FROM python:3.11-slim

ENV PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    UV_COMPILE_BYTECODE=1 \
    UV_LINK_MODE=copy \
    UV_PROJECT_ENVIRONMENT=/app/.venv \
    CLIPYARD_HOME=/var/lib/clipyard

RUN apt-get update \
    && apt-get install -y --no-install-recommends git ca-certificates \
    && rm -rf /var/lib/apt/lists/*

RUN pip install --no-cache-dir uv==0.13.9

WORKDIR /app
# The whole workspace is needed to resolve it (members are found by their pyproject.toml).
COPY pyproject.toml uv.lock ./
COPY contracts ./contracts
COPY libs ./libs
COPY services ./services
RUN uv sync --package clipyard-workspace-realizer --frozen --no-dev --no-editable \
    && useradd --system --uid 10001 --home-dir /var/lib/clipyard --create-home clipyard

USER clipyard

CMD ["/app/.venv/bin/python", "-m", "workspace_realizer"]
