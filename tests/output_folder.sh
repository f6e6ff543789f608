#!/usr/bin/env bash
# output_folder.sh THUNDER_GEN WORK: -o never deletes what is not ours. It replaces only a new,
# empty or earlier-output folder (--force for anything else), never one holding the current folder
# or the trace it reads, never through a symbolic link; concurrent runs to one folder all succeed
# and leave one complete output; temporary folders of killed runs are removed, those of live runs
# are not; an earlier output made read-only is replaced and removed whole.
set -u
gen=$1 work=$2
root=$(cd "$(dirname "$0")/.." && pwd)
ex=$root/examples/softmax.json
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 2
source "$root/tests/checks.sh"
here=$PWD
run() { "$gen" "$@" >"$here/out.txt" 2>"$here/err.txt"; echo $? >"$here/rc.txt"; }
rc() { [ "$(cat "$here/rc.txt")" = "$1" ]; }
has() { grep -q -- "$2" "$here/$1"; }

# -o . and -o .. from a folder holding the trace and a file of the user's.
mkdir -p user/sub && cp "$ex" user/trace.json && echo mine >user/notes.txt
(cd user && run trace.json -o .);            check dot-refused rc 1
check dot-message has err.txt "holds the current folder"
check dot-keeps-files [ -f user/trace.json ] && [ -f user/notes.txt ]
(cd user/sub && run ../trace.json -o ..);    check dotdot-refused rc 1
(cd user && run trace.json -o . --force);    check dot-refused-forced rc 1
check dot-forced-keeps-files [ -f user/trace.json ] && [ -f user/notes.txt ]

# A folder of the user's.
mkdir -p theirs && echo mine >theirs/notes.txt
run "$ex" -o theirs;                         check foreign-refused rc 1
check foreign-message has err.txt "no thunder-gen output"
check foreign-kept [ -f theirs/notes.txt ] && [ ! -e theirs/forward.cu ]
run "$ex" -o theirs --force;                 check foreign-forced rc 0
check foreign-forced-replaced [ -f theirs/forward.cu ] && [ ! -e theirs/notes.txt ]

# The trace inside the output folder: refused even with --force.
mkdir -p holder && cp "$ex" holder/trace.json
run holder/trace.json -o holder --force;     check holds-input-refused rc 1
check holds-input-message has err.txt "which this run reads"
check holds-input-kept [ -f holder/trace.json ]
mkdir -p overrides_holder && echo '{}' >overrides_holder/o.json
run "$ex" -o overrides_holder --tags overrides_holder/o.json --force; check holds-overrides-refused rc 1

# Empty, new and earlier-output folders are fine; an earlier output is replaced whole.
mkdir -p empty
run "$ex" -o empty;                          check empty-ok rc 0
run "$ex" -o empty;                          check earlier-output-ok rc 0
touch empty/build-leftover
run "$ex" -o empty;                          check earlier-output-replaced [ ! -e empty/build-leftover ]

# A symbolic link to a folder is not followed.
mkdir -p real && echo mine >real/notes.txt && ln -s real link
run "$ex" -o link;                           check symlink-refused rc 1
check symlink-target-kept [ -f real/notes.txt ] && [ -L link ]

# Temporary folders of a killed run are removed; a live run's (locked) staging folder is not.
run "$ex" -o gen
mkdir -p .gen.tmp-00000000deadbeef .gen.old-00000000cafef00d .gen.tmp-live0000000000ab .gen.tmp-1111111111111111
touch .gen.tmp-00000000deadbeef/forward.cu
flock -x .gen.tmp-1111111111111111 sleep 20 &
holder=$!
sleep 0.5
run "$ex" -o gen;                            check stale-run rc 0
check stale-tmp-removed [ ! -e .gen.tmp-00000000deadbeef ]
check stale-old-removed [ ! -e .gen.old-00000000cafef00d ]
check live-tmp-kept [ -d .gen.tmp-1111111111111111 ]
check not-ours-kept [ -d .gen.tmp-live0000000000ab ]
kill $holder 2>/dev/null; wait $holder 2>/dev/null
rm -rf .gen.tmp-live0000000000ab .gen.tmp-1111111111111111

