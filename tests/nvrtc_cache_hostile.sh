#!/usr/bin/env bash
# nvrtc_cache_hostile.sh CASE WORK: the NVRTC cache of tg_nvrtc.h when its disk, its entries, the
# driver or other users misbehave, through nvrtc-check (NVRTC_CHECK in the environment) on a small
# two-file program. A bad cache may only make a build slower: every case must still build, say
# what it ignored in one line on stderr, and never serve a bad entry.
#   full_disk    the entry's write fails part way (RLIMIT_FSIZE): the build works, nothing is left
#                in the folder, and the next build compiles (before: a truncated entry was served)
#   corrupt      an entry truncated, with a byte flipped (header, middle, end), emptied, or garbage:
#                compiled again and the entry replaced
#   rejected     the loader (nvrtc-check's stand-in for cuModuleLoadData) rejects the cached cubin:
#                compiled again without the cache, the entry replaced, loaded; a fresh cubin it
#                rejects is an error
#   permissions  folders the cache creates are 0700, entries 0600; a cache folder writable by
#                group or others, a symlink, or another user's: ignored; an entry writable by
#                others, a symlink, or another user's (needs root to chown; skipped otherwise):
#                ignored, and another user's file is left as it was
# KEEP_GOING=1 reports every failed check instead of stopping at the first one.
set -euo pipefail
case_name=$1 work=$2
: "${NVRTC_CHECK:?}"
rm -rf "$work"
mkdir -p "$work/src"
umask 022
# Eight kernels: a cubin of several KiB, so a 2 KiB file size limit cuts its entry short.
cat >"$work/src/poly.cuh" <<'EOF'
template <int K> __device__ float poly(float x) { float y = 1.f; for (int i = 0; i < K; ++i) y = y * x + float(i); return y; }
EOF
cat >"$work/src/prog.cu" <<'EOF'
#include "poly.cuh"
#define KERNEL(n) extern "C" __global__ void k##n(float* x, int count) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < count) x[i] = poly<n>(x[i]); }
KERNEL(1) KERNEL(2) KERNEL(3) KERNEL(4) KERNEL(5) KERNEL(6) KERNEL(7) KERNEL(8)
EOF
cache=$work/cache out=$work/stdout err=$work/stderr
rc=0 entry= failures=0

# build [ARGS...]: nvrtc-check on the program through $cache; sets rc, and entry when it names one.
build() {
  rc=0
  "$NVRTC_CHECK" "$work/src/prog.cu" sm_90 --cache "$cache" "$@" >"$out" 2>"$err" || rc=$?
  entry=$(sed -n 's/.*, cache entry \(.*\))$/\1/p' "$out")
}
fail() {
  { echo "nvrtc_cache_hostile $case_name: $*"; echo "  stdout: $(cat "$out")"; echo "  stderr: $(cat "$err")"; } >&2
  ((++failures))
  [[ -n ${KEEP_GOING:-} ]] || exit 1
}
expect_compiled() { ((rc == 0)) && grep -q "NVRTC compiled it" "$out" || fail "$1: expected NVRTC to compile"; }
expect_cached() { ((rc == 0)) && grep -q "read from the NVRTC cache" "$out" || fail "$1: expected a cache hit"; }
expect_quiet() { [[ ! -s $err ]] || fail "$1: expected nothing on stderr"; }
# expect_warning WHAT TEXT...: stderr is one line holding every TEXT.
expect_warning() {
  local what=$1 text
  shift
  [[ $(wc -l <"$err") == 1 ]] || fail "$what: expected one warning line"
  for text in "$@"; do grep -qF -- "$text" "$err" || fail "$what: expected a warning with \"$text\""; done
}
expect_mode() { [[ $(stat -c %a "$2") == "$1" ]] || fail "$2: mode $(stat -c %a "$2"), expected $1"; }
# fresh_entry: a cold build into an empty cache; sets entry.
fresh_entry() {
  rm -rf "$cache"
  build
  expect_compiled "cold build"
  expect_quiet "cold build"
  [[ -f $entry ]] || fail "the cold build left no entry"
}
# flip_byte FILE OFFSET: replaces the byte at OFFSET by its complement.
flip_byte() {
  local byte
  byte=$(od -An -tu1 -j "$2" -N1 "$1" | tr -d ' ')
  printf "\\$(printf %03o $((255 - byte)))" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}
files_in() { find "$1" -mindepth 1 | wc -l; }
is_root() { [[ $(id -u) == 0 ]]; }

full_disk() {
  fresh_entry
  local size
  size=$(sed -n 's/.*(\([0-9]*\) bytes of cubin.*/\1/p' "$out")
  ((size > 4096)) || fail "the test program's cubin has $size bytes, too few for a 2 KiB limit to cut"
  rm -rf "$cache"
  # Files may not grow past 2 KiB; with SIGXFSZ ignored the write fails with EFBIG.
  rc=0
  (trap '' XFSZ && ulimit -f 2 && exec "$NVRTC_CHECK" "$work/src/prog.cu" sm_90 --cache "$cache") >"$out" 2>"$err" || rc=$?
  expect_compiled "full disk"
  expect_warning "full disk" "$cache" "File too large"
  [[ $(files_in "$cache") == 0 ]] || fail "full disk: the failed write left $(ls -A "$cache") behind"
  build
  expect_compiled "after the full disk"
  expect_quiet "after the full disk"
  build
  expect_cached "after the full disk, second build"
}

