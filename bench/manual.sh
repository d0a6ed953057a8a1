#!/usr/bin/env bash
# bench/manual.sh: hand-run benchmarks of sandfs against anchors measured in
# the same run on the same files, printed as a markdown table of medians
# (figure | sandfs | anchor | ratio = sandfs/anchor).
#
#   1. FUSE mirror (sandfs serve --mount) vs native and vs go-fuse's loopback
#      example: sequential write (dd bs=1M conv=fsync), cold and warm
#      sequential read, warm lstat loop, create+unlink, readdir; sandfs with
#      passthrough (default), --no-passthrough, and --mount-cache 1s.
#   2. GET /v2/fs/download vs nginx (sendfile on), warm cache, loopback curl.
#   3. GET /v2/fs/list?recursive=true (100,000-entry tree, capped at 10,000
#      → truncated; and a 10,000-entry tree) vs ls -lR; GET /v1/fs/entries of
#      a 10,000-entry directory vs ls -l.
#   4. PUT /v1/fs/file (curl -T) vs dd conv=fsync of the same bytes, and the
#      daemon's peak RSS (VmHWM, reset through /proc/PID/clear_refs).
#
# Needs root (drop_caches, FUSE), fusermount3, curl, nginx, go. Every
# measurement is repeated REPS times, alternating sandfs and anchor; the
# table quotes medians. Env: REPS (3), SIZE_MB (512), W (/tmp/sandfs-manual),
# BIN (/tmp/bench-bin), PORT (7461), NGPORT (7462), STAT_N (100000),
# CU_N (5000).
set -euo pipefail

REPS=${REPS:-3}
SIZE_MB=${SIZE_MB:-512}
W=${W:-/tmp/sandfs-manual}
BIN=${BIN:-/tmp/bench-bin}
PORT=${PORT:-7461}
NGPORT=${NGPORT:-7462}
STAT_N=${STAT_N:-100000}  # lstats per stat measurement
CU_N=${CU_N:-5000}        # files per create+unlink measurement
REPO=$(cd "$(dirname "$0")/.." && pwd)
R=$W/root M=$W/mnt L=$W/lb
URL=http://127.0.0.1:$PORT

log() { echo "# $*" >&2; }
now() { date +%s.%N; }
[ "$(id -u)" = 0 ] || { echo "needs root" >&2; exit 1; }

# ---- build ------------------------------------------------------------------
mkdir -p "$BIN" "$W"
(cd "$REPO" && go build -o "$BIN/sandfs" ./cmd/sandfs)
(cd "$(go env GOMODCACHE)/github.com/hanwen/go-fuse/v2@v2.12.1/example/loopback" && go build -o "$BIN/loopback" .)
mkdir -p "$W/fsops"
cat >"$W/fsops/go.mod" <<'EOF'
module fsops
go 1.22
EOF
cat >"$W/fsops/main.go" <<'EOF'
// fsops stat FILE N: ns per lstat; fsops create DIR N: seconds to create N
// empty files then unlink them; fsops readdir DIR N: ms per full readdir.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

func main() {
	mode, p := os.Args[1], os.Args[2]
	n, _ := strconv.Atoi(os.Args[3])
	switch mode {
	case "stat":
		var st syscall.Stat_t
		t := time.Now()
		for i := 0; i < n; i++ {
			if err := syscall.Lstat(p, &st); err != nil {
				panic(err)
			}
		}
		fmt.Printf("%.0f\n", float64(time.Since(t).Nanoseconds())/float64(n))
	case "create":
		d := filepath.Join(p, fmt.Sprintf("cu.%d", os.Getpid()))
		if err := os.Mkdir(d, 0o755); err != nil {
			panic(err)
		}
		t := time.Now()
		for i := 0; i < n; i++ {
			fd, err := syscall.Open(filepath.Join(d, "f"+strconv.Itoa(i)), syscall.O_CREAT|syscall.O_WRONLY|syscall.O_EXCL, 0o644)
			if err != nil {
				panic(err)
			}
			syscall.Close(fd)
		}
		for i := 0; i < n; i++ {
			if err := syscall.Unlink(filepath.Join(d, "f"+strconv.Itoa(i))); err != nil {
				panic(err)
			}
		}
		fmt.Printf("%.4f\n", time.Since(t).Seconds())
		os.Remove(d)
	case "readdir":
		t := time.Now()
		for i := 0; i < n; i++ {
			f, err := os.Open(p)
			if err != nil {
				panic(err)
			}
			if _, err := f.Readdirnames(-1); err != nil {
				panic(err)
			}
			f.Close()
		}
		fmt.Printf("%.3f\n", float64(time.Since(t).Microseconds())/1000/float64(n))
	}
}
EOF
(cd "$W/fsops" && go build -o "$BIN/fsops" .)

