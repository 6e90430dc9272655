# videosite-ingest as a container image: the daemon by default, and every other command
# (`docker run IMAGE sources list`, `... simulator --host 0.0.0.0`). The first stage type-checks
# the sources with the dev dependencies and compiles them to dist/ (a tree that does not
# type-check never becomes an image: the runtime stage copies dist/ from it, so BuildKit cannot
# skip it); the runtime stage runs that JavaScript on the production dependencies, with no
# sources and no compiler.

FROM node:20-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# no scripts: `prepare` would build dist/ from src/, which comes after the install (so that a
# change to the sources does not repeat it), and this stage's node_modules is not shipped
RUN npm ci --no-audit --no-fund --ignore-scripts
COPY scripts ./scripts
COPY tsconfig.json tsconfig.build.json ./
COPY bin ./bin
COPY src ./src
# tsconfig also names test/ and bench/; neither is in the image, and tsc checks what is there
RUN npx tsc --noEmit -p tsconfig.json && npm run build

FROM node:20-slim
ENV NODE_ENV=production
WORKDIR /app
COPY package.json package-lock.json ./
COPY scripts/patch-postgres.mjs ./scripts/
# --ignore-scripts: `prepare` would build dist/ without the compiler (a dev dependency), and
# dist/ comes from the first stage; the postinstall patch (scripts/patch-postgres.mjs, the
# postgres.js crash guard) matters most here, the daemon runs on this stage's node_modules
RUN npm ci --omit=dev --no-audit --no-fund --ignore-scripts && node scripts/patch-postgres.mjs && npm cache clean --force
COPY migrations ./migrations
COPY --from=build /app/bin ./bin
COPY --from=build /app/dist ./dist
# the image's files stay root's; the process runs as the unprivileged user of the base image
USER node
# the admin server (`daemon --admin-port 9464`): /healthz, /readyz, /metrics, / and /admin/queues;
# reachable from outside the container only when told: `... daemon --admin-port 9464 --admin-host
# 0.0.0.0`, which needs ADMIN_TOKEN
EXPOSE 9464
# the heap limit keeps RSS near the live heap on big hosts (see bin/videosite-ingest.js)
ENV NODE_OPTIONS="--max-old-space-size=1024 --max-semi-space-size=2"
ENTRYPOINT ["node", "bin/videosite-ingest.js"]
# the admin server on the container's loopback (its own health checks reach it); every interface
# only when the command says so, with ADMIN_TOKEN (without one the daemon refuses to start, exit 2)
CMD ["daemon", "--admin-port", "9464"]
