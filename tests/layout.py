#!/usr/bin/env python3
"""The shape of src/, checked (docs/architecture.md):

- every file is in a stage folder, and a folder includes only the folders before it in STAGES
  (the stages of one rank, frontend, lower and schedule, include none of each other);
- no file is over MAX_FILE_LINES lines;
- no function is over MAX_FUNCTION_LINES lines (measured by lizard, pinned in
  tools/requirements.txt; without it that check is reported as skipped, and fails under --strict).

Usage: layout.py [--strict] [--includes] [SRC_DIR]   (default: the checkout's src/; --includes:
                                                     the include direction only)
       layout.py --self-test                 (the checks fail on a tree made to break them)
Prints one line per violation, then a summary; exits 1 when there is any.
"""
import os
import re
import sys
import tempfile

# Stage folder -> rank. A file may include a file of its own folder or of a lower rank.
STAGES = {
    "support": 0,
    "ir": 1,
    "ops": 2,
    "frontend": 3, "lower": 3, "schedule": 3,
    "autograd": 4,
    "codegen": 5,
    "output": 6,
    "driver": 7,
}
MAX_FILE_LINES = 600
MAX_FUNCTION_LINES = 80
SOURCE_SUFFIXES = (".h", ".cpp", ".def")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def source_files(src):
    for folder, _, names in sorted(os.walk(src)):
        for name in sorted(names):
            if name.endswith(SOURCE_SUFFIXES):
                yield os.path.relpath(os.path.join(folder, name), src)


def include_problems(src, path):
    """A line per include of `path` (relative to src) that points at no stage before its own."""
    stage = path.split(os.sep)[0] if os.sep in path else None
    if stage not in STAGES:
        return [f"src/{path}: not in a stage folder ({', '.join(STAGES)})"]
    problems = []
    with open(os.path.join(src, path), encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            m = INCLUDE.match(line)
            if not m:
                continue
            target = m.group(1)
            target_stage = target.split("/")[0] if "/" in target else None
            if target_stage not in STAGES or not os.path.exists(os.path.join(src, target)):
                problems.append(f"src/{path}:{number}: includes \"{target}\", which is no file of a stage folder (write <stage>/<file>)")
            elif target_stage != stage and STAGES[target_stage] >= STAGES[stage]:
                problems.append(f"src/{path}:{number}: {stage}/ includes {target}: {target_stage}/ does not come before {stage}/")
    return problems


def size_problems(src, path):
    with open(os.path.join(src, path), encoding="utf-8") as f:
        lines = sum(1 for _ in f)
    return [f"src/{path}: {lines} lines (at most {MAX_FILE_LINES})"] if lines > MAX_FILE_LINES else []


def function_problems(src, paths):
    try:
        import lizard
    except ImportError:
        return None
    problems = []
    for path in paths:
        if not path.endswith((".h", ".cpp")):
            continue
        for fn in lizard.analyze_file(os.path.join(src, path)).function_list:
            if fn.length > MAX_FUNCTION_LINES:
                problems.append(f"src/{path}:{fn.start_line}: {fn.long_name.split('(')[0]} is {fn.length} lines (at most {MAX_FUNCTION_LINES})")
    return problems


def check(src, strict, includes_only=False):
    paths = list(source_files(src))
    problems = []
    for path in paths:
        problems += include_problems(src, path) + ([] if includes_only else size_problems(src, path))
    functions = [] if includes_only else function_problems(src, paths)
    if functions is None:
        print("layout: lizard is not installed: function lengths not checked" + (" (--strict: a failure)" if strict else ""))
        if strict:
            problems.append("function lengths not checked (pip install lizard, tools/requirements.txt)")
    else:
        problems += functions
    for p in problems:
        print(p)
    print(f"layout: {len(paths)} files in {len(STAGES)} stage folders, {len(problems)} problem(s)")
    return not problems


def self_test():
    """Each check fails on a tree made to break it, and passes on one that keeps it."""
    def tree(files):
        root = tempfile.mkdtemp()
        for path, text in files.items():
            os.makedirs(os.path.join(root, os.path.dirname(path)), exist_ok=True)
            with open(os.path.join(root, path), "w", encoding="utf-8") as f:
                f.write(text)
        return root
    good = {"ir/trace.h": "#pragma once\n", "ops/op.h": '#include "ir/trace.h"\n', "driver/main.cpp": '#include "ops/op.h"\nint main() { return 0; }\n'}
    long_body = "int f() {\n" + "  int x = 0;\n" * (MAX_FUNCTION_LINES + 5) + "  return x;\n}\n"
    broken = {
        "a back edge": {**good, "ir/trace.h": '#include "ops/op.h"\n'},
        "sibling stages": {**good, "lower/a.h": '#include "schedule/b.h"\n', "schedule/b.h": "\n"},
        "a bare include": {**good, "ops/op.h": '#include "trace.h"\n'},
        "a file outside the stages": {**good, "misc/x.h": "\n"},
        "a long file": {**good, "ops/big.cpp": "\n" * (MAX_FILE_LINES + 1)},
        "a long function": {**good, "ops/f.cpp": long_body},
    }
    ok = check(tree(good), strict=False)
    for what, files in broken.items():
        if what == "a long function" and function_problems(tree(good), []) is None:
            print("layout self-test: lizard missing, long-function case skipped")
            continue
        if check(tree(files), strict=False):
            print(f"layout self-test: {what} was not caught")
            ok = False
    print("layout self-test: " + ("passed" if ok else "FAILED"))
    return ok


if __name__ == "__main__":
    args = sys.argv[1:]
    if args == ["--self-test"]:
        sys.exit(0 if self_test() else 1)
    strict, includes_only = "--strict" in args, "--includes" in args
    args = [a for a in args if a not in ("--strict", "--includes")]
    src = args[0] if args else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")
    sys.exit(0 if check(os.path.normpath(src), strict, includes_only) else 1)
