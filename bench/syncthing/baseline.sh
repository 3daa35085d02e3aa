#!/usr/bin/env bash
# The file-sync baseline: Debian's Syncthing between lab hosts a and b, on a lab that the
# caller brought up (`scripts/lab up 2`). Prints one JSON object on stdout; everything else
# goes to stderr.
#
#   bench/syncthing/baseline.sh --lab PATH/scripts/lab --files N --size BYTES --workdir DIR [--changes K]
#                               [--watcher-changes K]
#
# Syncthing only ever runs inside the lab hosts' network namespaces (`lab exec a|b …`),
# with a configuration written before its first start: static peer addresses, one listen
# address on the lab link, REST on 127.0.0.1 inside the namespace, and no discovery (local
# or global), relays, NAT traversal, usage or crash reports or upgrades.
#
# Figures:
#   initial_seconds  N files of BYTES random bytes written into a's folder (not timed), then
#                    from a's forced scan (POST /rest/db/scan) until b's REST status says
#                    needFiles 0, localFiles N, globalFiles N (polled every 20 ms)
#   initial_bytes    rx+tx bytes of host a's eth0 from just before the scan until b is
#                    complete and a has b's index back (the whole exchange)
#   change_seconds   one file rewritten on a, then from the forced scan of that one file
#                    (POST /rest/db/scan?sub=NAME) until b's copy has the new content
#                    (read from disk every 1 ms); the median of K such changes (default 5),
#                    one after another, each sample in change_seconds_samples
#   change_bytes     as initial_bytes, for one change (the median)
#   watcher_change_seconds_samples  with --watcher-changes K: K changes with Syncthing's
#                    default watcher on (fsWatcherEnabled, fsWatcherDelayS 10), each from
#                    the write on a until b's copy has it; no forced scan
#   receiver_peak_rss_kib  VmHWM of b's syncthing worker process (1.19 always runs a monitor
#                    process and a worker child; the monitor's own peak is reported apart)
#
# Needs root (network namespaces). MEMO_PEER_LAB_DIR and MEMO_PEER_LAB_PREFIX are passed
# through to the lab script unchanged. Runs `apt-get install syncthing` if it is missing
# (scripts/deps.sh normally installed it already).
set -euo pipefail
export LC_ALL=C

SELF=$(readlink -f "${BASH_SOURCE[0]}")
FOLDER_ID=memo-bench
GUI_PORT=8384
SYNC_PORT=22000
POLL_SECONDS=0.02       # REST status polling during the initial sync
CONTENT_POLL_SECONDS=0.001
INITIAL_TIMEOUT=300
CHANGE_TIMEOUT=60
START_TIMEOUT=60
SETTLE_TIMEOUT=60