# ---- results ----------------------------------------------------------------
declare -A RES
add() { RES[$1]+="$2 "; log "$1 = $2"; }
med() { # median of the values recorded under $1
	local v=${RES[$1]:-}
	[ -n "$v" ] || { echo NA; return; }
	printf '%s\n' $v | sort -g | awk '{a[NR]=$1} END {m=(NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2; printf "%.6g\n", m}'
}
row() { # figure sandfs-key anchor-key
	local s a
	s=$(med "$2") a=$(med "$3")
	printf '| %s | %s | %s | %s |\n' "$1" "$s" "$a" \
		"$(awk -v s="$s" -v a="$a" 'BEGIN{ if (s=="NA"||a=="NA"||a==0) print "NA"; else printf "%.2f", s/a }')"
}
rate() { awk -v mb="$SIZE_MB" -v t0="$1" -v t1="$2" 'BEGIN{printf "%.1f", mb/(t1-t0)}'; }
since() { awk -v t0="$1" -v t1="$(now)" 'BEGIN{printf "%.4f", t1-t0}'; }

# ---- processes (killed by PID on exit) ----------------------------------------
SPID= LPID= NPID=
wait_health() {
	for _ in $(seq 600); do
		curl -sf "$URL/health" >/dev/null 2>&1 && return 0
		kill -0 "$SPID" 2>/dev/null || { cat "$W/sandfs.log" >&2; return 1; }
		sleep 0.05
	done
	return 1
}
start_sandfs() { # extra flags...
	"$BIN/sandfs" serve --root "$R" --listen "127.0.0.1:$PORT" "$@" >"$W/sandfs.log" 2>&1 &
	SPID=$!
	wait_health
}
stop_sandfs() {
	[ -n "$SPID" ] || return 0
	kill -TERM "$SPID" 2>/dev/null || true
	wait "$SPID" 2>/dev/null || true
	SPID=
	if mountpoint -q "$M"; then fusermount3 -u "$M" || true; fi
}
start_lb() {
	"$BIN/loopback" -q "$L" "$R" >"$W/loopback.log" 2>&1 &
	LPID=$!
	for _ in $(seq 200); do mountpoint -q "$L" && return 0; sleep 0.05; done
	return 1
}
stop_lb() {
	[ -n "$LPID" ] || return 0
	fusermount3 -u "$L" || true
	wait "$LPID" 2>/dev/null || true
	LPID=
}
start_nginx() {
	mkdir -p "$W/nginx"
	cat >"$W/nginx/nginx.conf" <<EOF
user root;
worker_processes 1;
daemon off;
pid $W/nginx/nginx.pid;
error_log $W/nginx/error.log;
events { worker_connections 64; }
http {
	access_log off;
	sendfile on;
	server { listen 127.0.0.1:$NGPORT; root $R; location / { } }
}
EOF
	nginx -p "$W/nginx" -c "$W/nginx/nginx.conf" &
	NPID=$!
	for _ in $(seq 200); do curl -sf -o /dev/null "http://127.0.0.1:$NGPORT/stat1" && return 0; sleep 0.05; done
	return 1
}
stop_nginx() {
	[ -n "$NPID" ] || return 0
	kill -TERM "$NPID" 2>/dev/null || true
	wait "$NPID" 2>/dev/null || true
	NPID=
}
cleanup() { stop_sandfs; stop_lb; stop_nginx; }
trap cleanup EXIT

# ---- fixtures (made natively, before any daemon runs) -------------------------
mkdir -p "$R" "$M" "$L"
if [ ! -f "$R/big" ] || [ "$(stat -c %s "$R/big")" != $((SIZE_MB << 20)) ]; then
	log "fixtures: big file"
	head -c $((SIZE_MB << 20)) /dev/urandom >"$R/big"
