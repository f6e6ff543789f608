# Sourced by the shell tests: `check NAME CONDITION...` counts and prints "ok NAME" or
# "FAIL NAME"; `finish` prints the "N passed, M failed" summary and fails if anything did.
pass=0 fail=0
check() {
  local name=$1; shift
  if "$@"; then pass=$((pass + 1)); echo "ok $name"; else fail=$((fail + 1)); echo "FAIL $name"; fi
}
finish() {
  echo "$pass passed, $fail failed"
  [ "$fail" -eq 0 ]
}
# device_code FOLDER: its forward.cu and backward.cu compiled for sm_90 by $NVCC, with their PTX
# (FOLDER/keep/*.ptx) and ptxas report (FOLDER/*.ptxas.log), as tests/ptx_compare.py reads them.
device_code() {
  local cu
  for cu in forward backward; do
    mkdir -p "$1/keep"
    (cd "$1" && "${NVCC:?}" -arch=sm_90 -std=c++17 -cubin -o "$cu.cubin" "$cu.cu" -I. -Xptxas -v -keep -keep-dir keep 2>"$cu.ptxas.log")
  done
}
# npy FILE DESCR SHAPE DATA_HEX [VERSION]: a .npy with that header and those bytes (a test's inputs,
# or a file that lies about them).
npy() {
  python3 - "$@" <<'EOF'
import struct, sys
path, descr, shape, data = sys.argv[1:5]
version = int(sys.argv[5]) if len(sys.argv) > 5 else 1
header = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, shape)
pre = 10 if version == 1 else 12
header += " " * ((64 - (pre + len(header) + 1) % 64) % 64) + "\n"
length = struct.pack("<H" if version == 1 else "<I", len(header))
open(path, "wb").write(b"\x93NUMPY" + bytes([version, 0]) + length + header.encode() + bytes.fromhex(data))
EOF
}