log() { printf 'syncthing-baseline: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

# ---------------------------------------------------------------------------------------
# Helpers that run inside a lab host (`lab exec HOST bash baseline.sh __NAME …`). They talk
# HTTP/1.0 to that host's Syncthing over bash's /dev/tcp (loopback of the host's namespace),
# so polling forks nothing. ST_API_KEY comes from the environment.

# Microseconds since the epoch, without a fork.
clock() {
  local t=$EPOCHREALTIME
  NOW_US=$((${t%.*} * 1000000 + 10#${t#*.}))
}

# Sleeps SECONDS without a fork: a read that times out on a pipe nobody writes to.
nap() {
  [[ -n ${NAP_FD:-} ]] || exec {NAP_FD}<> <(:)
  read -r -t "$1" -u "$NAP_FD" _ || true
}

# api METHOD PATH [TIMEOUT [JSON]]: sets HTTP_STATUS and HTTP_BODY; returns 1 when there is
# no answer (not listening yet, or no complete answer within TIMEOUT seconds).
api() {
  local method=$1 path=$2 timeout=${3:-10} body=${4:-} fd response="" rc=0
  HTTP_STATUS=0 HTTP_BODY=""
  { exec {fd}<>"/dev/tcp/127.0.0.1/$GUI_PORT"; } 2>/dev/null || return 1
  printf '%s %s HTTP/1.0\r\nHost: 127.0.0.1\r\nX-API-Key: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s' \
    "$method" "$path" "$ST_API_KEY" "${#body}" "$body" >&"$fd"
  IFS= read -r -d '' -t "$timeout" -u "$fd" response || rc=$?
  exec {fd}>&-
  ((rc <= 128)) || return 1 # timed out
  [[ $response =~ ^HTTP/[0-9.]+\ ([0-9]+) ]] || return 1
  HTTP_STATUS=${BASH_REMATCH[1]}
  HTTP_BODY=${response#*$'\r\n\r\n'}
}

# json_field KEY: the number, true/false or string value of "KEY" in HTTP_BODY → FIELD.
json_field() {
  local re="\"$1\"[[:space:]]*:[[:space:]]*(\"[^\"]*\"|-?[0-9]+|true|false)"
  [[ $HTTP_BODY =~ $re ]] || return 1
  FIELD=${BASH_REMATCH[1]}
  FIELD=${FIELD//\"/}
}

# __api METHOD PATH [JSON]: one call, the body on stdout; fails on anything but 200.
helper_api() {
  api "$1" "$2" 30 "${3:-}" || { echo "no answer from syncthing's REST API" >&2; return 1; }
  [[ $HTTP_STATUS == 200 ]] || { echo "HTTP $HTTP_STATUS for $1 $2: $HTTP_BODY" >&2; return 1; }
  printf '%s\n' "$HTTP_BODY"
}

# __ready PEER_ID TIMEOUT: waits until the REST API answers, the folder is idle and the
# peer is connected.
helper_ready() {
  local peer=$1 timeout=$2 deadline state="" connected=0
  clock; deadline=$((NOW_US + timeout * 1000000))
  while :; do
    state="" connected=0
    if api GET "/rest/db/status?folder=$FOLDER_ID" 5 && [[ $HTTP_STATUS == 200 ]] && json_field state; then
      state=$FIELD
    fi
    if [[ $state == idle ]] && api GET /rest/system/connections 5 && [[ $HTTP_STATUS == 200 ]]; then
      local re="\"$peer\"[[:space:]]*:[[:space:]]*\\{[^}]*\"connected\"[[:space:]]*:[[:space:]]*true"
      [[ $HTTP_BODY =~ $re ]] && connected=1
    fi
    ((connected)) && return 0
    clock
    ((NOW_US < deadline)) || { echo "not ready after ${timeout}s (folder state '${state}', peer connected: $connected)" >&2; return 1; }
    nap 0.1
  done
}

# __scan [SUB]: forces a scan of the folder (or of SUB in it); prints the start time (µs).
# Syncthing answers when the scan is done.
helper_scan() {
  local path="/rest/db/scan?folder=$FOLDER_ID" start
  [[ -n ${1:-} ]] && path+="&sub=$1"
  clock; start=$NOW_US
  api POST "$path" "$INITIAL_TIMEOUT" || { echo "no answer to POST $path" >&2; return 1; }
  [[ $HTTP_STATUS == 200 ]] || { echo "HTTP $HTTP_STATUS for POST $path: $HTTP_BODY" >&2; return 1; }
  echo "$start"
}

# __complete N TIMEOUT: polls the folder's status until it needs nothing and holds N files;
# prints the time (µs) of the first poll that saw it, and the number of polls.
helper_complete() {
  local files=$1 timeout=$2 deadline polls=0 need="" local_files="" global=""
  clock; deadline=$((NOW_US + timeout * 1000000))
  while :; do
    polls=$((polls + 1))
    if api GET "/rest/db/status?folder=$FOLDER_ID" 10 && [[ $HTTP_STATUS == 200 ]]; then
      clock
      json_field needFiles && need=$FIELD
      json_field localFiles && local_files=$FIELD
      json_field globalFiles && global=$FIELD
      if [[ $need == 0 && $local_files == "$files" && $global == "$files" ]]; then
        echo "$NOW_US $polls"
        return 0
      fi
    fi
    clock
    if ((NOW_US >= deadline)); then
      echo "b not complete after ${timeout}s: needFiles=$need localFiles=$local_files globalFiles=$global (want 0, $files, $files)" >&2
      return 1
    fi
    nap "$POLL_SECONDS"
  done
}

# __change SUB RECEIVER_FILE MARKER TIMEOUT (on a): forces the scan of SUB, then reads the
# receiver's copy from disk until its first line is MARKER; prints the elapsed µs, and the
# µs until a's scan had finished (when its POST was answered).
helper_change() {
  local sub=$1 file=$2 marker=$3 timeout=$4 start deadline line="" scanned
  local path="/rest/db/scan?folder=$FOLDER_ID&sub=$sub"
  clock; start=$NOW_US; deadline=$((start + timeout * 1000000))
  api POST "$path" "$timeout" || { echo "no answer to POST $path" >&2; return 1; }
  [[ $HTTP_STATUS == 200 ]] || { echo "HTTP $HTTP_STATUS for POST $path: $HTTP_BODY" >&2; return 1; }
  clock; scanned=$((NOW_US - start))
  wait_for_marker "$file" "$marker" "$deadline" || { echo "b did not get the changed $sub within ${timeout}s" >&2; return 1; }
  echo "$((NOW_US - start)) $scanned"
}

# wait_for_marker FILE MARKER DEADLINE_US: reads FILE from disk until its first line is
# MARKER (NOW_US is then the time it was seen); 1 at the deadline.
wait_for_marker() {
  local file=$1 marker=$2 deadline=$3 line
  while :; do
    line=""
    { IFS= read -r line <"$file"; } 2>/dev/null || true
    clock
    [[ $line == "$marker" ]] && return 0
    ((NOW_US < deadline)) || return 1
    nap "$CONTENT_POLL_SECONDS"
  done
}

# __settled PEER_ID TIMEOUT (on a): waits until a knows that the peer has everything
# (the peer's index updates are back), so the byte counts include them.
helper_settled() {
  local peer=$1 timeout=$2 deadline completion="" need=""
  clock; deadline=$((NOW_US + timeout * 1000000))
  while :; do
    if api GET "/rest/db/completion?folder=$FOLDER_ID&device=$peer" 10 && [[ $HTTP_STATUS == 200 ]]; then
      json_field completion && completion=$FIELD
      json_field needItems && need=$FIELD
      [[ $completion == 100 && $need == 0 ]] && return 0
    fi
    clock
    ((NOW_US < deadline)) || { echo "a does not see b complete after ${timeout}s (completion $completion, needItems $need)" >&2; return 1; }
    nap 0.02
  done
}

case ${1:-} in
  __api) shift; helper_api "$@"; exit ;;
  __ready) shift; helper_ready "$@"; exit ;;
  __scan) shift; helper_scan "$@"; exit ;;
  __complete) shift; helper_complete "$@"; exit ;;
  __change) shift; helper_change "$@"; exit ;;
  __settled) shift; helper_settled "$@"; exit ;;