corrupt() {
  local how size
  for how in truncated flipped_header flipped_middle flipped_end empty garbage; do
    fresh_entry
    size=$(stat -c %s "$entry")
    case $how in
      truncated) truncate -s $((size / 2)) "$entry" ;;
      flipped_header) flip_byte "$entry" 16 ;;
      flipped_middle) flip_byte "$entry" $((size / 2)) ;;
      flipped_end) flip_byte "$entry" $((size - 1)) ;;
      empty) : >"$entry" ;;
      garbage) head -c "$size" <(yes 'not a cache entry') >"$entry" ;;
    esac
    build
    expect_compiled "$how entry"
    expect_warning "$how entry" "$entry"
    build
    expect_cached "$how entry, next build"
    expect_quiet "$how entry, next build"
  done
}

rejected() {
  fresh_entry
  local inode
  inode=$(stat -c %i "$entry")
  build --reject-loads 1
  expect_compiled "cached cubin rejected"
  expect_warning "cached cubin rejected" "$entry" "rejected"
  [[ $(stat -c %i "$entry") != "$inode" ]] || fail "the rejected entry was not replaced"
  build
  expect_cached "after the rejected entry"
  build --reject-loads 2
  ((rc == 1)) || fail "a fresh cubin the loader rejects too: expected exit 1, got $rc"
  grep -q "cannot load" "$err" || fail "a fresh cubin the loader rejects too: expected \"cannot load\""
  rm -rf "$cache"
  build --reject-loads 1
  ((rc == 1)) || fail "a cold build's cubin rejected: expected exit 1 (nothing cached to blame), got $rc"
  grep -q "cannot load" "$err" || fail "a cold build's cubin rejected: expected \"cannot load\""
}

# ignored_folder WHAT TEXT: the cache folder is ignored with a warning naming it and TEXT, every time.
ignored_folder() {
  build
  expect_compiled "$1"
  expect_warning "$1" "$cache" "$2"
  build
  expect_compiled "$1, second build"
}

# ignored_entry WHAT TEXT: the entry is ignored with a warning naming it and TEXT.
ignored_entry() {
  local path=$entry
  build
  expect_compiled "$1"
  expect_warning "$1" "$path" "$2"
  entry=$path
}

permissions() {
  cache=$work/made/by/cache
  build
  expect_compiled "nested cache folder"
  local level
  for level in made made/by made/by/cache; do expect_mode 700 "$work/$level"; done
  expect_mode 600 "$entry"
  cache=$work/cache

  local mode
  for mode in 777 770 702; do
    rm -rf "$cache" && mkdir "$cache" && chmod "$mode" "$cache"
    ignored_folder "a cache folder of mode $mode" "writable by group or others"
    [[ $(files_in "$cache") == 0 ]] || fail "a cache folder of mode $mode: an entry was written into it"
  done
  rm -rf "$cache" "$work/real" && mkdir -m 700 "$work/real" && ln -s real "$cache"
  ignored_folder "a symlinked cache folder" "symbolic link"
  [[ $(files_in "$work/real") == 0 ]] || fail "a symlinked cache folder: an entry was written through it"
  rm "$cache"
  if is_root; then
    mkdir -m 755 "$cache" && chown nobody "$cache"
    ignored_folder "a cache folder owned by nobody" "owned by uid $(id -u nobody)"
    rm -rf "$cache"
  else
    echo "skipped: a cache folder owned by another user (chown needs root)"
  fi

  fresh_entry
  chmod 666 "$entry"
  ignored_entry "an entry of mode 666" "writable by group or others"
  build
  expect_cached "after the entry of mode 666 (replaced)"
  expect_mode 600 "$entry"

  fresh_entry
  mv "$entry" "$work/target" && ln -s "$work/target" "$entry"
  cp "$work/target" "$work/target.copy"
  ignored_entry "a symlinked entry" "symbolic link"
  cmp -s "$work/target" "$work/target.copy" || fail "a symlinked entry: its target was written"
  build
  expect_cached "after the symlinked entry (replaced)"

  if is_root; then
    fresh_entry
    chown nobody "$entry" && cp -p "$entry" "$work/foreign.copy"
    ignored_entry "an entry owned by nobody" "owned by uid $(id -u nobody)"
    [[ $(stat -c %U "$entry") == nobody ]] && cmp -s "$entry" "$work/foreign.copy" ||
      fail "an entry owned by nobody was overwritten"
    ignored_entry "an entry owned by nobody, second build" "owned by uid $(id -u nobody)"
  else
    echo "skipped: an entry owned by another user (chown needs root)"
  fi
}

case $case_name in
  full_disk | corrupt | rejected | permissions) "$case_name" ;;
  *) echo "nvrtc_cache_hostile: unknown case $case_name" >&2 && exit 2 ;;
esac
((failures == 0)) || exit 1
echo "nvrtc_cache_hostile $case_name: ok"
