#!/usr/bin/env python3
"""Every example, corpus and distributed trace's output, checked by its SHA-256.

tests/golden/outputs.sha256 holds one line `<sha256>  <trace>/<file>` per file, sorted, for every
trace under examples/, examples/corpus/ and examples/distributed/ (<trace> is its path under
examples/ without .json): each file thunder-gen writes into the output folder, and the listings
`--emit decomposed`, `--emit fused`, `--emit kernel-ir` and, for a trace that trains, `--emit
joint` (as decomposed.txt, fused.txt, kernel-ir.txt, joint.txt). The runtime templates every folder holds (tg_*.h,
tg_runtime.cuh, tg_library.cmake) are not hashed: they are compared with templates/, of which
they are verbatim copies. (tests/golden/<name>/ holds four examples' files whole.)

    golden_hashes.py check THUNDER_GEN             regenerate and compare; on a difference, exit 1
                                                   naming each trace and file, and say how to see it
    golden_hashes.py update THUNDER_GEN            rewrite outputs.sha256 (tools/update-golden.sh)
    golden_hashes.py generate THUNDER_GEN DIR [TRACE...]
                                                   write the traces' folders and listings to
                                                   DIR/<trace>/, to diff against another binary's
    golden_hashes.py --self-test THUNDER_GEN       the check fails, naming them, when a generated file
                                                   and a listing change by one byte

Standard library only. The project's version (`thunder-gen --version`) is in every generated
banner: a version bump changes every hash, and the update after it is expected.
"""
from __future__ import annotations

import contextlib
import hashlib
import io
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
TEMPLATES = ROOT / "templates"
GOLDEN = ROOT / "tests" / "golden" / "outputs.sha256"
TRACE_FOLDERS = ("", "corpus", "distributed")  # under examples/


class GenerationError(Exception):
    pass


def traces() -> list[str]:
    """Every trace, by its path under examples/ without .json (softmax, corpus/llama_block)."""
    names = []
    for folder in TRACE_FOLDERS:
        for path in sorted((EXAMPLES / folder).glob("*.json")):
            names.append(str(path.relative_to(EXAMPLES).with_suffix("")))
    return names


def run(command: list[str]) -> bytes:
    result = subprocess.run(command, capture_output=True)
    if result.returncode != 0:
        last = result.stderr.decode(errors="replace").strip().splitlines()[-1:] or ["(no message)"]
        raise GenerationError(f"`{' '.join(command[1:])}` exited with {result.returncode}: {last[0]}")
    return result.stdout


def generate(gen: str, trace: str, out: Path) -> None:
    """The trace's output folder in `out`, and its listings beside the folder's files."""
    source = str(EXAMPLES / (trace + ".json"))
    out.parent.mkdir(parents=True, exist_ok=True)
    run([gen, source, "-o", str(out)])
    listings = ["decomposed", "fused", "kernel-ir"] + (["joint"] if (out / "backward.cu").exists() else [])
    for stage in listings:
        (out / f"{stage}.txt").write_bytes(run([gen, source, "--emit", stage]))


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def hashes_of(trace: str, out: Path) -> tuple[dict[str, str], list[str]]:
    """`<trace>/<file>` -> SHA-256 for each file of `out` but the runtime templates, and a line per
    template that is not templates/'s file verbatim."""
    hashes, problems = {}, []
    for path in sorted(p for p in out.rglob("*") if p.is_file()):
        name = path.relative_to(out).as_posix()
        template = TEMPLATES / name
        if "/" not in name and template.is_file():
            if path.read_bytes() != template.read_bytes():
                problems.append(f"FAIL {trace}/{name}: not a verbatim copy of templates/{name}")
            continue
        hashes[f"{trace}/{name}"] = digest(path)
    return hashes, problems


def generate_all(gen: str, folder: Path, names: list[str]) -> tuple[dict[str, str], list[str]]:
    """Every trace of `names` generated under `folder`: the hashes of what it wrote, and a line per
    trace that failed to generate or per template copy that differs."""
    def one(trace: str):
        try:
            generate(gen, trace, folder / trace)
        except GenerationError as e:
            return {}, [f"FAIL {trace}: {e}"]
        return hashes_of(trace, folder / trace)

    hashes, problems = {}, []
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        for h, p in pool.map(one, names):
            hashes.update(h)
            problems += p
    return hashes, problems


def read_golden(path: Path) -> dict[str, str]:
    golden = {}
    for number, line in enumerate(path.read_text().splitlines(), 1):
        digest_text, sep, name = line.partition("  ")
        if not sep or len(digest_text) != 64:
            raise SystemExit(f"{path}:{number}: expected `<sha256>  <trace>/<file>`, got {line!r}")
        golden[name] = digest_text
    return golden


def golden_text(hashes: dict[str, str]) -> str:
    return "".join(f"{hashes[name]}  {name}\n" for name in sorted(hashes))


def differences(golden: dict[str, str], hashes: dict[str, str]) -> list[str]:
    """A line per file whose hash is not the golden one, or that only one side has."""
    lines = []
    for name in sorted(golden.keys() | hashes.keys()):
        if name not in hashes:
            lines.append(f"FAIL {name}: in the golden, not generated")
        elif name not in golden:
            lines.append(f"FAIL {name}: generated, not in the golden")
        elif golden[name] != hashes[name]:
            lines.append(f"FAIL {name}: differs (sha256 {hashes[name][:16]}..., golden {golden[name][:16]}...)")
    return lines


