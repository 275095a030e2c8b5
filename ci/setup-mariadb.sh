#!/usr/bin/env bash
# A real MariaDB for the audit's tests (harness/audit: TestMariaDB*): installs mariadb-server from
# Debian if missing, initialises a datadir, starts mariadbd directly (no systemd) on a unix socket and
# a loopback port, loads the `cloud` tables the audit reads (harness/audit/cloudsqltest/schema.sql)
# and creates three users:
#   csconform_reader   SELECT on cloud.* (what the audit needs)
#   csconform_noselect no privilege on cloud
#   csconform_admin    everything (the tests plant rows with it)
# It prints the variables the tests read (also written to $dir/env):
#   CSCONFORM_MARIADB_DSN, CSCONFORM_MARIADB_NOSELECT_DSN, CSCONFORM_MARIADB_ADMIN_DSN
# Idempotent: a server already answering is kept, the schema and users are (re)applied.
#   ci/setup-mariadb.sh         set up and start (eval "$(ci/setup-mariadb.sh)" exports the variables)
#   ci/setup-mariadb.sh stop    stop the server (the datadir stays)
# Environment: CSCONFORM_MARIADB_DIR (default /var/tmp/csconform-mariadb), CSCONFORM_MARIADB_PORT
# (default: a free loopback port, tried again on another one if some other process binds it first:
# a fixed port failed CI once when something else on the machine held it). Run as root. Progress goes
# to stderr, the variables to stdout.
set -euo pipefail
cd "$(dirname "$0")/.."
dir="${CSCONFORM_MARIADB_DIR:-/var/tmp/csconform-mariadb}"
sock="$dir/mysqld.sock"
pidf="$dir/mysqld.pid"
portf="$dir/port"
log() { echo "ci/setup-mariadb.sh: $*" >&2; }

running() { [ -s "$pidf" ] && kill -0 "$(cat "$pidf")" 2>/dev/null; }

if [ "${1:-}" = stop ]; then
  if running; then
    pid="$(cat "$pidf")"
    kill "$pid"
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then log "mariadbd $pid did not stop"; exit 1; fi
    log "stopped mariadbd $pid"
  else
    log "no mariadbd of ours is running"
  fi
  exit 0
fi

if ! command -v mariadbd >/dev/null 2>&1 && [ ! -x /usr/sbin/mariadbd ]; then
  log "installing mariadb-server (apt-get)"
  apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends mariadb-server mariadb-client >&2
fi
mariadbd=/usr/sbin/mariadbd
command -v mariadbd >/dev/null 2>&1 && mariadbd="$(command -v mariadbd)"

mkdir -p "$dir"
chown mysql:mysql "$dir"
if [ ! -d "$dir/data/mysql" ]; then
  log "initialising $dir/data"
  mariadb-install-db --no-defaults --user=mysql --datadir="$dir/data" --auth-root-authentication-method=socket \
    --skip-test-db >"$dir/install.log" 2>&1 || { cat "$dir/install.log" >&2; exit 1; }
fi

# free_port prints a loopback TCP port nothing listens on now (a connect that fails); the bind may
# still lose a race with another process, which start() answers by trying another port.
free_port() {
  local p
  for _ in $(seq 1 50); do
    p=$(( 20000 + RANDOM % 40000 ))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then echo "$p"; return 0; fi
  done
  log "no free loopback port found"; return 1
}

answers() { mariadb-admin --no-defaults --socket="$sock" -uroot ping >/dev/null 2>&1; }

