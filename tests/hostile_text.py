#!/usr/bin/env python3
"""No trace text can end a comment, a string or a line in a generated file.

  hostile_text.py WORK

A trace whose file name, `source`, string literals and keyword names (on a call thunder-gen lowers
through its decomposition) carry newlines, "*/", quotes, backslashes, a Unicode direction override
and a NUL-free mix of control bytes is generated beside the same trace without them. Then:
- the two folders differ only in comment lines (and the listing's quoted strings there);
- both build under emulation and run, and their outputs and gradients are the same bytes;
- the hostile folder's forward.cu and backward.cu compile with nvcc, and their kernels with NVRTC;
- the places where such text is refused (names, tags, devices, the trace's name, overrides) are
  refused with exit code 1 and a one-line diagnostic with no raw control character.
Tools: thunder-gen as tools/thunder_gen_binary.py finds it ($THUNDER_GEN first); NVCC, NVRTC_CHECK,
CXX from the environment.
"""
import copy
import filecmp
import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tools"))
from thunder_gen_binary import find_thunder_gen  # noqa: E402
PAYLOAD = 'x\n#error injected\r\n*/ /* " \' \\ \\\n \u202e \x1b[31m ??/ \t end'
failures = 0


def check(name, ok, detail=""):
    global failures
    print(("ok " if ok else "FAIL ") + name + ("" if ok or not detail else ": " + detail))
    failures += not ok


def plain_trace():
    """x [4, 8] (requires grad) through a call thunder-gen has no rule for, lowered by its `sub`;
    the call's keyword arguments are strings and a list of them, which only listings print."""
    t = lambda name, shape=(4, 8): {"name": name, "shape": list(shape), "dtype": "f32"}
    frobnicate = {"op": "torch.frobnicate", "args": ["x"], "kwargs": {"mode": {"str": "plain"}, "names": [{"str": "a"}, {"str": "b"}]},
                  "out": [t("y")],
                  "sub": [{"op": "prims.tanh", "args": ["x"], "out": [t("u")]},
                          {"op": "prims.mul", "args": ["u", "x"], "out": [t("y")]}],
                  "tags": ["DONT_RECOMPUTE_IN_BACKWARD"]}
    return {"format": "thunder-gen-trace", "version": 1, "name": "hostile_text", "source": "plain",
            "inputs": [dict(t("x"), requires_grad=True)],
            "ops": [frobnicate, {"op": "prims.sum", "args": ["y", [1]], "out": [t("s", (4,))]}],
            "outputs": ["s", "y"]}


def hostile_trace():
    t = plain_trace()
    t["source"] = PAYLOAD
    call = t["ops"][0]
    call["kwargs"] = {"mode": {"str": PAYLOAD}, "names": [{"str": PAYLOAD}, {"str": "*/"}]}
    return t


def generate(trace, path, out, *flags):
    path.write_text(json.dumps(trace), encoding="utf-8")
    return subprocess.run([find_thunder_gen(), str(path), "-o", str(out), *flags], capture_output=True)


def only_comments_differ(plain, hostile):
    """Lines that differ between the folders' files are comments (// or CMake #)."""
    bad = []
    for f in sorted(p.name for p in plain.iterdir() if p.is_file()):
        a = (plain / f).read_bytes().split(b"\n")
        b = (hostile / f).read_bytes().split(b"\n")
        if len(a) != len(b):
            bad.append(f"{f}: {len(a)} lines against {len(b)}")
            continue
        for x, y in zip(a, b):
            if x != y and not (y.lstrip().startswith(b"//") or (f == "CMakeLists.txt" and y.startswith(b"#"))):
                bad.append(f"{f}: {y[:120]!r}")
    return bad


def printable(data):
    return all(c == 0x0a or 0x20 <= c < 0x7f for c in data)


def build_and_run(folder, results):
    subprocess.run([str(HERE / "build_emu_harness.sh"), str(folder), "fast"], check=True, capture_output=True)
    results.mkdir(exist_ok=True)
    subprocess.run([str(folder / "harness"), "--outputs", str(results), "--quiet"], check=True, capture_output=True)


