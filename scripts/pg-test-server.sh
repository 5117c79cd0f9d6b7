#!/usr/bin/env bash
# Starts a private PostgreSQL server for the test suite: a fresh cluster in a temporary
# directory, owned by the 'postgres' user, trust authentication, listening on 127.0.0.1 only.
# Usage: eval "$(bash scripts/pg-test-server.sh start)"   ... bash scripts/pg-test-server.sh stop DIR
set -euo pipefail
cmd=${1:-start}
bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
as_pg() { runuser -u postgres -- "$@"; }
case "$cmd" in
  start)
    # A free loopback port (asked of the kernel), unless one is given.
    port=${LATLAB_TEST_PG_PORT:-$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')}
    dir=$(mktemp -d /tmp/latlab-pg.XXXXXX)
    chown postgres: "$dir"
    as_pg "$bin/initdb" -D "$dir/data" -A trust -U postgres >"$dir/initdb.log" 2>&1
    as_pg "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
      -o "-c listen_addresses=127.0.0.1 -p $port -k $dir" start >/dev/null
    as_pg "$bin/createdb" -h 127.0.0.1 -p "$port" -U postgres latlab_test
    echo "export LATLAB_TEST_PG=postgres://postgres@127.0.0.1:$port/latlab_test"
    echo "export LATLAB_TEST_PG_DIR=$dir"
    ;;
  stop)
    dir=${2:?directory}
    as_pg "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null 2>&1 || true
    rm -rf "$dir"
    ;;
esac
