#!/usr/bin/env bash
# `make run`: starts the live image (`reef serve`) in the foreground on 127.0.0.1:7433 with
# the data directory ./reef-data; the bundled counter example is in its working source at
# actors/counter. Stop it with Ctrl+C. Override with REEF_LISTEN / REEF_DATA_DIR.
set -euo pipefail
build=${1:-build}
reef="$build/reef"

# Clients find a server on another address through REEF_CONNECT.
client="$reef"
if [[ -n ${REEF_LISTEN:-} ]]; then client="REEF_CONNECT=$REEF_LISTEN $reef"; fi

cat >&2 <<MSG
Reef $("$reef" --version | cut -d' ' -f2): starting the live image. In another terminal:

  $client repl                    # interactive; type 'help'
  $client spawn actors/counter 0  # one-shot commands; see '$reef --help'
  curl -s http://${REEF_LISTEN:-127.0.0.1:7433}/health

Ctrl+C stops the server.
MSG
exec "$reef" serve
