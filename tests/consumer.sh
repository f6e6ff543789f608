#!/usr/bin/env bash
# consumer.sh BUILD_DIR THUNDER_GEN_CHECK WORK: thunder-gen as an installed CMake package, used as
# another project uses it.
#  1. `cmake --install BUILD_DIR` into a prefix, which is then moved (the package must be
#     relocatable), and no installed file names the source or build tree (ELF debug sections
#     aside: `cmake --install --strip` drops them);
#  2. find_package(ThunderGen 0.1) matches, 0.2 and 1.0 do not; bad thunder_gen_add_trace()
#     arguments stop the configure with a message naming the problem;
#  3. a copy of examples/consumer configured against the moved prefix alone, built (MODE emu) and
#     run: its outputs and gradients against LibTorch (thunder-gen-check);
#  4. a rebuild with nothing changed does nothing; a touched trace reruns the generation and
#     rebuilds the library, and so would a touched thunder-gen (ninja -n);
#  5. the trace loses its backward (no input requires grad): in one build, the library is rebuilt
#     without a new source list and has no backward, and main.cpp, which calls it, is recompiled
#     against the new header and fails; the backward back, everything builds and runs again;
#  6. an edited tags file generates again, with its policy (the manifest's reason), and leaves
#     main.cpp alone (the header's text is the same); nothing was written into the source folder.
set -euo pipefail
build=$(realpath "$1") check=$(realpath "$2") work=$3
root=$(cd "$(dirname "$0")/.." && pwd)
rm -rf "$work" && mkdir -p "$work" && work=$(realpath "$work")
unset CMAKE_PREFIX_PATH ThunderGen_DIR ThunderGen_ROOT  # the moved prefix alone is searched
command -v ninja >/dev/null || { echo "consumer.sh needs ninja (tools/setup.sh installs it)" >&2; exit 1; }
fail() { echo "FAIL: $*" >&2; exit 1; }
start=$SECONDS
step() { echo "== [$((SECONDS - start)) s] $*"; }

step "install, move, look for build-machine paths"
cmake --install "$build" --prefix "$work/installed" >"$work/install.log"
[[ -d $work/installed ]] || fail "cmake --install $build installed nothing"
mv "$work/installed" "$work/prefix"
prefix=$work/prefix
(cd "$prefix" && find . -type f | sort)
[[ -x $prefix/bin/thunder-gen && -f $prefix/lib/cmake/ThunderGen/ThunderGenConfig.cmake &&
   -f $prefix/lib/cmake/ThunderGen/ThunderGenConfigVersion.cmake ]] || fail "the package is incomplete (above)"
while IFS= read -r -d '' f; do
  scanned=$f
  if [[ $(head -c 4 "$f") == $'\x7fELF' ]]; then
    scanned=$work/scanned && objcopy --strip-debug "$f" "$scanned"
    readelf -d "$f" | grep -E 'RPATH|RUNPATH' && fail "$f has a run path"
  fi
  for path in "$root" "$build" "$work/installed"; do
    grep -q -F "$path" "$scanned" && fail "$f names $path"
  done
done < <(find "$prefix" -type f -print0)
true