fi
cp "$R/big" "$W/src.bin"
echo hello >"$R/stat1"
mkfiles() { # dir n
	[ -d "$1" ] && return 0
	mkdir -p "$1.tmp" && (cd "$1.tmp" && seq -f 'f%05g' 1 "$2" | xargs touch) && mv "$1.tmp" "$1"
}
mktree() { # dir ndirs nfiles
	[ -d "$1" ] && return 0
	mkdir -p "$1.tmp"
	for d in $(seq -f 'd%04g' 1 "$2"); do mkdir "$1.tmp/$d"; done
	(cd "$1.tmp" && for d in d*; do (cd "$d" && seq -f 'f%03g' 1 "$3" | xargs touch); done)
	mv "$1.tmp" "$1"
}
log "fixtures: directories and trees"
mkfiles "$R/dir5k" 5000
mkfiles "$R/flat10k" 10000
mktree "$R/tree" 1000 100    # 1,000 + 100,000 entries
mktree "$R/tree10k" 100 99   # 100 + 9,900 = 10,000 entries
sync

# ---- 1. FUSE mirror ------------------------------------------------------------
fs_io() { # key dir
	local t0
	rm -f "$2/w.bin"; sync
	t0=$(now); dd if=/dev/zero of="$2/w.bin" bs=1M count="$SIZE_MB" conv=fsync status=none
	add "$1.write" "$(rate "$t0" "$(now)")"
	rm -f "$2/w.bin"; sync
	echo 3 >/proc/sys/vm/drop_caches
	t0=$(now); dd if="$2/big" of=/dev/null bs=1M status=none
	add "$1.cold" "$(rate "$t0" "$(now)")"
	dd if="$2/big" of=/dev/null bs=1M status=none
	t0=$(now); dd if="$2/big" of=/dev/null bs=1M status=none
	add "$1.warm" "$(rate "$t0" "$(now)")"
}
fs_meta() { # key dir [nocreate]
	"$BIN/fsops" stat "$2/stat1" 1000 >/dev/null
	add "$1.stat" "$("$BIN/fsops" stat "$2/stat1" "$STAT_N")"
	[ -n "${3:-}" ] || add "$1.create" "$("$BIN/fsops" create "$2" "$CU_N")"
	"$BIN/fsops" readdir "$2/dir5k" 1 >/dev/null
	add "$1.readdir" "$("$BIN/fsops" readdir "$2/dir5k" 20)"
}
for rep in $(seq "$REPS"); do
	log "FUSE rep $rep"
	fs_io native "$R"; fs_meta native "$R"
	start_sandfs --mount "$M"
	[ "$rep" = 1 ] && grep -i passthrough "$W/sandfs.log" >&2 || true
	fs_io pt "$M"; fs_meta pt "$M"
	stop_sandfs
	start_lb; fs_io lb "$L"; fs_meta lb "$L"; stop_lb
	start_sandfs --mount "$M" --no-passthrough
	fs_io nopt "$M"; fs_meta nopt "$M" nocreate
	stop_sandfs
	start_sandfs --mount "$M" --mount-cache 1s
	fs_meta cache "$M" nocreate
	stop_sandfs
done

