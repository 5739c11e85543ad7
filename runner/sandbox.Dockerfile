# The image every Leaf job runs in (see src/sandbox/docker/ for how it is started: no network, read-only root,
# tmpfs /tmp and HOME, the repository bind-mounted at /workspace, all capabilities dropped).
#
# Production:  docker build -t frognano-sandbox:latest -f runner/sandbox.Dockerfile runner/
# (runner/ is the context: the verification scanners' bundles in runner/scanners are copied in. Installed there by
# scripts/install-scanners.sh, or, when they are not, by npm ci inside this build, which then needs the registry.)
# Offline (no registry, e.g. CI): scripts/build-sandbox-image.sh builds a Debian rootfs with debootstrap, imports it
# and builds this file on top of it with BASE=<that image> and PACKAGES="" (they are already in the rootfs).
ARG BASE=debian:bookworm-slim
FROM ${BASE}

# What a model's commands usually need to build and test a repository. No network at run time, so whatever a
# project needs beyond this must be in a derived image (set FROGNANO_SANDBOX_IMAGE to it). Any image must keep
# bash, coreutils and util-linux (setsid): every command runs through them. `frognano doctor` checks that.
ARG PACKAGES="bash ca-certificates git make patch procps python3 python3-bandit python3-pytest python3-venv build-essential nodejs npm"
RUN if [ -n "$PACKAGES" ]; then \
      apt-get update && apt-get install -y --no-install-recommends $PACKAGES && rm -rf /var/lib/apt/lists/*; \
    fi

# The verification scanners (issue #26): the pinned ESLint security bundle that src/verify/scans/eslint.mjs runs with
# the image's node (ESLint 9 needs >= 18.18; bookworm's nodejs is 18.20). COPY makes it root-owned, so read-only to
# the sandbox user (no chmod -R here: it would store the 44 MB a second time); the bwrap sandbox binds the host's
# runner/scanners at the same path.
COPY scanners/ /opt/frognano/scanners/
RUN cd /opt/frognano/scanners/eslint \
 && if [ ! -f node_modules/eslint/package.json ]; then \
      npm ci --omit=dev --ignore-scripts --no-audit --no-fund && rm -rf /root/.npm; \
    fi \
 && test -f node_modules/eslint/package.json

# A fixed non-root user. The sandbox runs commands as this uid (or as the runner's own uid when the runner is not
# root); HOME is a tmpfs at run time, so nothing a job leaves there survives it.
ARG AGENT_UID=1000
RUN groupadd -g ${AGENT_UID} agent \
 && useradd -u ${AGENT_UID} -g ${AGENT_UID} -d /home/agent -m -s /bin/bash agent \
 && mkdir -p /workspace && chown agent:agent /workspace \
 # Repositories are owned by whichever uid the runner maps in; git must not refuse them as "dubious ownership".
 && git config --system safe.directory '*' \
 && git config --system user.name 'FrogNano' \
 && git config --system user.email 'frognano@users.noreply.github.com' \
 && git config --system init.defaultBranch main

ENV LANG=C.UTF-8 LC_ALL=C.UTF-8 PYTHONDONTWRITEBYTECODE=1 PIP_NO_INPUT=1 GIT_TERMINAL_PROMPT=0
LABEL org.opencontainers.image.title="frognano-sandbox" \
      org.opencontainers.image.description="Isolated workspace for FrogNano Leaf jobs"
USER agent
WORKDIR /workspace
# The sandbox replaces this with its own PID 1 (a reaping loop bounded by the job time limit); every command
# is a `docker exec` into the container.
CMD ["sleep", "infinity"]
