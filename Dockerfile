# syntax=docker/dockerfile:1
# Parley: one node. Build: docker build -t parley .   Run: see docs/operations.md and compose.yaml.

# Build stage: the compiler toolchain better-sqlite3 builds with, the dependencies, the build.
FROM node:20-bookworm-slim AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json ./
COPY cli ./cli
# The prepare script builds; sources are not here yet, so build explicitly below.
RUN npm ci --no-audit --no-fund --ignore-scripts && npm rebuild better-sqlite3
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npx tsc -p tsconfig.build.json && npm prune --omit=dev --no-audit --no-fund

# Runtime stage: Node 20, the build and the production dependencies, a user without privileges.
FROM node:20-bookworm-slim
ENV NODE_ENV=production \
    PARLEY_HOST=0.0.0.0 \
    PORT=3000 \
    PARLEY_DATA_DIR=/data
WORKDIR /app
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
# The dashboard's page templates and stylesheet: read from the package's folder at start-up (tsc copies no such files into dist/).
COPY --from=build /app/src/dashboard/templates ./src/dashboard/templates
COPY --from=build /app/src/dashboard/assets ./src/dashboard/assets
COPY --from=build /app/cli ./cli
RUN mkdir -p /data && chown node:node /data
USER node
VOLUME ["/data"]
EXPOSE 3000
# Liveness, with Node itself (the slim image has no curl).
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||3000)+'/api/health').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# As `npm start` runs it: the same V8 flag as cli/parley.js.
CMD ["node", "--max-semi-space-size=8", "dist/cli/main.js", "serve"]
