#
# frognano-bot images. One file, several targets:
#
#   docker build --target app         -t frognano-app .          # the GitHub App (webhooks -> queue)
#   docker build --target runner      -t frognano-runner .       # a worker; onnx on CPU, or any OpenAI-compatible endpoint
#   docker build --target runner-cuda -t frognano-runner:cuda .  # a worker running FrogNano-4B on an NVIDIA GPU (onnx CUDA EP)
#
# Stages: deps (npm ci, all dependencies) -> build (npm run build = tsc) -> prod-deps (npm ci --omit=dev)
# -> the runtime targets, which hold only dist/, production node_modules, package.json and app.yml.
# The sandbox image that jobs run in is separate: runner/sandbox.Dockerfile.
# Needs BuildKit (the default builder since Docker 23; DOCKER_BUILDKIT=1 before) for the npm cache mounts.

ARG NODE_VERSION=20.20
# CUDA 12 + cuDNN 9: what onnxruntime-node 1.30's CUDA execution provider is built against.
ARG CUDA_IMAGE=nvidia/cuda:12.8.1-cudnn-runtime-ubuntu24.04

FROM node:${NODE_VERSION}-bookworm-slim AS node-base
WORKDIR /app
# onnxruntime-node's install script downloads the CUDA provider from NuGet; the CPU build ships in the package.
# Only the runner-cuda target fetches the CUDA files, explicitly, below.
ENV ONNXRUNTIME_NODE_INSTALL=skip \
    NPM_CONFIG_UPDATE_NOTIFIER=false \
    NPM_CONFIG_FUND=false \
    NPM_CONFIG_AUDIT=false

# ---- deps: every dependency, for the compiler ------------------------------------------------------------
FROM node-base AS deps
COPY package.json package-lock.json ./
# --ignore-scripts: no dependency install script runs (as with package.json "allowScripts" on npm 11 at
# development time, so the image gets the tree the tests ran against). None is needed: onnxruntime-node's
# only fetches CUDA files, the rest are optional native speed-ups with JavaScript or prebuilt fallbacks.
RUN --mount=type=cache,target=/root/.npm npm ci --ignore-scripts

# ---- build: the same command as `npm run build` on a workstation --------------------------------------------
FROM deps AS build
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY runner ./runner
# tsconfig.build.json compiles src/ and runner/ only (tests, benchmarks and development scripts are type-checked by
# `npm run typecheck`).
RUN npm run build \
 && test -f dist/src/app/main.js && test -f dist/runner/main.js && test -f dist/src/leaf/sandboxTool.py \
 && test -f dist/src/sandbox/docker/init.py && test -f dist/src/sandbox/docker/sweep.sh \
 && test -f dist/src/sandbox/docker/exec-wrapper.sh && test -f dist/src/sandbox/egress/forward.py \
 && test -f dist/src/verify/scans/scanner.py && test -f dist/src/verify/scans/eslint.mjs

# ---- prod-deps: runtime dependencies only -------------------------------------------------------------------
FROM node-base AS prod-deps
COPY package.json package-lock.json ./
RUN --mount=type=cache,target=/root/.npm npm ci --omit=dev --ignore-scripts \
 # onnxruntime-node ships binaries for every OS (~220 MB of them for macOS and Windows): keep this platform's.
 && ort=node_modules/onnxruntime-node/bin/napi-v6 \
 && find "$ort" -mindepth 1 -maxdepth 1 ! -name linux -exec rm -rf {} + \
 && find "$ort/linux" -mindepth 1 -maxdepth 1 ! -name "$(node -p process.arch)" -exec rm -rf {} +

# ---- scanners: the verification scanners' bundles (runner/scanners; today the pinned ESLint security bundle) ------
# A runner whose sandbox is bwrap binds /app/runner/scanners read-only into the sandbox at /opt/frognano/scanners (the
# docker sandbox's image has its own copy, runner/sandbox.Dockerfile). Production dependencies only, no install scripts.
FROM node-base AS scanners
COPY runner/scanners ./runner/scanners
RUN --mount=type=cache,target=/root/.npm cd runner/scanners/eslint && npm ci --omit=dev --ignore-scripts \
 && test -f node_modules/eslint/package.json

