# The image every part of the team's deployment runs from: the Prefect workers (and the flow
# runs they start), the Ray head and worker nodes (KubeRay), the one-off `prefect deploy` Job.
# No key is baked in: provider keys, the Ray token and S3 credentials come from Secrets.
#
#   docker build --build-arg CODE_VERSION=$(git rev-parse --short=12 HEAD) -t evalfleet:0.1.0 .
FROM python:3.11-slim
ARG CODE_VERSION=unknown

# KubeRay's probes call wget.
RUN apt-get update \
    && apt-get install -y --no-install-recommends wget \
    && rm -rf /var/lib/apt/lists/* \
    && pip install --no-cache-dir "uv==0.13.8"

ENV UV_COMPILE_BYTECODE=1 \
    UV_LINK_MODE=copy \
    UV_PYTHON_DOWNLOADS=never \
    PATH=/app/.venv/bin:$PATH \
    EVALFLEET_CODE_DIR=/app \
    EVALFLEET_CODE_VERSION=$CODE_VERSION \
    EVALFLEET_HOME=/home/evalfleet/.evalfleet \
    PREFECT_SERVER_ANALYTICS_ENABLED=false \
    RAY_USAGE_STATS_ENABLED=0 \
    RAY_preload_python_modules=evalfleet.tasks.ray_setup \
    MPLBACKEND=Agg

WORKDIR /app
# The locked dependencies first (a layer that changes only with uv.lock), then the code.
COPY pyproject.toml uv.lock README.md ./
RUN uv sync --frozen --no-dev --no-install-project
COPY . .
RUN uv sync --frozen --no-dev \
    && python -m compileall -q src/evalfleet

RUN useradd --create-home --uid 1000 evalfleet && chown -R evalfleet /app
USER 1000

CMD ["evalfleet", "--help"]