# start PORT: 0 when mariadbd answers, 2 when it could not bind PORT, 1 otherwise.
start() {
  local port="$1" pid
  log "starting mariadbd on $sock and 127.0.0.1:$port"
  : >"$dir/error.log"
  chown mysql:mysql "$dir/error.log"
  # setsid: the server outlives this script, in its own session (stop it with: ci/setup-mariadb.sh stop)
  setsid "$mariadbd" --no-defaults --user=mysql --datadir="$dir/data" --socket="$sock" --port="$port" \
    --bind-address=127.0.0.1 --pid-file="$pidf" --log-error="$dir/error.log" \
    --skip-name-resolve --innodb-buffer-pool-size=32M --performance-schema=OFF </dev/null >/dev/null 2>&1 &
  pid=$!
  for _ in $(seq 1 300); do
    if answers; then echo "$port" >"$portf"; return 0; fi
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  answers && { echo "$port" >"$portf"; return 0; }
  if grep -q 'Address already in use' "$dir/error.log"; then return 2; fi
  log "mariadbd does not answer on $sock; its log:"
  tail -n 20 "$dir/error.log" >&2 || true
  return 1
}

if ! running || ! answers || [ ! -s "$portf" ]; then
  if running; then kill "$(cat "$pidf")" 2>/dev/null || true; sleep 1; fi
  ok=
  for _ in 1 2 3 4 5; do
    port="${CSCONFORM_MARIADB_PORT:-$(free_port)}"
    rc=0; start "$port" || rc=$?
    if [ "$rc" = 0 ]; then ok=1; break; fi
    if [ "$rc" = 1 ] || [ -n "${CSCONFORM_MARIADB_PORT:-}" ]; then
      [ "$rc" = 2 ] && { log "port $port is taken by another process; unset CSCONFORM_MARIADB_PORT to use a free one"; tail -n 5 "$dir/error.log" >&2; }
      exit 1
    fi
    log "port $port was taken meanwhile; another one"
  done
  [ -n "$ok" ] || { log "mariadbd could not bind a free port in 5 tries"; exit 1; }
fi
port="$(cat "$portf")"

# Fixed passwords: a throwaway server on loopback, for tests only.
sql() { mariadb --no-defaults --socket="$sock" -uroot "$@"; }
sql <<SQL
CREATE DATABASE IF NOT EXISTS cloud;
CREATE USER IF NOT EXISTS 'csconform_reader'@'127.0.0.1' IDENTIFIED BY 'reader-pw';
CREATE USER IF NOT EXISTS 'csconform_reader'@'localhost' IDENTIFIED BY 'reader-pw';
CREATE USER IF NOT EXISTS 'csconform_noselect'@'127.0.0.1' IDENTIFIED BY 'noselect-pw';
CREATE USER IF NOT EXISTS 'csconform_noselect'@'localhost' IDENTIFIED BY 'noselect-pw';
CREATE USER IF NOT EXISTS 'csconform_admin'@'127.0.0.1' IDENTIFIED BY 'admin-pw';
CREATE USER IF NOT EXISTS 'csconform_admin'@'localhost' IDENTIFIED BY 'admin-pw';
GRANT SELECT ON cloud.* TO 'csconform_reader'@'127.0.0.1', 'csconform_reader'@'localhost';
GRANT ALL PRIVILEGES ON *.* TO 'csconform_admin'@'127.0.0.1', 'csconform_admin'@'localhost' WITH GRANT OPTION;
SQL
# the tables: dropped and created again, so a schema.sql change is picked up
{
  echo "USE cloud;"
  sed -n 's/^CREATE TABLE `\([a-z_]*\)`.*/DROP TABLE IF EXISTS `\1`;/p' harness/audit/cloudsqltest/schema.sql
  cat harness/audit/cloudsqltest/schema.sql
} | sql

cat >"$dir/env" <<ENV
CSCONFORM_MARIADB_DSN='csconform_reader:reader-pw@tcp(127.0.0.1:$port)/cloud'
CSCONFORM_MARIADB_NOSELECT_DSN='csconform_noselect:noselect-pw@tcp(127.0.0.1:$port)/cloud'
CSCONFORM_MARIADB_ADMIN_DSN='csconform_admin:admin-pw@unix($sock)/cloud'
ENV
log "MariaDB $("$mariadbd" --version | sed 's/.*Ver \([^ ]*\).*/\1/') answers on $sock and 127.0.0.1:$port (pid $(cat "$pidf")); stop it with ci/setup-mariadb.sh stop"
sed 's/^/export /' "$dir/env"
