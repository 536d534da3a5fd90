#!/usr/bin/env bash
# provision-timescaledb.sh — make sure the local PostgreSQL server has the
# TimescaleDB extension (Apache-2.0 edition) installed and preloaded.
#
# Usage:
#   scripts/provision-timescaledb.sh            provision (idempotent)
#   scripts/provision-timescaledb.sh --check    only report; exit 0 if provisioned, 1 if not
#
# Connection (used for every check; the database is always `postgres`):
#   PGHOST / PGPORT / PGUSER (and PGPASSWORD) win when set; otherwise the
#   host/port/user/password of DATABASE_URL; otherwise 127.0.0.1:5432 as root.
#
# Optional overrides (no package host is ever hard-coded in this file):
#   TIMESCALEDB_SRC_MIRROR   Debian archive URI to fetch the source package from
#                            (default: the bookworm-style main archive entry found
#                            in this machine's own apt sources)
#   TIMESCALEDB_SRC_SUITES   suites to try, in order (default: "trixie sid")
#
# Exit codes: 0 provisioned; 1 not provisioned (--check) or a step failed;
#             2 this machine cannot be provisioned by the script (operator action).
#
# Why a source build: Debian bookworm ships no timescaledb package and the only
# network we may rely on is the Debian archive itself. Newer Debian suites carry
# the *source* package `timescaledb` (a DFSG repack containing only the
# Apache-licensed code), which builds against any installed PostgreSQL major in
# well under a minute. We fetch it with a throw-away apt configuration so the
# system's sources are never changed, and apt still verifies the archive
# signature (InRelease -> Sources -> file hashes) with Debian's archive keyring.

set -euo pipefail

readonly EXT=timescaledb
readonly CHECK_DB=postgres

log() { printf 'provision: %s\n' "$*" >&2; }
die() { local code=$1; shift; printf 'provision: ERROR: %s\n' "$*" >&2; exit "$code"; }

usage() {
  sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'
}

MODE=provision
case "${1:-}" in
  "") ;;
  --check) MODE=check ;;
  -h|--help) usage; exit 0 ;;
  *) usage >&2; exit 2 ;;
esac

