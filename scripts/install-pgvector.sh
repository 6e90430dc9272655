#!/usr/bin/env bash
# Installs pgvector into the local Postgres when it lacks it (issue #32): built from the release
# archive in ../shared/vendor/ with Debian's postgresql-server-dev-N, which this installs when
# `pg_config --pgxs` is missing. Idempotent: when Postgres already offers `vector`, it only says so.
# Needs root for apt-get and `make install`. Users get pgvector from their Postgres distribution
# instead (postgresql-15-pgvector, the pgvector/pgvector images, managed services).
set -euo pipefail
cd "$(dirname "$0")/.."

PGVECTOR_VERSION=0.8.6
ARCHIVE="../shared/vendor/pgvector-${PGVECTOR_VERSION}.tar.gz"
PGHOST="${PGHOST:-127.0.0.1}"
PGPORT="${PGPORT:-5432}"
PGUSER="${PGUSER:-postgres}"

available() {
  [ "$(psql -h "$PGHOST" -p "$PGPORT" -U "$PGUSER" -d postgres -Atc "select 1 from pg_available_extensions where name = 'vector'")" = "1" ]
}

if available; then
  echo "pgvector: already available"
  exit 0
fi

major="$(psql -h "$PGHOST" -p "$PGPORT" -U "$PGUSER" -d postgres -Atc 'show server_version_num' | cut -c1-2)"
if ! pg_config --pgxs >/dev/null 2>&1 || [ ! -f "$(pg_config --pgxs 2>/dev/null)" ]; then
  echo "pgvector: installing postgresql-server-dev-${major}"
  apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "postgresql-server-dev-${major}" make gcc >/dev/null
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
tar xzf "$ARCHIVE" -C "$work"
# the server's own pg_config, so that the extension lands where that server looks for it
PG_CONFIG="/usr/lib/postgresql/${major}/bin/pg_config"
[ -x "$PG_CONFIG" ] || PG_CONFIG="$(command -v pg_config)"
echo "pgvector: building ${PGVECTOR_VERSION} for Postgres ${major}"
make -s -C "$work/pgvector-${PGVECTOR_VERSION}" PG_CONFIG="$PG_CONFIG" OPTFLAGS="" -j"$(nproc)" >/dev/null
make -s -C "$work/pgvector-${PGVECTOR_VERSION}" PG_CONFIG="$PG_CONFIG" install >/dev/null

if available; then
  echo "pgvector: installed"
else
  echo "pgvector: built and installed, but Postgres does not list it (another server on ${PGHOST}:${PGPORT}?)" >&2
  exit 1
fi
