#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for tests and benchmarks: Debian's PostgreSQL (initdb +
# pg_ctl) in a temporary directory, listening on a Unix socket only, no TCP port.
#
#   pg_cluster.sh start STATE_DIR [tuned]   start one (or reuse, or restart, the one STATE_DIR
#                                           names) and print its libpq connection string
#   pg_cluster.sh halt STATE_DIR            stop it, keeping its data (`start` brings it back)
#   pg_cluster.sh stop STATE_DIR            stop it and remove its files
#
# STATE_DIR keeps one file, `conninfo`, naming the cluster; the cluster itself lives in a short
# /tmp path (a Unix socket path is at most 107 bytes). `start` is safe to call from several
# processes at once (flock) and answers at once when the cluster is already running.
# `tuned` turns fsync off for tests (nothing here survives a machine crash anyway); without
# it the cluster keeps PostgreSQL's durable defaults, as benchmarks need.
# PostgreSQL refuses to run as root: as root the cluster runs as the `postgres` user that
# Debian's package creates.
set -euo pipefail

cmd=${1:?usage: pg_cluster.sh start|halt|stop STATE_DIR [tuned]}
state=${2:?usage: pg_cluster.sh start|halt|stop STATE_DIR [tuned]}
mode=${3:-durable}
bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[[ -x $bindir/initdb ]] || { echo "pg_cluster: no PostgreSQL server found (install Debian's postgresql)" >&2; exit 1; }
mkdir -p "$state"

as_owner() {
  if [[ $(id -u) -eq 0 ]]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

running() {  # $1: cluster dir
  [[ -n $1 && -f $1/data/postmaster.pid ]] && as_owner "$bindir/pg_ctl" -D "$1/data" status >/dev/null 2>&1
}

conninfo_of() {  # $1: cluster dir
  local user
  user=$(if [[ $(id -u) -eq 0 ]]; then echo postgres; else id -un; fi)
  echo "host=$1 port=5432 user=$user dbname=postgres"
}

case $cmd in
  start)
    exec 9>"$state/lock"
    flock 9
    fresh=1
    if [[ -f $state/conninfo ]]; then
      dir=$(sed -n 's/^host=\([^ ]*\) .*/\1/p' "$state/conninfo")
      if running "$dir"; then cat "$state/conninfo"; exit 0; fi
      if [[ -f $dir/data/PG_VERSION && -f $dir/options ]]; then
        fresh=0  # halted: start it again on its data
      else
        rm -rf "$dir" "$state/conninfo"
      fi
    fi
    if [[ $fresh == 1 ]]; then
      dir=$(mktemp -d /tmp/reef-pg-XXXXXX)
      chmod 755 "$dir"
      if [[ $(id -u) -eq 0 ]]; then chown postgres:postgres "$dir"; fi
      as_owner "$bindir/initdb" -D "$dir/data" -A trust -E UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 ||
        { cat "$dir/initdb.log" >&2; exit 1; }
      opts="-c listen_addresses='' -c unix_socket_directories='$dir' -c max_connections=300"
      if [[ $mode == tuned ]]; then
        opts+=" -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
      fi
      echo "$opts" >"$dir/options"
    fi
    opts=$(cat "$dir/options")
    as_owner "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -o "$opts" -w -t 60 start >/dev/null 9>&- ||
      { cat "$dir/server.log" >&2; exit 1; }
    conninfo_of "$dir" >"$state/conninfo"
    cat "$state/conninfo"
    ;;
  halt)
    exec 9>"$state/lock"
    flock 9
    [[ -f $state/conninfo ]] || exit 0
    dir=$(sed -n 's/^host=\([^ ]*\) .*/\1/p' "$state/conninfo")
    if running "$dir"; then as_owner "$bindir/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null; fi
    ;;
  stop)
    exec 9>"$state/lock"
    flock 9
    [[ -f $state/conninfo ]] || exit 0
    dir=$(sed -n 's/^host=\([^ ]*\) .*/\1/p' "$state/conninfo")
    if running "$dir"; then as_owner "$bindir/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null || true; fi
    rm -rf "$dir" "$state/conninfo"
    ;;
  *)
    echo "pg_cluster: unknown command $cmd (start, halt, stop)" >&2
    exit 2
    ;;
esac
