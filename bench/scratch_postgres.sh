# Sourced by the benchmark scripts that need a PostgreSQL server (bench/distributed_sim.sh,
# bench/two_workers.sh): starts a throwaway server in a temporary directory (as the
# postgres user when run as root), sets PG_URL to its database "ollie", and stops and
# removes it when the script exits. Extra server settings: PG_OPTIONS="-c name=value".
PG_BIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
PG_DIR=$(mktemp -d /tmp/ollie-pg.XXXXXX)
chmod 755 "$PG_DIR"
PG_AS=()
if [ "$(id -u)" -eq 0 ]; then chown postgres "$PG_DIR"; PG_AS=(runuser -u postgres --); fi
PG_CTL=("${PG_AS[@]}" "$PG_BIN/pg_ctl" -D "$PG_DIR/data"
        -o "-k $PG_DIR -c listen_addresses='' -p 5432 ${PG_OPTIONS:-}")
stop_scratch_postgres() {
  "${PG_CTL[@]}" -m immediate stop > /dev/null 2>&1 || true
  rm -rf "$PG_DIR"
}
trap stop_scratch_postgres EXIT
"${PG_AS[@]}" "$PG_BIN/initdb" -D "$PG_DIR/data" -U ollie --auth=trust -E UTF8 --locale=C > /dev/null
"${PG_CTL[@]}" -w -l "$PG_DIR/log" start > /dev/null
"${PG_AS[@]}" "$PG_BIN/createdb" -h "$PG_DIR" -U ollie ollie
PG_URL="postgresql:///ollie?host=$PG_DIR&user=ollie"