# Same, plus onnxruntime's CUDA 12 execution provider (libonnxruntime_providers_cuda.so, ~400 MB) from NuGet.
FROM prod-deps AS prod-deps-cuda
RUN ONNXRUNTIME_NODE_INSTALL=cuda12 node node_modules/onnxruntime-node/script/install \
 && test -f node_modules/onnxruntime-node/bin/napi-v6/linux/x64/libonnxruntime_providers_cuda.so

# ---- app: the GitHub App -----------------------------------------------------------------------------------
FROM node:${NODE_VERSION}-bookworm-slim AS app
WORKDIR /app
ENV NODE_ENV=production \
    # Probot listens on localhost by default; in a container the port must be reachable from outside.
    HOST=0.0.0.0 \
    PORT=3000
COPY --from=prod-deps /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY package.json app.yml ./
# `node` (uid 1000) comes with the base image; the code stays root-owned and read-only to it.
USER node
EXPOSE 3000
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||3000)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
CMD ["node", "dist/src/app/main.js"]

# ---- runner: a worker (CPU onnx, or a remote OpenAI-compatible model) -------------------------------------------
FROM node:${NODE_VERSION}-bookworm-slim AS runner
WORKDIR /app
# git: clone and push happen on the runner (with the short-lived token), never inside the sandbox.
# tini: PID 1 that forwards SIGTERM, so a runner hands its job back to the queue on shutdown.
RUN apt-get update \
 && apt-get install -y --no-install-recommends git ca-certificates tini \
 && rm -rf /var/lib/apt/lists/*
ENV NODE_ENV=production \
    # Work directories are bind-mounted into sandbox containers; with the host's Docker socket the path must be
    # the same inside this container and on the host, hence a fixed directory (mount it at the same path).
    TMPDIR=/var/lib/frognano/work \
    FROGNANO_OPS_PORT=9464
RUN mkdir -p /var/lib/frognano/work && chown node:node /var/lib/frognano/work
COPY --from=prod-deps /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY --from=scanners /app/runner/scanners ./runner/scanners
COPY package.json ./
# The CLI, for `docker exec <runner> node bin/frognano.js doctor` (it runs dist/ when there are no sources).
COPY bin ./bin
USER node
EXPOSE 9464
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.FROGNANO_OPS_PORT||9464)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
ENTRYPOINT ["/usr/bin/tini", "--"]
CMD ["node", "dist/runner/main.js"]

# ---- runner-cuda: the worker on an NVIDIA GPU ----------------------------------------------------------------
# Needs the NVIDIA Container Toolkit on the host (`--gpus all`, or the compose/k8s device requests in deploy/).
FROM node:${NODE_VERSION}-bookworm-slim AS node-binary
FROM ${CUDA_IMAGE} AS runner-cuda
WORKDIR /app
RUN apt-get update \
 && apt-get install -y --no-install-recommends git ca-certificates tini \
 && rm -rf /var/lib/apt/lists/* \
 # uid 1000 like the other targets and the sandbox's `agent` user, so work directories need no chown.
 && (getent passwd 1000 >/dev/null || useradd -u 1000 -m -s /usr/sbin/nologin frognano) \
 && mkdir -p /var/lib/frognano/work && chown 1000:1000 /var/lib/frognano/work
COPY --from=node-binary /usr/local/bin/node /usr/local/bin/node
ENV NODE_ENV=production \
    TMPDIR=/var/lib/frognano/work \
    FROGNANO_OPS_PORT=9464 \
    # nvidia-smi (GPU name for the runner registry) is mounted by the toolkit only with the `utility` capability.
    NVIDIA_VISIBLE_DEVICES=all \
    NVIDIA_DRIVER_CAPABILITIES=compute,utility
COPY --from=prod-deps-cuda /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY --from=scanners /app/runner/scanners ./runner/scanners
COPY package.json ./
COPY bin ./bin
USER 1000:1000
EXPOSE 9464
HEALTHCHECK --interval=30s --timeout=5s --start-period=120s \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.FROGNANO_OPS_PORT||9464)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
ENTRYPOINT ["/usr/bin/tini", "--"]
CMD ["node", "dist/runner/main.js"]
