# syntax=docker/dockerfile:1
# api-gateway, built from the repository root: docker build -f deploy/docker/api-gateway.Dockerfile .
# Only this service's package and its declared dependencies are installed (uv sync --package).
FROM python:3.11-slim

ENV PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    UV_COMPILE_BYTECODE=1 \
    UV_LINK_MODE=copy \
    UV_PROJECT_ENVIRONMENT=/app/.venv \
    CLIPYARD_HOME=/var/lib/clipyard

RUN pip install --no-cache-dir uv==0.13.9

WORKDIR /app
# The whole workspace is needed to resolve it (members are found by their pyproject.toml).
COPY pyproject.toml uv.lock ./
COPY contracts ./contracts
COPY libs ./libs
COPY services ./services
RUN uv sync --package clipyard-api-gateway --frozen --no-dev --no-editable \
    && useradd --system --uid 10001 --home-dir /var/lib/clipyard --create-home clipyard

USER clipyard
ENV CLIPYARD_HTTP_HOST=0.0.0.0 CLIPYARD_HTTP_PORT=8080
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s \
    CMD ["/app/.venv/bin/python", "-c", "import urllib.request; urllib.request.urlopen(\"http://127.0.0.1:8080/api/health\", timeout=2)"]
CMD ["/app/.venv/bin/python", "-m", "api_gateway"]