esac

# ---------------------------------------------------------------------------------------
# The benchmark itself, in the root namespace: it only starts things through `lab exec`.

usage() {
  sed -n '6,7p' "$SELF" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

LAB="" FILES="" SIZE="" WORKDIR="" CHANGES=5 WATCHER_CHANGES=0
while (($#)); do
  case $1 in
    --lab) LAB=${2:-}; shift 2 || usage ;;
    --files) FILES=${2:-}; shift 2 || usage ;;
    --size) SIZE=${2:-}; shift 2 || usage ;;
    --workdir) WORKDIR=${2:-}; shift 2 || usage ;;
    --changes) CHANGES=${2:-}; shift 2 || usage ;;
    --watcher-changes) WATCHER_CHANGES=${2:-}; shift 2 || usage ;;
    -h | --help) usage ;;
    *) log "unknown argument: $1"; usage ;;
  esac
done
[[ -n $LAB && -n $FILES && -n $SIZE && -n $WORKDIR ]] || usage
[[ $FILES =~ ^[1-9][0-9]{0,6}$ ]] || die "--files must be 1 to 9999999"
[[ $SIZE =~ ^[1-9][0-9]{0,8}$ ]] || die "--size must be a positive number of bytes"
[[ $CHANGES =~ ^[1-9][0-9]?$ ]] || die "--changes must be 1 to 99"
[[ $WATCHER_CHANGES =~ ^[0-9]$ ]] || die "--watcher-changes must be 0 to 9"
[[ -x $LAB ]] || die "--lab $LAB is not an executable lab script"
[[ $(id -u) -eq 0 ]] || die "needs root (the lab's network namespaces)"
LAB=$(readlink -f "$LAB")