def shown(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def trace_of(name: str) -> str:
    """The trace a `<trace>/<file>` name (or a trace's own name) is of."""
    return max((t for t in traces() if name == t or name.startswith(t + "/")), key=len, default=name)


def how_to_see(failures: list[str]) -> str:
    changed = sorted({trace_of(line.split()[1].rstrip(":")) for line in failures})
    some = " ".join(changed[:3])
    return f"""
To see the difference, generate with the binary before the change and with this one, and diff:
    git stash && tools/build.sh thunder-gen && python3 tests/golden_hashes.py generate build/thunder-gen /tmp/golden-before {some}
    git stash pop && tools/build.sh thunder-gen && python3 tests/golden_hashes.py generate build/thunder-gen /tmp/golden-after {some}
    diff -r /tmp/golden-before /tmp/golden-after
(or give `generate` another build's binary). If the change is intended, run tools/update-golden.sh, which
rewrites tests/golden/ and outputs.sha256, and say in the commit message why the output changed.
"""


def check(gen: str, golden_path: Path = GOLDEN) -> int:
    with tempfile.TemporaryDirectory(prefix="golden-hashes-") as tmp:
        hashes, problems = generate_all(gen, Path(tmp), traces())
    failures = problems + differences(read_golden(golden_path), hashes)
    for line in failures:
        print(line)
    if failures:
        print(f"{len(failures)} difference(s) from {shown(golden_path)} ({len(hashes)} files generated)")
        print(how_to_see(failures))
        return 1
    print(f"ok: {len(hashes)} files of {len(traces())} traces match {shown(golden_path)}")
    return 0


def update(gen: str) -> int:
    with tempfile.TemporaryDirectory(prefix="golden-hashes-") as tmp:
        hashes, problems = generate_all(gen, Path(tmp), traces())
    if problems:
        print("\n".join(problems))
        return 1
    GOLDEN.write_text(golden_text(hashes))
    print(f"updated {GOLDEN.relative_to(ROOT)}: {len(hashes)} files of {len(traces())} traces")
    return 0


def generate_into(gen: str, folder: Path, names: list[str]) -> int:
    unknown = sorted(set(names) - set(traces()))
    if unknown:
        raise SystemExit(f"no such trace: {', '.join(unknown)} (one of: {' '.join(traces())})")
    if folder.exists() and any(folder.iterdir()):
        raise SystemExit(f"{folder}: not empty (generate writes a fresh folder)")
    _, problems = generate_all(gen, folder, names or traces())
    print("\n".join(problems) if problems else f"wrote {len(names or traces())} traces' folders and listings to {folder}")
    return 1 if problems else 0


def self_test(gen: str) -> int:
    """check() with a generator that changes one byte of softmax's forward.cu and of layer_norm's
    fused listing must fail naming those two files and nothing else; with the real generator it
    must pass against a golden file written from the real generator's output."""
    with tempfile.TemporaryDirectory(prefix="golden-hashes-self-test-") as tmp:
        golden = Path(tmp) / "outputs.sha256"
        hashes, problems = generate_all(gen, Path(tmp) / "real", traces())
        golden.write_text(golden_text(hashes))
        mutant = Path(tmp) / "thunder-gen-mutant"
        mutant.write_text(f"""#!/bin/sh
# {gen}, but with one byte of softmax's forward.cu and of layer_norm's fused listing changed.
out=$(mktemp) && trap 'rm -f "$out"' EXIT
"{gen}" "$@" >"$out" || exit $?
case "$*" in
  *examples/softmax.json\\ -o\\ *) sed -i '1s/^./X/' "$3/forward.cu" ;;
  *examples/layer_norm.json\\ --emit\\ fused) sed -i '1s/^./X/' "$out" ;;
esac
cat "$out"
""")
        mutant.chmod(0o755)
        print("with the real generator:")
        passed = check(gen, golden) == 0 and not problems
        print("with one that changes two files:")
        report = io.StringIO()
        with contextlib.redirect_stdout(report):
            failed = check(str(mutant), golden) == 1
        print(report.getvalue())
        named = [line for line in report.getvalue().splitlines() if line.startswith("FAIL ")]
        expected = ["FAIL layer_norm/fused.txt:", "FAIL softmax/forward.cu:"]
        caught = failed and [line.split(" differs")[0] for line in named] == expected
    print("self-test:", "ok" if passed and caught else "FAILED",
          f"(real generator {'passes' if passed else 'fails'}; the mutant's two files {'are' if caught else 'are not'} reported alone)")
    return 0 if passed and caught else 1


def main(argv: list[str]) -> int:
    if len(argv) >= 2 and argv[0] in ("check", "update", "--self-test"):
        gen = str(Path(argv[1]).resolve())
        return {"check": check, "update": update, "--self-test": self_test}[argv[0]](gen)
    if len(argv) >= 3 and argv[0] == "generate":
        return generate_into(str(Path(argv[1]).resolve()), Path(argv[2]), argv[3:])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