"$gen" "$ex" -o reference >/dev/null 2>&1

# The window between creating a staging folder and locking it, stretched with strace's fault
# injection: A's lock comes 1.5 s late and its files 0.3 s apart while B, at its swap, lists the
# folder's temporaries slowly. B must not take A's staging folder for a killed run's (and delete
# what A wrote so far): both succeed and the folder is complete.
if command -v strace >/dev/null; then
  rm -rf raced
  strace -f -o /dev/null -e trace=flock,openat -e inject=flock:delay_enter=1500000:when=1 -e inject=openat:delay_enter=300000:when=12+ \
    "$gen" "$ex" -o raced 2>raced.a.err &
  a=$!
  sleep 1.2
  strace -f -o /dev/null -e trace=getdents64,rmdir -e inject=getdents64:delay_enter=800000:when=2 -e inject=rmdir:delay_enter=500000 \
    "$gen" "$ex" -o raced 2>raced.b.err
  b_rc=$?
  wait $a
  a_rc=$?
  check race-both-succeed [ $a_rc = 0 ] && [ $b_rc = 0 ]
  check race-folder-complete diff -r reference raced
else
  echo "skip race-*: no strace"
fi

# An earlier output made read-only (chmod -R a-w) is replaced and removed whole, nothing left
# beside it. Root ignores permissions, so as root the runs go as user nobody (setpriv).
as_user() { if [ "$(id -u)" = 0 ]; then setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; else "$@"; fi; }
mkdir -p ro && chmod 777 ro && cp "$ex" ro/trace.json && chmod 644 ro/trace.json
as_user "$gen" ro/trace.json -o ro/out >/dev/null 2>&1
chmod -R a-w ro/out
as_user "$gen" ro/trace.json -o ro/out >"$here/out.txt" 2>"$here/err.txt"; echo $? >"$here/rc.txt"
check read-only-replaced rc 0
check read-only-nothing-left [ "$(ls -A ro)" = "$(printf 'out\ntrace.json')" ]
check read-only-no-warning [ ! -s err.txt ]
chmod -R u+w ro

# A folder taking its sizes at run time is written while the second probe runs: where the probes'
# code differs (a slice's T - 1 taken as a number: tests/run_time/shift0.json), the earlier output
# stays and the written folder is removed.
"$gen" "$ex" -o probed >/dev/null 2>&1 && cp -r probed probed.before
run "$root/tests/run_time/shift0.json" -o probed; check probes-differ-refused rc 1
check probes-differ-message has err.txt "other than through the symbols"
check probes-differ-earlier-kept diff -r probed.before probed
check probes-differ-nothing-left [ -z "$(ls -A . | grep '^\.probed\.')" ]
# A write error while the folder is staged (files past `ulimit -f` of 4 KB, SIGXFSZ ignored so the
# write fails with EFBIG): reported once the probes agree, and where they differ that instead; the
# earlier output kept either way, nothing staged left.
limited() { (trap '' XFSZ; ulimit -f 8; run "$@"); }
limited "$root/tests/run_time/shift0.json" -o probed; check staged-write-error-probes-differ rc 1
check staged-write-error-probes-reported has err.txt "other than through the symbols"
check staged-write-error-probes-first sh -c "! grep -q 'File too large' '$here/err.txt'"
limited "$root/examples/symbolic/corpus/mlp_dropout.json" -o probed; check staged-write-error rc 1
check staged-write-error-message has err.txt "cannot write probed: .*File too large"
check staged-write-error-earlier-kept diff -r probed.before probed
check staged-write-error-nothing-left [ -z "$(ls -A . | grep '^\.probed\.')" ]

# Concurrent runs to one folder: every run succeeds and one complete output is left.
pids=()
for k in $(seq 1 8); do ("$gen" "$ex" -o shared >/dev/null 2>"shared.$k.err"; echo $? >"shared.$k.rc") & pids+=($!); done
wait "${pids[@]}"
check concurrent-all-succeed [ "$(cat shared.*.rc | sort -u)" = 0 ]
check concurrent-complete diff -r reference shared
check concurrent-no-temporaries [ -z "$(ls -A . | grep '^\.shared\.')" ]
finish