def refusals(work):
    """Where text becomes identifiers, tags or devices it is refused, with one clean line."""
    cases = {}
    t = plain_trace(); t["inputs"][0]["name"] = PAYLOAD; cases["value name"] = t
    t = plain_trace(); t["name"] = PAYLOAD; cases["trace name"] = t
    t = plain_trace(); t["ops"][0]["tags"] = [PAYLOAD]; cases["tag"] = t
    t = plain_trace(); t["device"] = PAYLOAD; cases["trace device"] = t
    t = plain_trace(); t["inputs"][0]["device"] = PAYLOAD; cases["input device"] = t
    t = plain_trace(); t["ops"][0]["op"] = PAYLOAD; cases["symbol"] = t
    t = plain_trace(); t["ops"][0]["kwargs"] = {PAYLOAD: 1}; cases["keyword name"] = t
    for case, trace in cases.items():
        r = generate(trace, work / "refused.json", work / "refused.out")
        lines = r.stderr.split(b"\n")
        check(f"refuses {case}", r.returncode == 1 and not (work / "refused.out").exists(), r.stderr.decode(errors="replace"))
        check(f"refuses {case} in one clean line", len(lines) == 2 and lines[1] == b"" and printable(r.stderr), repr(r.stderr))
    r = generate(plain_trace(), work / "plain.json", work / "refused.out", "--tag", PAYLOAD + "=save")
    check("refuses a --tag selector", r.returncode == 1 and printable(r.stderr), repr(r.stderr))
    (work / "overrides.json").write_text(json.dumps({PAYLOAD: "save"}))
    r = generate(plain_trace(), work / "plain.json", work / "refused.out", "--tags", str(work / "overrides.json"))
    check("refuses an overrides selector", r.returncode == 1 and printable(r.stderr), repr(r.stderr))


def main(work):
    work.mkdir(parents=True, exist_ok=True)
    plain, hostile = work / "plain", work / "hostile"
    r = generate(plain_trace(), work / "plain.json", plain)
    check("plain generates", r.returncode == 0, r.stderr.decode(errors="replace"))
    hostile_name = work / ("evil\n#error injected * \" ' \\ \u202e \x1b[31m.json")  # (a file name holds no "/")
    r = generate(hostile_trace(), hostile_name, hostile)
    check("hostile generates", r.returncode == 0, r.stderr.decode(errors="replace"))
    if failures:
        return 1
    differing = only_comments_differ(plain, hostile)
    check("only comment lines differ", not differing, "; ".join(differing[:5]))
    check("the file name reached the banners", b"evil\\x0a#error" in (hostile / "forward.cu").read_bytes())
    for f in hostile.iterdir():
        if f.suffix in (".cu", ".cpp", ".txt", ".h", ".cuh"):
            check(f"{f.name} is printable ASCII", printable(f.read_bytes()))
    build_and_run(plain, work / "plain.results")
    build_and_run(hostile, work / "hostile.results")
    same = filecmp.dircmp(work / "plain.results", work / "hostile.results")
    check("the same results, byte for byte", not same.diff_files and not same.left_only and not same.right_only and same.same_files,
          f"differ {same.diff_files}, only {same.left_only + same.right_only}")
    for cu in ("forward.cu", "backward.cu"):
        r = subprocess.run([os.environ.get("NVCC", "nvcc"), "-arch=sm_90", "-std=c++17", "-c", cu, "-I.", "-o", "/dev/null"], cwd=hostile,
                           capture_output=True)
        check(f"nvcc compiles {cu}", r.returncode == 0, r.stderr.decode(errors="replace")[-2000:])
        r = subprocess.run([os.environ["NVRTC_CHECK"], cu, "sm_90"], cwd=hostile, capture_output=True)
        check(f"NVRTC compiles {cu}'s kernels", r.returncode == 0, r.stderr.decode(errors="replace")[-2000:])
    refusals(work)
    print(f"hostile_text: {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.exit(main(Path(sys.argv[1])))