LAB_DIR=${MEMO_PEER_LAB_DIR:-/tmp/memo-peer-lab}
[[ -f $LAB_DIR/hosts ]] || die "no $LAB_DIR/hosts: bring the lab up first (lab up 2)"
IP_A="" IP_B=""
while read -r host address _; do
  case $host in a) IP_A=$address ;; b) IP_B=$address ;; esac
done <"$LAB_DIR/hosts"
[[ -n $IP_A && -n $IP_B ]] || die "the lab in $LAB_DIR has no hosts a and b"

# Never run anything of Syncthing's in the root namespace: make sure `lab exec` really
# enters another network namespace before the first start.
root_net=$(readlink /proc/self/ns/net)
for host in a b; do
  host_net=$("$LAB" exec "$host" readlink /proc/self/ns/net) || die "lab exec $host failed: is the lab up?"
  [[ $host_net != "$root_net" ]] || die "lab host $host is in the root network namespace"
done

if ! command -v syncthing >/dev/null 2>&1; then
  log "installing syncthing (run scripts/deps.sh beforehand to keep this out of the timings)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -qq --no-install-recommends syncthing >&2 ||
    { apt-get update -qq >&2 && apt-get install -y -qq --no-install-recommends syncthing >&2; } ||
    die "could not install syncthing"
fi
VERSION=$("$LAB" exec a syncthing --version | awk '{print $2; exit}')

# Everything this run makes lives in one fresh directory under --workdir.
created_workdir=0
if [[ ! -d $WORKDIR ]]; then
  mkdir -p "$WORKDIR"
  created_workdir=1
fi
RUN=$(mktemp -d "$(readlink -f "$WORKDIR")/syncthing-baseline.XXXXXX")
chmod 755 "$RUN"
PIDS=()     # the two syncthing processes started here (monitors)
HELPERS=()  # background helpers (the status poller)

