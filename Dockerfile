# pr-check GitHub App: `pr-check serve` (webhook service; with a SQLite queue it runs its own worker).
#   docker build -t pr-check .
#   docker run -d -p 8080:8080 -v pr-check-data:/data -v "$PWD/secrets:/secrets:ro" \
#     --env-file secrets/pr-check.env pr-check
# The same image runs scale-out workers: `docker run ... pr-check pr-check worker` (PR_CHECK_QUEUE=redis://...).
# tests/test_docker_image.py replays the COPY and pip steps below into a clean directory and venv
# and starts the CMD to /healthz; keep each pip step a plain `pip install` run in the WORKDIR.
FROM python:3.11-slim

# git: the App keeps bare mirrors of the repositories it reviews. Not pinned: the base image's
# Debian release is the pin, and its security updates should come with each rebuild.
# hadolint ignore=DL3008
RUN apt-get update \
 && apt-get install -y --no-install-recommends git \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /opt/pr-check
COPY pyproject.toml MANIFEST.in README.md LICENSE ./
COPY pr_check ./pr_check
COPY bot ./bot
COPY checks ./checks
COPY webhooks ./webhooks
COPY smoke ./smoke
COPY fixtures ./fixtures
# The wheel's own files (MANIFEST.in) plus the App's extra; the build leftovers go.
RUN pip install --no-cache-dir './[app]' \
 && rm -rf build pr_check.egg-info

# uid and gid 10001, both fixed: docs/deploy.md gives the App's key to group 10001.
RUN groupadd --gid 10001 pr-check \
 && useradd --create-home --uid 10001 --gid 10001 --shell /usr/sbin/nologin pr-check \
 && mkdir /data && chown 10001:10001 /data
USER 10001:10001
# The service runs from its data directory, so nothing imports the copied sources by accident.
WORKDIR /data
ENV PR_CHECK_DATA_DIR=/data \
    PORT=8080 \
    PYTHONUNBUFFERED=1
VOLUME ["/data"]
EXPOSE 8080

HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
  CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/healthz' % os.environ.get('PORT', '8080'), timeout=4)"]

CMD ["pr-check", "serve"]
