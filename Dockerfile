# pr-check GitHub App: `pr-check serve` (webhook service; with a SQLite queue it runs its own worker).
#   docker build -t pr-check .
#   docker run -p 8080:8080 -v pr-check-data:/data --env-file pr-check.env pr-check
# The same image runs scale-out workers: `docker run ... pr-check pr-check worker` (PR_CHECK_QUEUE=redis://...).
FROM python:3.11-slim

# git: the App keeps bare mirrors of the repositories it reviews.
RUN apt-get update \
 && apt-get install -y --no-install-recommends git \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /opt/pr-check
COPY pyproject.toml README.m[d] ./
COPY bot ./bot
COPY checks ./checks
COPY webhooks ./webhooks
COPY smoke ./smoke
COPY fixtures ./fixtures
RUN pip install --no-cache-dir . \
 && rm -rf /opt/pr-check/build

RUN useradd --create-home --uid 10001 --shell /usr/sbin/nologin pr-check \
 && mkdir /data && chown pr-check:pr-check /data
USER pr-check
ENV PR_CHECK_DATA_DIR=/data \
    PORT=8080 \
    PYTHONUNBUFFERED=1
VOLUME ["/data"]
EXPOSE 8080

HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
  CMD python -c "import os, urllib.request; urllib.request.urlopen(f'http://127.0.0.1:{os.environ.get(\"PORT\", \"8080\")}/healthz', timeout=4)" || exit 1

CMD ["pr-check", "serve"]
