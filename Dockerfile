# syntax=docker/dockerfile:1
# One image for every role of the platform (data, api, worker, migrate), on Node 24 LTS, which runs
# the TypeScript sources directly (no build step). Stage 1 installs the production dependencies
# from the lockfile; the runtime stage carries them and the sources, owned by root and run by the
# unprivileged `node` user, so the process cannot rewrite its own code.
FROM node:24-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json .npmrc ./
# `npm ci` trips over other platforms' optional binaries missing from some registries;
# `npm install` follows the lockfile all the same.
RUN npm install --omit=dev --no-audit --no-fund && npm cache clean --force

FROM node:24-bookworm-slim AS runtime
ENV NODE_ENV=production \
    HOST=0.0.0.0
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY package.json ./
COPY bin ./bin
COPY scripts ./scripts
COPY src ./src
COPY sql ./sql
COPY workers ./workers
USER node
# 8080 API, 8085 data module, 9464 health and metrics of a worker-only container
EXPOSE 8080 8085 9464
# Probes whichever of those ports this container's role listens on (see scripts/healthcheck.mjs).
HEALTHCHECK --interval=15s --timeout=6s --start-period=40s --retries=3 \
  CMD ["node", "scripts/healthcheck.mjs"]
# The platform handles SIGTERM itself: readiness 503, drain, finish in-flight work, exit 0.
STOPSIGNAL SIGTERM
ENTRYPOINT ["node", "bin/platform.mjs"]
CMD ["start", "--role", "all"]