step "a copy of examples/consumer against the moved prefix alone"
src=$work/src
mkdir -p "$src" && cp -r "$root/examples/consumer/." "$src/"
source_files=$(cd "$src" && find . | sort)
configure() {  # configure SOURCE BINARY [ARGS...]
  cmake -S "$1" -B "$2" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF "${@:3}"
}
configure "$src" "$work/build" >"$work/configure.log" 2>&1 || { cat "$work/configure.log"; fail "configure"; }
grep -q "^ThunderGen_DIR:PATH=$prefix/lib/cmake/ThunderGen$" "$work/build/CMakeCache.txt" || fail "ThunderGen was not found in $prefix"
grep -q -F "$prefix/bin/thunder-gen" "$work/build/build.ninja" || fail "the build does not run the installed thunder-gen"
# (WORK itself may lie in the build folder, as under ctest: its own paths are left out of the search.)
consumer_rules=$(<"$work/build/build.ninja")
consumer_rules=${consumer_rules//"$work/"/WORK/}
for path in "$root/src" "$root/templates" "$root/include" "$root/cmake" "$root/examples" "$build/"; do
  grep -q -F "$path" <<<"$consumer_rules" && fail "the consumer's build names $path"
done
build_consumer() {  # build_consumer LOG [ARGS...]: cmake --build, its output in LOG
  cmake --build "$work/build" "${@:2}" >"$work/$1" 2>&1
}
ms() { echo $(($(date +%s%N) / 1000000)); }
t0=$(ms)
build_consumer build.log || { cat "$work/build.log"; fail "build"; }
t1=$(ms)
echo "first build: $((t1 - t0)) ms"
grep -q "thunder-gen: generating tiny_mlp" "$work/build.log" || fail "no generation in the first build"
manifest=$work/build/thunder-gen/tiny_mlp/manifest.json
[[ -f $manifest ]] || fail "no output folder thunder-gen/tiny_mlp/ in the consumer's build folder"

step "run, and compare with LibTorch"
run_and_check() {
  rm -rf "$work/results" && mkdir -p "$work/results"
  "$work/build/consumer" "$src/data" "$work/results"
  cp "$src/data/"*.npy "$work/results/"  # the inputs and cotangent, beside what it computed
  "$check" "$src/tiny_mlp.json" "$work/results"
}
run_and_check

settled() {  # settled WHAT: a build now does nothing (Ninja's words), after WHAT
  build_consumer noop.log || { cat "$work/noop.log"; fail "the build after $1 failed"; }
  grep -q "no work to do" "$work/noop.log" || { cat "$work/noop.log"; fail "a build after $1 did something"; }
}
step "a rebuild with nothing changed does nothing"
t0=$(ms)
settled "the first build"
t1=$(ms)
echo "no-op rebuild: $((t1 - t0)) ms"

rebuilt() {  # rebuilt LOG WHY: the generation and the library's archive ran
  grep -q "thunder-gen: generating tiny_mlp" "$work/$1" || { cat "$work/$1"; fail "$2: no generation"; }
  grep -q "Linking CXX static library libtiny_mlp.a" "$work/$1" || { cat "$work/$1"; fail "$2: the library was not rebuilt"; }
}
step "touch the trace"
sleep 1 && before=$(stat -c %Y "$manifest") && touch "$src/tiny_mlp.json"
build_consumer touched.log || { cat "$work/touched.log"; fail "rebuild"; }
rebuilt touched.log "touching the trace"
(($(stat -c %Y "$manifest") > before)) || fail "touching the trace: manifest.json not rewritten"
settled "touching the trace"
step "touch thunder-gen (what the build would do: ninja -n)"
touch "$prefix/bin/thunder-gen"
build_consumer touched.log -- -n
rebuilt touched.log "touching thunder-gen"

step "the trace loses its backward"
cp "$src/tiny_mlp.json" "$work/with_backward.json"
sed -i 's/"requires_grad": true/"requires_grad": false/' "$src/tiny_mlp.json"
# One build (-k 0: on past main.cpp's failure): Ninja must learn that the generation rewrote the
# header, and recompile main.cpp against it, within the build that runs the generation.
build_consumer lost.log -- -k 0 && fail "main.cpp, written for the trace with a backward, built against the header without it"
rebuilt lost.log "losing the backward"
grep -q -E "main.cpp:[0-9]+:[0-9]+: error: .*tiny_mlp_backward" "$work/lost.log" || { cat "$work/lost.log"; fail "main.cpp was not recompiled against the new header"; }
echo "main.cpp, recompiled against the new header, fails as it should: $(grep -m1 -E 'main.cpp:.*error:.*tiny_mlp_backward' "$work/lost.log")"
[[ ! -e $work/build/thunder-gen/tiny_mlp/backward.cu ]] || fail "backward.cu is still there"
symbols=$(nm "$work/build/libtiny_mlp.a")
grep -q " T tiny_mlp_forward$" <<<"$symbols" || fail "no tiny_mlp_forward in the library"
grep -q "tiny_mlp_backward" <<<"$symbols" && fail "a tiny_mlp_backward is still in the library"

step "the backward back"
cp "$work/with_backward.json" "$src/tiny_mlp.json"
build_consumer back.log || { cat "$work/back.log"; fail "the library with its backward again"; }
rebuilt back.log "the backward back"
grep -q " T tiny_mlp_backward$" <<<"$(nm "$work/build/libtiny_mlp.a")" || fail "no tiny_mlp_backward in the library"
run_and_check

step "edit the tags file"
settled "the backward came back"
grep -q '"reason": "tag save on torch.nn.functional.linear (tags.json: /@a)' "$manifest" || fail "tags.json's policy is not in manifest.json"
printf '{"@a": "prefer-save"}\n' >"$src/tags.json"
build_consumer tags.log || { cat "$work/tags.log"; fail "rebuild after editing tags.json"; }
rebuilt tags.log "editing tags.json"
grep -q '"reason": "tag prefer-save on torch.nn.functional.linear (tags.json: /@a)' "$manifest" || fail "the generation did not read the edited tags.json"
grep -q "main.cpp.o" "$work/tags.log" && { cat "$work/tags.log"; fail "main.cpp recompiled, though the header's text did not change"; }
settled "editing tags.json"
run_and_check
if [[ $(cd "$src" && find . | sort) != "$source_files" ]]; then
  diff <(echo "$source_files") <(cd "$src" && find . | sort) || true
  fail "the build wrote into the source folder (above)"
fi

step "versions and bad arguments"
bad=$work/bad
mkdir -p "$bad"
cat >"$bad/CMakeLists.txt" <<'EOF'
cmake_minimum_required(VERSION 3.24)
project(bad_arguments LANGUAGES CXX)
cmake_language(EVAL CODE "${CALL}")
EOF
cp "$src/tiny_mlp.json" "$bad/"
refused() {  # refused CALL MESSAGE: configuring with CALL fails, saying MESSAGE
  if configure "$bad" "$work/bad-build" "-DCALL=$1" >"$work/bad.log" 2>&1; then fail "accepted: $1"; fi
  tr -s ' \n' ' ' <"$work/bad.log" | grep -q -F "$2" || { cat "$work/bad.log"; fail "$1: no \"$2\""; }
  echo "refused: ${1//$'\n'/; }"
}
accepted() {
  configure "$bad" "$work/bad-build" "-DCALL=$1" >"$work/bad.log" 2>&1 || { cat "$work/bad.log"; fail "refused: $1"; }
  echo "accepted: ${1//$'\n'/; }"
}
package="find_package(ThunderGen CONFIG REQUIRED)"
accepted "find_package(ThunderGen 0.1 CONFIG REQUIRED)"
refused "find_package(ThunderGen 0.2 CONFIG REQUIRED)" "considered but not accepted"
refused "find_package(ThunderGen 1.0 CONFIG REQUIRED)" "considered but not accepted"
accepted "$package
thunder_gen_add_trace(t TRACE tiny_mlp.json TAG torch.nn.functional.gelu=save MODE emu)"
refused "$package
thunder_gen_add_trace(t MODE emu)" "thunder_gen_add_trace(t): TRACE <trace.json> is required"
refused "$package
thunder_gen_add_trace(t TRACE tiny_mlp.json SOURCES x.cu)" "thunder_gen_add_trace(t): unexpected arguments: SOURCES;x.cu"
refused "$package
thunder_gen_add_trace(t TRACE tiny_mlp.json TAGS)" "thunder_gen_add_trace(t): TAGS needs a value"
refused "$package
thunder_gen_add_trace(t TRACE tiny_mlp.json TAGS no_tags.json)" "TAGS $bad/no_tags.json: no such file"
refused "$package
thunder_gen_add_trace(t TRACE tiny_mlp.json MODE cuda)" "thunder_gen_add_trace(t): MODE must be emu, nvcc or nvrtc, not \"cuda\""
refused "$package
thunder_gen_add_trace(t TRACE tiny_mlp.json TAG torch.nn.functional.gelu)" "TAG \"torch.nn.functional.gelu\" is not <selector>=<policy>"
refused "$package
thunder_gen_add_trace(t TRACE missing.json)" "TRACE $bad/missing.json: no such file"
refused "$package
thunder_gen_add_trace(t TRACE tiny_mlp.json MODE nvcc)" "MODE nvcc needs the CUDA language"
refused "$package
thunder_gen_add_trace(t TRACE tiny_mlp.json CUDA_ARCH sm_90)" "CUDA_ARCH \"sm_90\" is not a CUDA architecture"
echo "consumer: all checks passed ($((SECONDS - start)) s)"