# ---- 2–4. HTTP -------------------------------------------------------------------
start_sandfs
start_nginx
mbps() { awk -v b="$1" 'BEGIN{printf "%.1f", b/1048576}'; }
curl -s -o /dev/null "$URL/v2/fs/download?path=/big"
curl -s -o /dev/null "http://127.0.0.1:$NGPORT/big"
curl -s -o /dev/null "$URL/v2/fs/list?path=/tree&recursive=true"
ls -lR "$R/tree" >/dev/null
SPIDH=$SPID
for rep in $(seq "$REPS"); do
	log "HTTP rep $rep"
	add dl.s "$(mbps "$(curl -s -o /dev/null -w '%{speed_download}' "$URL/v2/fs/download?path=/big")")"
	add dl.a "$(mbps "$(curl -s -o /dev/null -w '%{speed_download}' "http://127.0.0.1:$NGPORT/big")")"

	add list100k.s "$(curl -s -o "$W/list.json" -w '%{time_total}' "$URL/v2/fs/list?path=/tree&recursive=true")"
	[ "$rep" = 1 ] && log "list /tree: $(grep -o '"truncated":[a-z]*' "$W/list.json"), $(grep -o '"total_count":[0-9]*' "$W/list.json"), $(stat -c %s "$W/list.json") bytes"
	t0=$(now); ls -lR "$R/tree" >/dev/null; add list100k.a "$(since "$t0")"
	add list10k.s "$(curl -s -o "$W/list.json" -w '%{time_total}' "$URL/v2/fs/list?path=/tree10k&recursive=true")"
	[ "$rep" = 1 ] && log "list /tree10k: $(grep -o '"truncated":[a-z]*' "$W/list.json"), $(grep -o '"total_count":[0-9]*' "$W/list.json")"
	t0=$(now); ls -lR "$R/tree10k" >/dev/null; add list10k.a "$(since "$t0")"
	add entries.s "$(curl -s -o "$W/entries.json" -w '%{time_total}' "$URL/v1/fs/entries?path=/flat10k")"
	[ "$rep" = 1 ] && log "entries /flat10k: $(grep -o '"name"' "$W/entries.json" | wc -l) names"
	t0=$(now); ls -l "$R/flat10k" >/dev/null; add entries.a "$(since "$t0")"

	echo 5 >"/proc/$SPIDH/clear_refs"
	add rss0 "$(awk '/VmHWM/{print $2/1024}' "/proc/$SPIDH/status")"
	add put.s "$(mbps "$(curl -s -o /dev/null -w '%{speed_upload}' -T "$W/src.bin" "$URL/v1/fs/file?path=/x")")"
	add rss1 "$(awk '/VmHWM/{print $2/1024}' "/proc/$SPIDH/status")"
	rm -f "$R/x"; sync
	t0=$(now); dd if="$W/src.bin" of="$W/x.native" bs=1M conv=fsync status=none
	add put.a "$(rate "$t0" "$(now)")"
	rm -f "$W/x.native"; sync
done
stop_nginx
stop_sandfs

# ---- table -------------------------------------------------------------------------
echo
echo "REPS=$REPS SIZE_MB=$SIZE_MB STAT_N=$STAT_N CU_N=$CU_N; medians; ratio = sandfs/anchor"
echo
echo "| figure | sandfs | anchor | ratio |"
echo "|---|---|---|---|"
row "seq write ${SIZE_MB} MiB fsync, MiB/s: passthrough vs native" pt.write native.write
row "seq write, MiB/s: --no-passthrough vs native" nopt.write native.write
row "seq write, MiB/s: go-fuse loopback vs native" lb.write native.write
row "cold seq read, MiB/s: passthrough vs native" pt.cold native.cold
row "cold seq read, MiB/s: --no-passthrough vs native" nopt.cold native.cold
row "cold seq read, MiB/s: go-fuse loopback vs native" lb.cold native.cold
row "warm seq read, MiB/s: passthrough vs native" pt.warm native.warm
row "warm seq read, MiB/s: --no-passthrough vs native" nopt.warm native.warm
row "warm seq read, MiB/s: go-fuse loopback vs native" lb.warm native.warm
row "warm lstat, ns/op: default vs native" pt.stat native.stat
row "warm lstat, ns/op: --mount-cache 1s vs native" cache.stat native.stat
row "warm lstat, ns/op: default vs go-fuse loopback (1s cache)" pt.stat lb.stat
row "warm lstat, ns/op: --mount-cache 1s vs go-fuse loopback" cache.stat lb.stat
row "create+unlink ${CU_N} files, s: default vs go-fuse loopback" pt.create lb.create
row "create+unlink ${CU_N} files, s: default vs native" pt.create native.create
row "readdir 5,000 entries, ms: default vs go-fuse loopback" pt.readdir lb.readdir
row "readdir 5,000 entries, ms: --mount-cache 1s vs loopback" cache.readdir lb.readdir
row "readdir 5,000 entries, ms: default vs native" pt.readdir native.readdir
row "download ${SIZE_MB} MiB warm, MiB/s: /v2/fs/download vs nginx sendfile" dl.s dl.a
row "recursive list 101,000-entry tree (truncated at 10,000), s: /v2/fs/list vs ls -lR (all)" list100k.s list100k.a
row "recursive list 10,000-entry tree, s: /v2/fs/list vs ls -lR" list10k.s list10k.a
row "10,000-entry dir, s: /v1/fs/entries vs ls -l" entries.s entries.a
row "PUT ${SIZE_MB} MiB, MiB/s: PUT /v1/fs/file vs dd conv=fsync" put.s put.a
row "daemon VmHWM MiB: after PUT vs before (reset)" rss1 rss0