# The syncthing child of PID (Syncthing's worker process), if there is one.
worker_of() {
  local task child comm kids
  for task in /proc/"$1"/task/*/children; do
    kids=()
    { read -ra kids <"$task"; } 2>/dev/null || true
    for child in "${kids[@]}"; do
      comm=""
      { read -r comm <"/proc/$child/comm"; } 2>/dev/null || true
      if [[ $comm == syncthing ]]; then
        echo "$child"
        return 0
      fi
    done
  done
}

cleanup() {
  local rc=$? pid all=()
  trap - EXIT INT TERM
  set +e # a process that is already gone must not end the clean-up
  # The monitors and their workers (children of processes started here), by PID.
  for pid in "${PIDS[@]}"; do all+=("$(worker_of "$pid")" "$pid"); done
  all+=("${HELPERS[@]}")
  for pid in "${all[@]}"; do [[ -n $pid ]] && kill -TERM "$pid" 2>/dev/null; done
  for pid in "${all[@]}"; do
    [[ -n $pid ]] || continue
    for _ in $(seq 1 100); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
      log "process $pid did not stop within 10 s: killing it"
      kill -KILL "$pid" 2>/dev/null
    fi
    wait "$pid" 2>/dev/null
  done
  if ((rc != 0)); then
    for host in a b; do
      [[ -f $RUN/$host.log ]] && { log "last lines of $host's syncthing log:"; tail -n 15 "$RUN/$host.log" >&2; }
    done
  fi
  rm -rf -- "$RUN"
  ((created_workdir)) && rmdir -- "$WORKDIR" 2>/dev/null
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

ST_API_KEY=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
export ST_API_KEY

# Keys and certificates, generated inside the lab hosts (no port probing, no sockets in the
# root namespace), then a configuration written from scratch before the first start.
declare -A ID IP=([a]=$IP_A [b]=$IP_B)
for host in a b; do
  mkdir -p "$RUN/$host/home" "$RUN/$host/folder/.stfolder"
  "$LAB" exec "$host" syncthing generate --home "$RUN/$host/home" --no-default-folder \
    --skip-port-probing >"$RUN/$host.log" 2>&1 || { cat "$RUN/$host.log" >&2; die "syncthing generate failed on $host"; }
  id=$(grep -o -m1 '<device id="[A-Z0-9-]*"' "$RUN/$host/home/config.xml" | cut -d'"' -f2)
  [[ $id =~ ^[A-Z0-9]{7}(-[A-Z0-9]{7}){7}$ ]] || die "no device ID in $host's generated config"
  ID[$host]=$id
done

write_config() {
  local self=$1 peer=$2
  cat <<XML
<configuration version="36">
    <folder id="$FOLDER_ID" label="$FOLDER_ID" path="$RUN/$self/folder" type="sendreceive" rescanIntervalS="86400" fsWatcherEnabled="false" fsWatcherDelayS="10" ignorePerms="false" autoNormalize="true">
        <filesystemType>basic</filesystemType>
        <device id="${ID[a]}" introducedBy=""><encryptionPassword></encryptionPassword></device>
        <device id="${ID[b]}" introducedBy=""><encryptionPassword></encryptionPassword></device>
        <minDiskFree unit="%">1</minDiskFree>
        <versioning><cleanupIntervalS>3600</cleanupIntervalS><fsPath></fsPath><fsType>basic</fsType></versioning>
        <copiers>0</copiers>
        <pullerMaxPendingKiB>0</pullerMaxPendingKiB>
        <hashers>0</hashers>
        <order>random</order>
        <ignoreDelete>false</ignoreDelete>
        <scanProgressIntervalS>0</scanProgressIntervalS>
        <pullerPauseS>0</pullerPauseS>
        <maxConflicts>10</maxConflicts>
        <disableSparseFiles>false</disableSparseFiles>
        <disableTempIndexes>false</disableTempIndexes>
        <paused>false</paused>
        <weakHashThresholdPct>25</weakHashThresholdPct>
        <markerName>.stfolder</markerName>
        <copyOwnershipFromParent>false</copyOwnershipFromParent>
        <modTimeWindowS>0</modTimeWindowS>
        <maxConcurrentWrites>2</maxConcurrentWrites>
        <disableFsync>false</disableFsync>
        <blockPullOrder>standard</blockPullOrder>
        <copyRangeMethod>standard</copyRangeMethod>
        <caseSensitiveFS>true</caseSensitiveFS>
        <junctionsAsDirs>false</junctionsAsDirs>
    </folder>
    <device id="${ID[$self]}" name="$self" compression="metadata" introducer="false" skipIntroductionRemovals="false" introducedBy="">
        <address>tcp://${IP[$self]}:$SYNC_PORT</address>
        <paused>false</paused>
        <autoAcceptFolders>false</autoAcceptFolders>
    </device>
    <device id="${ID[$peer]}" name="$peer" compression="metadata" introducer="false" skipIntroductionRemovals="false" introducedBy="">
        <address>tcp://${IP[$peer]}:$SYNC_PORT</address>
        <paused>false</paused>
        <autoAcceptFolders>false</autoAcceptFolders>
    </device>
    <gui enabled="true" tls="false" debugging="false">
        <address>127.0.0.1:$GUI_PORT</address>
        <apikey>$ST_API_KEY</apikey>
        <theme>default</theme>
    </gui>
    <options>
        <listenAddress>tcp://${IP[$self]}:$SYNC_PORT</listenAddress>
        <globalAnnounceServer>default</globalAnnounceServer>
        <globalAnnounceEnabled>false</globalAnnounceEnabled>
        <localAnnounceEnabled>false</localAnnounceEnabled>
        <localAnnouncePort>21027</localAnnouncePort>
        <localAnnounceMCAddr>[ff12::8384]:21027</localAnnounceMCAddr>
        <maxSendKbps>0</maxSendKbps>
        <maxRecvKbps>0</maxRecvKbps>
        <reconnectionIntervalS>1</reconnectionIntervalS>
        <relaysEnabled>false</relaysEnabled>
        <relayReconnectIntervalM>10</relayReconnectIntervalM>
        <startBrowser>false</startBrowser>
        <natEnabled>false</natEnabled>
        <urAccepted>-1</urAccepted>
        <urSeen>3</urSeen>
        <urUniqueID></urUniqueID>
        <restartOnWakeup>false</restartOnWakeup>
        <autoUpgradeIntervalH>0</autoUpgradeIntervalH>
        <upgradeToPreReleases>false</upgradeToPreReleases>
        <keepTemporariesH>24</keepTemporariesH>
        <cacheIgnoredFiles>false</cacheIgnoredFiles>
        <progressUpdateIntervalS>5</progressUpdateIntervalS>
        <limitBandwidthInLan>false</limitBandwidthInLan>
        <minHomeDiskFree unit="%">1</minHomeDiskFree>
        <overwriteRemoteDeviceNamesOnConnect>false</overwriteRemoteDeviceNamesOnConnect>
        <tempIndexMinBlocks>10</tempIndexMinBlocks>
        <trafficClass>0</trafficClass>
        <setLowPriority>false</setLowPriority>
        <maxFolderConcurrency>0</maxFolderConcurrency>
        <crashReportingEnabled>false</crashReportingEnabled>
        <stunKeepaliveStartS>0</stunKeepaliveStartS>
        <stunKeepaliveMinS>0</stunKeepaliveMinS>
        <stunServer></stunServer>
        <databaseTuning>auto</databaseTuning>
        <maxConcurrentIncomingRequestKiB>0</maxConcurrentIncomingRequestKiB>
        <announceLANAddresses>false</announceLANAddresses>
        <sendFullIndexOnUpgrade>false</sendFullIndexOnUpgrade>
        <connectionLimitEnough>0</connectionLimitEnough>
        <connectionLimitMax>0</connectionLimitMax>
        <insecureAllowOldTLSVersions>false</insecureAllowOldTLSVersions>
    </options>
</configuration>
XML
}

write_config a b >"$RUN/a/home/config.xml"
write_config b a >"$RUN/b/home/config.xml"
for host in a b; do
  config=$RUN/$host/home/config.xml
  for off in localAnnounceEnabled globalAnnounceEnabled relaysEnabled natEnabled crashReportingEnabled \
    announceLANAddresses startBrowser; do
    grep -q "<$off>false</$off>" "$config" || die "$host's config does not turn $off off"
  done
  grep -q '<urAccepted>-1</urAccepted>' "$config" || die "$host's config does not decline usage reports"
  [[ $(grep -c '<listenAddress>' "$config") == 1 ]] || die "$host's config has more than one listen address"
done

# Start. Syncthing 1.19 always runs as a monitor process and a worker child that it
# starts (--no-restart only stops the monitor from restarting the worker); `lab exec` execs
# `ip netns exec`, which execs env, which execs syncthing, so $! is the monitor.
for host in a b; do
  STNORESTART=1 STNOUPGRADE=1 "$LAB" exec "$host" syncthing serve --home "$RUN/$host/home" \
    --no-browser --no-restart --no-upgrade --no-default-folder --logflags=3 >>"$RUN/$host.log" 2>&1 &
  PIDS+=($!)
done
declare -A MONITOR WORKER
for i in 0 1; do
  host=$([[ $i == 0 ]] && echo a || echo b)
  pid=${PIDS[$i]} worker=""
  for _ in $(seq 1 200); do
    kill -0 "$pid" 2>/dev/null || die "syncthing on $host exited at start"
    if [[ $(cat "/proc/$pid/comm" 2>/dev/null) == syncthing ]]; then
      worker=$(worker_of "$pid")
      [[ -n $worker ]] && break
    fi
    sleep 0.05
  done
  [[ -n $worker ]] || die "syncthing on $host (pid $pid) did not start its worker process"
  MONITOR[$host]=$pid WORKER[$host]=$worker
done
log "syncthing $VERSION: a=${ID[a]:0:7} (pids ${MONITOR[a]}/${WORKER[a]}, $IP_A), b=${ID[b]:0:7} (pids ${MONITOR[b]}/${WORKER[b]}, $IP_B)"

# in_host HOST HELPER ARGS…: runs one of the helpers above inside a lab host; its output
# ends up in OUT. It runs in the background and is waited for, so that a signal to this
# script is handled at once (the clean-up stops it with the rest).
start_in_host() {
  local host=$1 out=$2
  shift 2
  "$LAB" exec "$host" bash "$SELF" "$@" >"$out" &
  HELPERS+=($!)
}
finish_in_host() {
  local pid=$1 rc=0 kept=() other
  wait "$pid" || rc=$?
  for other in "${HELPERS[@]}"; do [[ $other == "$pid" ]] || kept+=("$other"); done
  HELPERS=("${kept[@]}")
  return "$rc"
}
in_host() {
  local rc=0
  start_in_host "$1" "$RUN/helper.out" "${@:2}"
  finish_in_host "${HELPERS[-1]}" || rc=$?
  OUT=$(<"$RUN/helper.out")
  return "$rc"
}

in_host a __ready "${ID[b]}" "$START_TIMEOUT" || die "a did not start or connect to b"
in_host b __ready "${ID[a]}" "$START_TIMEOUT" || die "b did not start or connect to a"
# What the running instances really use (after any config migration).
in_host a __api GET /rest/config/options || die "cannot read a's options"
options=$OUT
for off in localAnnounceEnabled globalAnnounceEnabled relaysEnabled natEnabled; do
  [[ $options =~ \"$off\"[[:space:]]*:[[:space:]]*false ]] || die "a runs with $off on"
done
log "connected; discovery, relays and NAT traversal off"

link_bytes() {
  local rx tx
  { read -r rx; read -r tx; } < <("$LAB" exec a cat /sys/class/net/eth0/statistics/rx_bytes /sys/class/net/eth0/statistics/tx_bytes)
  echo $((rx + tx))
}
seconds() { printf '%d.%06d' $(($1 / 1000000)) $(($1 % 1000000)); }

# Initial sync: the files are written first (not timed), a's scan is forced, b's status
# is polled from b's namespace meanwhile.
log "writing $FILES files of $SIZE bytes on a"
head -c $((FILES * SIZE)) /dev/urandom | split -b "$SIZE" -a 7 -d - "$RUN/a/folder/f"
[[ $(find "$RUN/a/folder" -maxdepth 1 -type f | wc -l) == "$FILES" ]] || die "could not write the files"

bytes_before=$(link_bytes)
start_in_host b "$RUN/complete.out" __complete "$FILES" "$INITIAL_TIMEOUT"
poller=${HELPERS[-1]}
in_host a __scan || die "a's scan failed"
scan_start=$OUT
finish_in_host "$poller" || die "initial sync: timed out or failed after ${INITIAL_TIMEOUT}s"
read -r complete_at polls <"$RUN/complete.out"
initial_us=$((complete_at - scan_start))
in_host a __settled "${ID[b]}" "$SETTLE_TIMEOUT" || die "initial sync: a never saw b complete"
initial_bytes=$(($(link_bytes) - bytes_before))
log "initial: $(seconds "$initial_us") s ($polls polls), $initial_bytes bytes on the link"

on_b=$(find "$RUN/b/folder" -maxdepth 1 -type f -name 'f*' | wc -l)
[[ $on_b == "$FILES" ]] || die "b has $on_b of the $FILES files on disk"
diff -rq --exclude=.stfolder "$RUN/a/folder" "$RUN/b/folder" >&2 || die "b's files differ from a's"

# Changes, one at a time: rewrite one file (same size when SIZE allows), force the scan of
# that file, read b's copy until it has the new first line, then wait until a has b's
# index back (for the byte count). Each change is its own sample; the figures are medians.
change_us_all=() change_bytes_all=()
for ((k = 0; k < CHANGES; k++)); do
  # A quiet second first: after sending an index update Syncthing waits 250 ms before it
  # sends the next one (to batch bursts), so back-to-back changes would measure that wait.
  sleep 1
  name=$(printf 'f%07d' $((k % FILES)))
  marker="memo-peer change $k $EPOCHREALTIME"
  pad=$((SIZE > ${#marker} + 1 ? SIZE - ${#marker} - 1 : 0))
  { printf '%s\n' "$marker"; head -c "$pad" /dev/urandom; } >"$RUN/a/folder/$name"
  bytes_before=$(link_bytes)
  in_host a __change "$name" "$RUN/b/folder/$name" "$marker" "$CHANGE_TIMEOUT" ||
    die "change $((k + 1)): b did not get the new content within ${CHANGE_TIMEOUT}s"
  read -r us scanned_us <<<"$OUT"
  in_host b __complete "$FILES" "$CHANGE_TIMEOUT" || die "change $((k + 1)): b's status is not complete"
  in_host a __settled "${ID[b]}" "$SETTLE_TIMEOUT" || die "change $((k + 1)): a never saw b complete"
  change_bytes_all+=($(($(link_bytes) - bytes_before)))
  cmp -s "$RUN/a/folder/$name" "$RUN/b/folder/$name" || die "change $((k + 1)): b's copy differs from a's"
  change_us_all+=("$us")
  log "change $((k + 1))/$CHANGES: $(seconds "$us") s (a's scan answered after $(seconds "$scanned_us") s), ${change_bytes_all[-1]} bytes on the link"
done
# With its default watcher settings (fsWatcherEnabled, fsWatcherDelayS 10), as a person
# runs it: the folder's config changed through REST, then each change is only written on a
# and timed from the write until b's copy has it (no forced scan).
watcher_samples=""
if ((WATCHER_CHANGES > 0)); then
  in_host a __api PATCH "/rest/config/folders/$FOLDER_ID" '{"fsWatcherEnabled":true,"fsWatcherDelayS":10}' >/dev/null ||
    die "could not turn a's watcher on: $OUT"
  in_host a __ready "${ID[b]}" "$START_TIMEOUT" || die "a's folder did not come back after the watcher was turned on"
  sleep 2 # the watcher's inotify setup
  for ((k = 0; k < WATCHER_CHANGES; k++)); do
    sleep 1
    name=$(printf 'f%07d' $(((CHANGES + k) % FILES)))
    marker="memo-peer watched change $k $EPOCHREALTIME"
    pad=$((SIZE > ${#marker} + 1 ? SIZE - ${#marker} - 1 : 0))
    clock; start=$NOW_US
    { printf '%s\n' "$marker"; head -c "$pad" /dev/urandom; } >"$RUN/a/folder/$name"
    wait_for_marker "$RUN/b/folder/$name" "$marker" $((start + CHANGE_TIMEOUT * 1000000)) ||
      die "watched change $((k + 1)): b did not get the new content within ${CHANGE_TIMEOUT}s"
    watcher_samples+="${watcher_samples:+,}$(seconds $((NOW_US - start)))"
    log "watched change $((k + 1))/$WATCHER_CHANGES: $(seconds $((NOW_US - start))) s (default watcher, no forced scan)"
    in_host b __complete "$FILES" "$CHANGE_TIMEOUT" || die "watched change $((k + 1)): b's status is not complete"
  done
fi

median() { printf '%s\n' "$@" | sort -n | sed -n "$(($# / 2 + 1))p"; }
change_us=$(median "${change_us_all[@]}")
change_bytes=$(median "${change_bytes_all[@]}")
change_samples=""
for us in "${change_us_all[@]}"; do change_samples+="${change_samples:+,}$(seconds "$us")"; done

# Peak memory: VmHWM of b's worker (it holds the index and does the pulling) and, apart,
# of its monitor (a small supervisor); the worker must still be the one seen at start.
[[ $(worker_of "${MONITOR[b]}") == "${WORKER[b]}" ]] || die "b's syncthing worker was restarted during the run"
hwm() { awk '/^VmHWM:/ {print $2}' "/proc/$1/status"; }
rss_b=$(hwm "${WORKER[b]}")
rss_b_monitor=$(hwm "${MONITOR[b]}")
rss_a=$(hwm "${WORKER[a]}")
printf '{"tool":"syncthing","version":"%s","files":%d,"size":%d,"initial_seconds":%s,"initial_bytes":%d,"change_seconds":%s,"change_bytes":%d,"change_seconds_samples":[%s],"watcher_change_seconds_samples":[%s],"receiver_peak_rss_kib":%d,"receiver_monitor_peak_rss_kib":%d,"sender_peak_rss_kib":%d,"rss_process":"worker (the child of the syncthing monitor process); the monitor is apart"}\n' \
  "$VERSION" "$FILES" "$SIZE" "$(seconds "$initial_us")" "$initial_bytes" "$(seconds "$change_us")" \
  "$change_bytes" "$change_samples" "$watcher_samples" "$rss_b" "$rss_b_monitor" "$rss_a"