# ---------------------------------------------------------------------------
# Connection settings. Each of host/port/user is taken independently with the
# precedence env var > DATABASE_URL > default, so that e.g. a DATABASE_URL that
# only differs in the database name still works.
# ---------------------------------------------------------------------------
urldecode() { local s=${1//%/\\x}; printf '%b' "$s"; }

url_host="" url_port="" url_user="" url_pass=""
if [[ -n "${DATABASE_URL:-}" ]]; then
  # postgres[ql]://[user[:password]@]host[:port][/db][?params]
  re='^postgres(ql)?://(([^:@/]*)(:([^@/]*))?@)?(\[[^]]*\]|[^:/?]*)(:([0-9]+))?(/[^?]*)?(\?.*)?$'
  if [[ "$DATABASE_URL" =~ $re ]]; then
    url_user=$(urldecode "${BASH_REMATCH[3]}")
    url_pass=$(urldecode "${BASH_REMATCH[5]}")
    url_host=${BASH_REMATCH[6]}
    url_host=${url_host#[}; url_host=${url_host%]}   # strip IPv6 brackets
    url_port=${BASH_REMATCH[8]}
  else
    log "warning: DATABASE_URL is not a postgres:// URL; ignoring it"
  fi
fi
export PGHOST="${PGHOST:-${url_host:-127.0.0.1}}"
export PGPORT="${PGPORT:-${url_port:-5432}}"
export PGUSER="${PGUSER:-${url_user:-root}}"
if [[ -z "${PGPASSWORD:-}" && -n "$url_pass" ]]; then export PGPASSWORD="$url_pass"; fi
# Don't hang forever on an unreachable host, and keep CREATE EXTENSION's
# welcome banner (a NOTICE) out of the output.
export PGCONNECT_TIMEOUT="${PGCONNECT_TIMEOUT:-5}"
export PGOPTIONS="${PGOPTIONS:+$PGOPTIONS }-c client_min_messages=warning"

# psql in "script" mode: no ~/.psqlrc, unaligned, tuples only, stop on error.
# Usage: q DB SQL
q() { psql -X -q -A -t -v ON_ERROR_STOP=1 -d "$1" -c "$2"; }

# ---------------------------------------------------------------------------
# State probe: one round trip so the "already done" path stays fast.
#   avail   default_version of timescaledb in pg_available_extensions ('' if none)
#   preload the *running* shared_preload_libraries (SHOW)
#   license timescaledb.license ('' unless set explicitly: see license_of)
#   vernum  server_version_num
# ---------------------------------------------------------------------------
reachable=0 avail="" preload="" license="" vernum=""
probe() {
  local out
  reachable=0 avail="" preload="" license="" vernum=""
  # Fields separated by an ASCII unit separator: none of them can contain it.
  if out=$(q "$CHECK_DB" "SELECT concat_ws(chr(31),
              coalesce((SELECT default_version FROM pg_available_extensions WHERE name = '$EXT'), ''),
              current_setting('shared_preload_libraries'),
              coalesce(current_setting('timescaledb.license', true), ''),
              current_setting('server_version_num'))" 2>/dev/null); then
    reachable=1
    IFS=$'\x1f' read -r avail preload license vernum <<<"$out" || true
  fi
}

# The timescaledb.license GUC is only registered once the versioned module is
# loaded, i.e. in a database that has the extension; `postgres` normally does
# not. When it is not set explicitly, the effective value is the build default:
# "apache" for an Apache-only build (no timescaledb-tsl-<ver>.so next to the
# loader), "timescale" otherwise. We can only look at the files when the server
# is local and its pg_config is installed; else say "unknown".
license_of() {
  local cfg="/usr/lib/postgresql/$((vernum / 10000))/bin/pg_config" libdir
  if [[ -n "$license" ]]; then echo "$license"; return; fi
  case "$PGHOST" in
    /*|localhost|127.*|::1) ;;
    *) echo unknown; return ;;
  esac
  if [[ -n "$vernum" && -x "$cfg" ]] && libdir=$("$cfg" --pkglibdir 2>/dev/null) \
      && [[ -e "$libdir/$EXT-$avail.so" ]]; then
    if [[ -e "$libdir/$EXT-tsl-$avail.so" ]]; then echo timescale; else echo apache; fi
  else
    echo unknown
  fi
}

# True when the comma-separated GUC list in $1 contains timescaledb.
preload_has_ext() {
  local item
  IFS=',' read -ra items <<<"$1"
  for item in "${items[@]}"; do
    item=${item//[[:space:]\"]/}
    [[ "$item" == "$EXT" ]] && return 0
  done
  return 1
}

provisioned() { [[ $reachable == 1 && -n "$avail" ]] && preload_has_ext "$preload"; }

probe
if provisioned; then
  echo "$EXT: already provisioned ($avail, license $(license_of))"
  exit 0
fi

if [[ $MODE == check ]]; then
  if [[ $reachable != 1 ]]; then
    echo "$EXT: not provisioned (PostgreSQL not reachable at $PGHOST:$PGPORT as $PGUSER)"
  elif [[ -z "$avail" ]]; then
    echo "$EXT: not provisioned (extension not installed on the server)"
  else
    echo "$EXT: not provisioned (extension $avail installed, but not in shared_preload_libraries='$preload')"
  fi
  exit 1
fi

# ---------------------------------------------------------------------------
# From here on we change the machine: we need root, Debian's apt, and a server
# whose data directory and cluster live on this machine.
# ---------------------------------------------------------------------------
operator_help() {
  cat >&2 <<EOF
provision: ERROR: $1
provision: TimescaleDB is not provisioned and this script cannot do it here. Either:
provision:   - run this script as root on Debian/Ubuntu, next to the PostgreSQL server
provision:     (sudo scripts/provision-timescaledb.sh), or
provision:   - use the docker-compose route: \`docker compose up\` (official
provision:     timescale/timescaledb image, TimescaleDB already preloaded), or
provision:   - install TimescaleDB from your platform's packages (e.g. Homebrew
provision:     timescaledb, or Timescale's apt/yum repository) and add it to
provision:     shared_preload_libraries, e.g.
provision:       ALTER SYSTEM SET shared_preload_libraries = 'timescaledb';
provision:     then restart PostgreSQL.
EOF
  exit 2
}

[[ $(id -u) == 0 ]] || operator_help "must run as root to install packages and restart PostgreSQL"
if [[ ! -f /etc/debian_version ]] || ! command -v apt-get >/dev/null; then
  operator_help "this is not a Debian-family system (no /etc/debian_version or apt-get)"
fi

# Serialise concurrent runs (two parallel builds/restarts would trip over each other).
# (No "2>/dev/null" on exec: with exec it would silence stderr for the whole script.)
lockfile=/run/lock/provision-timescaledb.lock
[[ -d /run/lock ]] || lockfile=/tmp/provision-timescaledb.lock
exec 9>"$lockfile"
if command -v flock >/dev/null; then
  if ! flock -n 9; then
    log "another provisioning run is in progress (lock $lockfile); waiting up to 10 min"
    flock -w 600 9 || die 1 "another provisioning run still holds $lockfile"
  fi
  # Someone else may have just finished the job while we waited.
  probe
  if provisioned; then echo "$EXT: already provisioned ($avail, license $(license_of))"; exit 0; fi
fi

WORK=$(mktemp -d /tmp/provision-timescaledb.XXXXXX)
SCRATCH_DB=""
cleanup() {
  local rc=$?
  if [[ -n "$SCRATCH_DB" ]]; then
    q "$CHECK_DB" "DROP DATABASE IF EXISTS \"$SCRATCH_DB\" WITH (FORCE)" >/dev/null 2>&1 || true
  fi
  if [[ $rc != 0 && -f "$WORK/build.log" ]]; then
    cp "$WORK/build.log" /var/tmp/provision-timescaledb-build.log 2>/dev/null \
      && log "build log kept at /var/tmp/provision-timescaledb-build.log"
  fi
  rm -rf "$WORK"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---------------------------------------------------------------------------
# The server must be up (we need its version and data directory). If it is a
# local Debian cluster that is merely stopped, start it rather than give up.
# ---------------------------------------------------------------------------
systemd_running() { [[ -d /run/systemd/system ]]; }
ctlcluster() { # ctlcluster ACTION MAJOR NAME
  # Without systemd as PID 1, pg_ctlcluster must not redirect to systemctl.
  # "9>&-": the postmaster started here would otherwise inherit our lock fd and
  # hold the lock for as long as the server runs, blocking every later run.
  if systemd_running; then pg_ctlcluster "$2" "$3" "$1" 9>&-
  else pg_ctlcluster --skip-systemctl-redirect "$2" "$3" "$1" 9>&-; fi
}
wait_ready() {
  local _
  for _ in $(seq 1 60); do
    if q "$CHECK_DB" "SELECT 1" >/dev/null 2>&1; then return 0; fi
    sleep 1
  done
  return 1
}

if [[ $reachable != 1 ]]; then
  started=0
  if command -v pg_lsclusters >/dev/null; then
    while read -r ver name port status _; do
      if [[ "$port" == "$PGPORT" && "$status" == down* ]]; then
        log "PostgreSQL $ver/$name (port $port) is down; starting it"
        ctlcluster start "$ver" "$name" && started=1
        break
      fi
    done < <(pg_lsclusters --no-header 2>/dev/null)
  fi
  [[ $started == 1 ]] && wait_ready && probe
  [[ $reachable == 1 ]] || die 2 "PostgreSQL is not reachable at $PGHOST:$PGPORT as $PGUSER; start it (pg_ctlcluster <ver> <name> start) and re-run"
  if provisioned; then echo "$EXT: already provisioned ($avail, license $(license_of))"; exit 0; fi
fi

[[ $(q "$CHECK_DB" "SELECT rolsuper FROM pg_roles WHERE rolname = current_user") == t ]] \
  || die 2 "role '$PGUSER' is not a superuser; ALTER SYSTEM needs one (set PGUSER)"

ver_num=$(q "$CHECK_DB" "SHOW server_version_num")
MAJOR=$((ver_num / 10000))
DATA_DIR=$(q "$CHECK_DB" "SHOW data_directory")
log "server: PostgreSQL $MAJOR ($ver_num) at $PGHOST:$PGPORT, data directory $DATA_DIR"

# Extensions must be installed where *this* server looks for them, so the
# server must be a local cluster managed by postgresql-common (pg_lsclusters).
[[ -d "$DATA_DIR" ]] \
  || operator_help "the server's data directory $DATA_DIR is not on this machine (remote host or container?)"
command -v pg_lsclusters >/dev/null \
  || operator_help "pg_lsclusters not found: the server is not a Debian postgresql-common cluster"
CLUSTER=""
real_data=$(readlink -f "$DATA_DIR")
while read -r ver name port _status _owner dir _; do
  if [[ "$ver" == "$MAJOR" && ( "$(readlink -f "$dir")" == "$real_data" || -z "$CLUSTER" && "$port" == "$PGPORT" ) ]]; then
    CLUSTER=$name
  fi
done < <(pg_lsclusters --no-header)
[[ -n "$CLUSTER" ]] || operator_help "no postgresql-common cluster matches $DATA_DIR (see pg_lsclusters)"
log "cluster: $MAJOR/$CLUSTER"

export DEBIAN_FRONTEND=noninteractive
apt_install() { # install packages not yet installed; refresh lists once if needed
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  [[ ${#missing[@]} == 0 ]] && return 0
  log "apt-get install ${missing[*]}"
  if ! apt-get install -y -qq --no-install-recommends "${missing[@]}" >"$WORK/apt.log" 2>&1; then
    # Typical on fresh machines: empty or stale package lists.
    log "install failed; running apt-get update and retrying"
    apt-get update -qq >>"$WORK/apt.log" 2>&1 || true
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >>"$WORK/apt.log" 2>&1 \
      || { tail -n 20 "$WORK/apt.log" >&2; die 1 "apt-get install ${missing[*]} failed"; }
  fi
}

# ---------------------------------------------------------------------------
# Step 1: build + install the extension files (skipped if the server already
# sees a timescaledb control file and the loader library is in its libdir).
# ---------------------------------------------------------------------------
# Ask the server itself where it loads libraries from (pg_config view; we are
# superuser), so no -dev package is needed when there is nothing to build.
PKGLIBDIR=$(q "$CHECK_DB" "SELECT setting FROM pg_config WHERE name = 'PKGLIBDIR'")

if [[ -n "$avail" && -f "$PKGLIBDIR/$EXT.so" ]]; then
  log "step 1/3: extension files already installed ($EXT $avail); skipping build"
else
  log "step 1/3: building $EXT from Debian's source package"
  # postgresql-server-dev-N: headers + pg_config for the *running* major.
  # dpkg-dev/xz-utils: apt-get source unpacks the .dsc with dpkg-source.
  apt_install "postgresql-server-dev-$MAJOR" cmake gcc make libc6-dev dpkg-dev xz-utils libssl-dev
  PG_CONFIG=/usr/lib/postgresql/$MAJOR/bin/pg_config
  [[ -x "$PG_CONFIG" ]] || die 1 "$PG_CONFIG missing after installing postgresql-server-dev-$MAJOR"
  [[ $("$PG_CONFIG" --pkglibdir) == "$PKGLIBDIR" ]] \
    || die 1 "$PG_CONFIG installs into $("$PG_CONFIG" --pkglibdir) but the server loads from $PKGLIBDIR"

  # --- find the Debian main archive among this machine's apt sources -------
  # We need the URI whose suite is this release's codename (e.g. bookworm) with
  # component main: not -security/-updates, and not third-party repositories.
  # shellcheck disable=SC1091  # sourced in a subshell only to read one field
  codename=$( . /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}" )
  [[ -n "$codename" ]] || die 1 "cannot tell the release codename from /etc/os-release"
  find_mirror() { # prints "URI KEYRING" for the first matching entry
    local f
    shopt -s nullglob
    # One-line format: deb [opts] URI SUITE COMPONENTS...
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
      [[ -f "$f" ]] || continue
      awk -v cn="$codename" '
        { sub(/#.*/, "") }
        $1 == "deb" || $1 == "deb-src" {
          opts = ""; i = 2
          if ($2 ~ /^\[/) { while (i <= NF) { opts = opts " " $i; if ($i ~ /\]$/) break; i++ } ; i++ }
          uri = $i; suite = $(i+1); main = 0
          for (j = i + 2; j <= NF; j++) if ($j == "main") main = 1
          if (suite == cn && main && uri !~ /^cdrom:/) {
            kr = "-"; if (match(opts, /signed-by=[^] ]+/)) kr = substr(opts, RSTART + 10, RLENGTH - 10)
            print uri, kr; exit
          }
        }' "$f"
    done
    # deb822 format: paragraphs of "Field: value" lines.
    for f in /etc/apt/sources.list.d/*.sources; do
      awk -v cn="$codename" '
        function flush() {
          if (types ~ /(^| )deb( |$)|deb-src/ && enabled !~ /^(no|false)$/ && uris != "" &&
              (" " suites " ") ~ (" " cn " ") && (" " comps " ") ~ / main /) {
            split(uris, u, " "); if (kr == "" || kr ~ /BEGIN PGP/) kr = "-"
            if (u[1] !~ /^cdrom:/) { print u[1], kr; found = 1; exit }
          }
          types = uris = suites = comps = kr = enabled = ""
        }
        /^[[:space:]]*#/ { next }
        /^[[:space:]]*$/ { flush(); next }
        /^[[:space:]]/ { next }                      # continuation (e.g. inline key)
        {
          k = tolower($0); sub(/:.*/, "", k); v = $0; sub(/^[^:]*:[[:space:]]*/, "", v)
          gsub(/[[:space:]]+/, " ", v)
          if (k == "types") types = v; else if (k == "uris") uris = v
          else if (k == "suites") suites = v; else if (k == "components") comps = v
          else if (k == "signed-by") kr = v; else if (k == "enabled") enabled = tolower(v)
        }
        END { if (!found) flush() }' "$f"
    done
  }
  if [[ -n "${TIMESCALEDB_SRC_MIRROR:-}" ]]; then
    MIRROR=$TIMESCALEDB_SRC_MIRROR KEYRING=-
  else
    read -r MIRROR KEYRING < <(find_mirror | head -n 1) || true
  fi
  [[ -n "${MIRROR:-}" ]] || die 1 "no Debian main archive for '$codename' found in the apt sources; set TIMESCALEDB_SRC_MIRROR"
  # Pin the signature check to Debian's archive keyring (the key file the
  # system entry itself uses, if it names one). Verification stays ON: we never
  # use [trusted=yes] or --allow-unauthenticated.
  if [[ "$KEYRING" == - || ! -f "$KEYRING" ]]; then KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg; fi
  [[ -f "$KEYRING" ]] || apt_install debian-archive-keyring
  log "source mirror: $MIRROR (keyring $KEYRING)"

  # --- private apt configuration: own sources, lists and caches in $WORK ----
  # _apt (apt's download sandbox user) must be able to write there, otherwise
  # apt falls back to downloading as root with a warning.
  chmod 755 "$WORK"
  mkdir -p "$WORK/apt/lists/partial" "$WORK/apt/cache/archives/partial" "$WORK/apt/parts" "$WORK/src"
  if id _apt >/dev/null 2>&1; then chown -R _apt:root "$WORK/apt/lists" "$WORK/apt/cache" "$WORK/src"; fi
  APT_OPTS=(
    -o "Dir::Etc::SourceList=$WORK/apt/sources.list"
    -o "Dir::Etc::SourceParts=$WORK/apt/parts"
    -o "Dir::State::Lists=$WORK/apt/lists"
    -o "Dir::Cache=$WORK/apt/cache"              # keep the system's pkgcache untouched
    -o "Dir::Cache::archives=$WORK/apt/cache/archives"
  )
  fetch_from_suite() { # fetch_from_suite SUITE -> 0 if the source package was downloaded
    local suite=$1
    echo "deb-src [signed-by=$KEYRING] $MIRROR $suite main" >"$WORK/apt/sources.list"
    rm -f "$WORK"/apt/lists/*_Sources* "$WORK"/apt/lists/*Release*
    if ! apt-get "${APT_OPTS[@]}" update -q >"$WORK/apt-src.log" 2>&1 \
        || grep -qE '^(E:|W: GPG error)' "$WORK/apt-src.log"; then
      # A keyring from an older bookworm point release may predate the
      # trixie/sid signing keys: upgrade it from the system's own sources once.
      if grep -qE 'NO_PUBKEY|EXPKEYSIG|not signed' "$WORK/apt-src.log" && [[ -z "${keyring_upgraded:-}" ]]; then
        keyring_upgraded=1
        log "archive keyring lacks the $suite signing key; upgrading debian-archive-keyring"
        apt-get update -qq >/dev/null 2>&1 || true
        apt-get install -y -qq --only-upgrade debian-archive-keyring >/dev/null 2>&1 || true
        if ! apt-get "${APT_OPTS[@]}" update -q >"$WORK/apt-src.log" 2>&1 \
            || grep -qE '^(E:|W: GPG error)' "$WORK/apt-src.log"; then
          sed 's/^/provision:   /' "$WORK/apt-src.log" >&2
          return 1
        fi
      else
        sed 's/^/provision:   /' "$WORK/apt-src.log" >&2
        return 1
      fi
    fi
    apt-cache "${APT_OPTS[@]}" showsrc "$EXT" 2>/dev/null | grep -q '^Package:' || return 1
    log "fetching source package $EXT from $MIRROR $suite (signature-verified)"
    (cd "$WORK/src" && apt-get "${APT_OPTS[@]}" source --download-only -q "$EXT" >"$WORK/apt-src.log" 2>&1) \
      || { sed 's/^/provision:   /' "$WORK/apt-src.log" >&2; return 1; }
  }
  SUITE=""
  for s in ${TIMESCALEDB_SRC_SUITES:-trixie sid}; do
    if fetch_from_suite "$s"; then SUITE=$s; break; fi
    log "suite $s: no usable $EXT source package; trying the next one"
  done
  [[ -n "$SUITE" ]] || die 1 "could not fetch the $EXT source package from $MIRROR (suites: ${TIMESCALEDB_SRC_SUITES:-trixie sid})"
  dsc=$(ls "$WORK"/src/"${EXT}"_*.dsc)
  # apt already checked every file against the signed Sources index and
  # dpkg-source re-checks them against the .dsc. (It only *warns* that it cannot
  # check the uploader's signature on the .dsc: that needs the large
  # debian-keyring package, and the archive signature already covers it.)
  dpkg-source -x "$dsc" "$WORK/src/tree" >"$WORK/build.log" 2>&1 \
    || { tail -n 20 "$WORK/build.log" >&2; die 1 "dpkg-source could not unpack $dsc"; }

  # --- configure, build, install -------------------------------------------
  # Same switches as Debian's own packaging (debian/rules): Apache-only code,
  # no telemetry. Tests and -Werror are off: we only want the library.
  log "building $(basename "$dsc" .dsc) for PostgreSQL $MAJOR (make -j$(nproc))"
  {
    cmake -S "$WORK/src/tree" -B "$WORK/src/tree/build" \
      -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DPG_CONFIG="$PG_CONFIG" \
      -DAPACHE_ONLY=ON \
      -DUSE_TELEMETRY=OFF -DSEND_TELEMETRY_DEFAULT=OFF \
      -DREGRESS_CHECKS=OFF -DTAP_CHECKS=OFF \
      -DWARNINGS_AS_ERRORS=OFF -DENABLE_DEBUG_UTILS=OFF
    make -C "$WORK/src/tree/build" -j"$(nproc)"
    make -C "$WORK/src/tree/build" install
  } >>"$WORK/build.log" 2>&1 || { tail -n 40 "$WORK/build.log" >&2; die 1 "build of $EXT failed"; }
  avail=$(q "$CHECK_DB" "SELECT default_version FROM pg_available_extensions WHERE name = '$EXT'")
  [[ -n "$avail" ]] || die 1 "installed $EXT but the server does not list it in pg_available_extensions"
  log "installed $EXT $avail into $PKGLIBDIR"
fi

# ---------------------------------------------------------------------------
# Step 2: add timescaledb to shared_preload_libraries, keeping existing entries.
# The list is passed as separate literals: shared_preload_libraries is a
# quoted-list GUC, so a single 'a,b' string would become ONE library "a,b".
# ---------------------------------------------------------------------------
if preload_has_ext "$preload"; then
  log "step 2/3: $EXT already in shared_preload_libraries"
  need_restart=0
else
  log "step 2/3: adding $EXT to shared_preload_libraries (was '${preload}')"
  # Preflight before we take the server down: LOAD the library in a throw-away
  # backend. A good timescaledb.so loads and then deliberately ends that one
  # session with FATAL "must be preloaded"; a broken or mismatched one fails
  # with "could not load library" and we stop before touching the config.
  if ! load_out=$(q "$CHECK_DB" "LOAD '$EXT'" 2>&1) && [[ "$load_out" != *"must be preloaded"* ]]; then
    printf '%s\n' "$load_out" | sed 's/^/provision:   /' >&2
    die 1 "the server cannot load $EXT.so; not changing shared_preload_libraries"
  fi
  libs=()
  IFS=',' read -ra items <<<"$preload"
  for item in "${items[@]}"; do
    item=${item//[[:space:]\"]/}
    [[ -n "$item" ]] && libs+=("'${item//\'/\'\'}'")
  done
  libs+=("'$EXT'")
  # Keep a copy of postgresql.auto.conf so a server that refuses to start with
  # the new setting can be put back the way it was.
  AUTO_CONF="$DATA_DIR/postgresql.auto.conf"
  cp -p "$AUTO_CONF" "$WORK/postgresql.auto.conf.bak"
  q "$CHECK_DB" "ALTER SYSTEM SET shared_preload_libraries = $(IFS=,; echo "${libs[*]}")" >/dev/null
  need_restart=1
fi

# ---------------------------------------------------------------------------
# Step 3: restart so the preload takes effect, then prove it works.
# ---------------------------------------------------------------------------
if [[ $need_restart == 1 ]]; then
  log "step 3/3: restarting PostgreSQL $MAJOR/$CLUSTER (clients will be disconnected)"
  if ! ctlcluster restart "$MAJOR" "$CLUSTER" >"$WORK/restart.log" 2>&1 || ! wait_ready; then
    sed 's/^/provision:   /' "$WORK/restart.log" >&2
    log "server did not come back; restoring postgresql.auto.conf and starting it again"
    cp -p "$WORK/postgresql.auto.conf.bak" "$AUTO_CONF"
    ctlcluster start "$MAJOR" "$CLUSTER" >/dev/null 2>&1 || true
    wait_ready || true
    die 1 "PostgreSQL failed to start with $EXT preloaded; see /var/log/postgresql/postgresql-$MAJOR-$CLUSTER.log"
  fi
else
  log "step 3/3: no restart needed"
fi

# Telemetry is compiled out (USE_TELEMETRY=OFF), but if a build with telemetry
# is in place make sure it does not phone home.
if [[ -n $(q "$CHECK_DB" "SELECT 1 FROM pg_settings WHERE name = 'timescaledb.telemetry_level' AND setting <> 'off'") ]]; then
  log "turning timescaledb.telemetry_level off"
  q "$CHECK_DB" "ALTER SYSTEM SET timescaledb.telemetry_level = 'off'" >/dev/null
  q "$CHECK_DB" "SELECT pg_reload_conf()" >/dev/null
fi

# Verify in a scratch database: the extension loads and a hypertable works.
# DROP ... WITH (FORCE) because CREATE EXTENSION starts a per-database
# TimescaleDB scheduler (a background worker connected to that database) that
# can make a plain DROP DATABASE fail with "being accessed by other users".
SCRATCH_DB="timescaledb_provision_check_$$"
q "$CHECK_DB" "CREATE DATABASE \"$SCRATCH_DB\"" >/dev/null
ext_version=$(q "$SCRATCH_DB" "CREATE EXTENSION IF NOT EXISTS $EXT;
  CREATE TABLE provision_probe (ts timestamptz NOT NULL, v double precision);
  SELECT create_hypertable('provision_probe', 'ts');
  SELECT extversion FROM pg_extension WHERE extname = '$EXT'" | tail -n 1)
lic=$(q "$SCRATCH_DB" "SHOW timescaledb.license")
if [[ $MAJOR -ge 13 ]]; then
  q "$CHECK_DB" "DROP DATABASE \"$SCRATCH_DB\" WITH (FORCE)" >/dev/null
else
  q "$CHECK_DB" "DROP DATABASE \"$SCRATCH_DB\"" >/dev/null
fi
SCRATCH_DB=""

probe
provisioned || die 1 "verification failed: available='$avail' shared_preload_libraries='$preload'"
echo "$EXT: provisioned ($ext_version, license $lic) in PostgreSQL $MAJOR/$CLUSTER at $PGHOST:$PGPORT"
