# One image for the eight services; the command picks one: node dist/apps/<service>/src/main.js
# (helm/rag sets it per Deployment). Build: docker build -t registry.example.com/rag-platform:0.1.0 .
#
# Build stage: full Debian image, because better-sqlite3 and hnswlib-node may compile natively (python3, make, g++).
FROM node:20.19-bookworm AS build
WORKDIR /app
ENV NX_DAEMON=false \
    NX_NO_CLOUD=true
# .npmrc: onnxruntime-node ships its CPU binaries in the npm package; its postinstall would otherwise download extras.
COPY package.json package-lock.json .npmrc .swcrc tsconfig.json tsconfig.base.json nx.json ./
COPY scripts ./scripts
COPY bin ./bin
COPY apps ./apps
COPY libs ./libs
# `npm ci` runs `prepare`, which is `npm run build` (SWC → dist/).
RUN npm ci --no-audit --no-fund \
 && test -f dist/apps/gateway/src/main.js \
 && npm prune --omit=dev --no-audit --no-fund

# Runtime stage: slim image, non-root user 10001 (the chart's securityContext), read-only root filesystem friendly
# (writes go to /data, /tmp and nothing else).
FROM node:20.19-bookworm-slim
ENV NODE_ENV=production \
    RAG_HOST=0.0.0.0 \
    RAG_PORT=8080 \
    RAG_DATA_DIR=/data \
    RAG_MODELS_DIR=/models
WORKDIR /app
RUN groupadd --gid 10001 rag \
 && useradd --uid 10001 --gid rag --no-create-home --shell /usr/sbin/nologin rag \
 && mkdir -p /data /models \
 && chown rag:rag /data /models
COPY --from=build /app/package.json ./package.json
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY --from=build /app/bin ./bin
# The model fetcher, so RAG_EMBEDDER=onnx can fetch a missing model into /models on first start (RAG_MODELS_AUTO_FETCH).
COPY --from=build /app/scripts/models ./scripts/models
USER 10001:10001
EXPOSE 8080 50051
CMD ["node", "dist/apps/gateway/src/main.js"]
