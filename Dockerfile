# Multi-stage image on Node 24: dependencies are installed in a build stage, the runtime stage
# carries only production dependencies and the sources (Node 24 runs the TypeScript directly).
FROM node:24-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm install --omit=dev --no-audit --no-fund

FROM node:24-bookworm-slim AS runtime
ENV NODE_ENV=production
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY package.json ./
COPY bin ./bin
COPY scripts ./scripts
COPY src ./src
COPY sql ./sql
COPY workers ./workers
USER node
EXPOSE 8080 8085
ENTRYPOINT ["node", "bin/platform.mjs"]
CMD ["start", "--role", "all"]
