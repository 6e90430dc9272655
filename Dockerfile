# videosite-ingest as a container image: the daemon by default, and every other command
# (`docker run IMAGE sources list`, `... simulator --host 0.0.0.0`). tsx is a runtime dependency
# and runs the TypeScript sources as they are, so nothing is compiled; the first stage type-checks
# the sources with the dev dependencies, and a tree that does not type-check never becomes an
# image (the runtime stage copies the sources from it, so BuildKit cannot skip it).

FROM node:20-slim AS check
WORKDIR /app
COPY package.json package-lock.json ./
# `npm ci` runs the postinstall script (scripts/patch-postgres.mjs, the postgres.js crash guard)
COPY scripts ./scripts
RUN npm ci --no-audit --no-fund
COPY tsconfig.json ./
COPY bin ./bin
COPY src ./src
# tsconfig also names test/ and bench/; neither is in the image, and tsc checks what is there
RUN npx tsc --noEmit -p tsconfig.json

FROM node:20-slim
ENV NODE_ENV=production
WORKDIR /app
COPY package.json package-lock.json ./
# the postinstall patch matters most here: the daemon runs on this stage's node_modules
COPY scripts ./scripts
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY tsconfig.json ./
COPY migrations ./migrations
COPY --from=check /app/bin ./bin
COPY --from=check /app/src ./src
# the image's files stay root's; the process runs as the unprivileged user of the base image
USER node
# the admin server (`daemon --admin-port 9464`): /healthz, /readyz, /metrics, / and /admin/queues
EXPOSE 9464
# the heap limit keeps RSS near the live heap on big hosts (see bin/videosite-ingest.js)
ENV NODE_OPTIONS="--max-old-space-size=1024 --max-semi-space-size=2"
ENTRYPOINT ["node", "bin/videosite-ingest.js"]
# listening beyond loopback needs ADMIN_TOKEN: without one the daemon refuses to start (exit 2)
CMD ["daemon", "--admin-port", "9464", "--admin-host", "0.0.0.0"]
