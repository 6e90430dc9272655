#!/bin/sh
# One-shot companion of docker-compose.yml (service `demo-sources`): registers a channel and a
# playlist from the simulator's catalog, each synced every 5 minutes by the daemon, and starts
# their first sync at once. The daemon does the rest. Running it again changes nothing: a source
# already registered is kept as it is.
set -eu
cli() { node bin/videosite-ingest.js "$@"; }

cli migrate

# the simulator's catalog is seeded: the same channels and playlists on every run
catalog=$(node -e '
  fetch(process.argv[1])
    .then((r) => r.json())
    .then((c) => console.log(c.channels[0].handle, c.channels[1].playlistIds[0]))
    .catch((e) => { console.error(`cannot read the simulator catalog: ${e.message}`); process.exit(1); });
' "${SIMULATOR_URL:-http://simulator:8787}/__admin/catalog")
set -- $catalog
channel=$1
playlist=$2

add() {
  if out=$(cli sources add "$@" 2>&1); then
    echo "$out"
  else
    case "$out" in
      *"already registered"*) echo "kept: $out" ;;
      *) echo "$out" >&2; exit 1 ;;
    esac
  fi
}
add channel "$channel" --limit 100 --lang en --cron '*/5 * * * *'
add playlist "$playlist" --limit 50 --lang en --text --cron '*/5 * * * *'

# submit now instead of waiting for the first cron tick; the daemon polls and stores
cli backfill --all --no-wait
cli status
