#!/usr/bin/env python3
"""ptx_check.py SOURCE.cu PTX PTXAS_LOG: what nvcc made of a generated file (standard library only).

1. Wide accesses: for every kernel with a run loop (tg::load_run / tg::store_run, or a row
   kernel's tg::load_run_to<N> / tg::store_run_from<N>), each run of
   N elements of S bytes (8 or 16 in all) must appear in that kernel's PTX as one vector access
   of N*S bytes: ld.global(.nc).v4.f32 for four floats, st.global.v4.u16 for four bf16 (and
   the PTX holds at least as many of each size as the source has runs).
   And no operand a pointwise run loop reads a run of at a time is read element by element: the
   index code of each tg::load in the loop's lane body, and in the element function the lanes
   call (with the dims the lane declares, and i as it passes it), is evaluated (C integer
   arithmetic) for a few runs and every
   lane, and one whose lanes read N neighbouring elements from a multiple of N (a contiguous
   reshape or slice of the operand, whatever its index code says) must have been a run too, when
   N*S is 8 or 16 bytes.
2. No spills: every function ptxas reports has "0 bytes spill stores, 0 bytes spill loads",
   with one named exception: cold paths of accurate math. An IEEE division or reciprocal
   (div.rn / rcp.rn .f32 or .f64, what `a / b` compiles to without fast math) becomes a fast path
   and a subroutine call for subnormal and extreme operands, and sin/cos/tan reduce huge
   arguments (Payne-Hanek, the __cudart_i2opi table) in a local array; ptxas reports the
   registers saved around those as spills. A function whose PTX has either may spill at most 64
   bytes, and its line says so; any other spill fails.

Prints one line per kernel and exits 1 on any failure.
"""
import re
import sys

SIZES = {"float": 4, "double": 8, "tg::bfloat16": 2, "tg::half": 2, "bfloat16": 2, "half": 2, "bool": 1,
         "int64_t": 8, "int32_t": 4, "int16_t": 2, "int8_t": 1, "uint8_t": 1}
PTX_BYTES = {"8": 1, "16": 2, "32": 4, "64": 8}  # a PTX type's bits -> bytes


def vector_access_bytes(text, op):
    """Sizes in bytes of the vector accesses `op` (ld.global / st.global) in a PTX entry, one item
    per instruction: ld.global.nc.v4.f32 is 16 bytes, st.global.v4.u16 is 8."""
    return [int(w) * PTX_BYTES[bits] for w, bits in re.findall(rf"{op}(?:\.nc)?\.v(2|4)\.[a-z]+(8|16|32|64)\b", text)]


def kernels(source):
    """{name: (parameter storage types by name, body)} of the extern "C" __global__ kernels."""
    out = {}
    for m in re.finditer(r'extern "C" __global__ void __launch_bounds__\(\d+\) (\w+)\(([^)]*)\) \{', source):
        params = {}
        for p in m.group(2).split(","):
            pm = re.match(r"\s*(?:const )?([\w:]+)\*? __restrict__ (\w+)", p)
            if pm:
                params[pm.group(2)] = pm.group(1)
        end = source.find('\n}\n', m.end())
        out[m.group(1)] = (params, source[m.end():end])
    return out


def element_functions(source):
    """{name: (parameter list, body)} of the kernels' element functions, which a pointwise kernel's
    lanes call."""
    out = {}
    for m in re.finditer(r"__device__ __forceinline__ void (\w+)\(([^)]*)\) \{", source):
        params = " ".join(m.group(2).split())  # (a list past 100 columns is wrapped one item a line)
        out[m.group(1)] = (params, source[m.end():source.find("\n}\n", m.end())])
    return out


def first_argument(args):
    """The first of a call's comma-separated arguments (commas inside parentheses are not separators)."""
    depth = 0
    for k, c in enumerate(args):
        depth += c == "("
        depth -= c == ")"
        if c == "," and depth == 0:
            return args[:k]
    return args


def joined(lines):
    """The lines with a call wrapped one argument a line (a list past 100 columns) joined back
    into the one line it would otherwise be."""
    out, pending = [], ""
    for line in lines:
        stripped = line.strip()
        if not pending and (stripped.startswith("//") or not stripped.endswith(("(", ","))):
            out.append(line)
            continue
        pending += line.rstrip() if not pending else stripped if pending.endswith("(") else " " + stripped
        if not stripped.endswith(("(", ",")):
            out.append(pending)
            pending = ""
    return out + ([pending] if pending else [])


def lane_lines(lines, functions):
    """The lane body's lines, each call of an element function followed by its body's lines, with
    its element index first: `const int64_t i = <the index the lane passes>;` (index code is int or
    int64_t; the evaluator computes in Python integers either way)."""
    out = []
    for line in joined(lines):
        out.append(line)
        call = re.match(r"\s*(\w+)\((.*)\);$", line)
        if call and call.group(1) in functions:
            params, body = functions[call.group(1)]
            if params.startswith(("int64_t i,", "int i,")):
                out.append(f"const int64_t i = {first_argument(call.group(2))};")
            out += body.split("\n")
    return out


class Unsupported(Exception):
    """Index code this evaluator does not follow (a guard's ?:, a call): the load is not judged."""


def compile_index(expr):
    """C integer expression `expr` (+ - * / % and parentheses over integers and names) as a
    function of an environment {name: int}, with C's truncating / and %. Parsed once, so that
    many runs can be evaluated; Unsupported for code it does not follow (now, or when called
    with a name the environment lacks or a divisor of 0)."""
    tokens = re.findall(r"\d+|\w+|\S", expr)
    at = 0

    def peek():
        return tokens[at] if at < len(tokens) else None

    def take():
        nonlocal at
        at += 1
        if at > len(tokens):
            raise Unsupported(expr)
        return tokens[at - 1]

    def name(t):
        def value(env):
            if t not in env:
                raise Unsupported(expr)
            return env[t]
        return value

    def atom():
        t = take()
        if t == "(":
            v = total()
            if take() != ")":
                raise Unsupported(expr)
            return v
        if t == "-":
            inner = atom()
            return lambda env: -inner(env)
        if t.isdigit():
            return lambda env, k=int(t): k
        if re.fullmatch(r"[A-Za-z_]\w*", t) and peek() not in ("(", "["):
            return name(t)
        raise Unsupported(expr)

    def divide(op, v, w):
        if w == 0:
            raise Unsupported(expr)
        q = abs(v) // abs(w) * (1 if (v < 0) == (w < 0) else -1)  # C truncates toward zero
        return q if op == "/" else v - q * w

    def product():
        v = atom()
        while peek() in ("*", "/", "%"):
            op, w, left = take(), atom(), v
            v = ((lambda env, a=left, b=w: a(env) * b(env)) if op == "*" else
                 (lambda env, a=left, b=w, o=op: divide(o, a(env), b(env))))
        return v

    def total():
        v = product()
        while peek() in ("+", "-"):
            op, w, left = take(), product(), v
            v = (lambda env, a=left, b=w: a(env) + b(env)) if op == "+" else (lambda env, a=left, b=w: a(env) - b(env))
        return v

    f = total()
    if peek() is not None:
        raise Unsupported(expr)
    return f


def sampled_runs(runs):
    """The runs whose lanes are evaluated: every one of a small kernel, else the first 64 (where
    an inner dim that 4 does not divide shows, such as rows of 17) and 64 spread over the rest.
    A run's lanes may be neighbours by chance (a row of 17 starting at a multiple of 4), so a few
    runs are not enough to tell that an operand could have been read a run at a time."""
    if runs <= 1024:
        return list(range(runs))
    return sorted(set(range(64)) | {runs * k // 64 for k in range(64)} | {runs - 1})


def lane_loads(body, functions):
    """(operand, lanes, [offsets of lane 0..lanes-1 for each sampled run]) for each tg::load in a
    pointwise kernel's run loop (or the element function it calls: `functions`), whose index code
    could be evaluated."""
    n = re.search(r"const (?:int64_t|int) n = (\d+);", body)
    loop = re.search(r"for \((?:int64_t|int) run = [^;]*; run < runs;.*?TG_UNROLL for \(int lane = 0; lane < (\d+); \+\+lane\) \{\n(.*?)\n    \}\n",
                     body, re.S)
    if not n or not loop:
        return []
    lanes, lines = int(loop.group(1)), lane_lines(loop.group(2).split("\n"), functions)
    runs = int(n.group(1)) // lanes
    samples = sampled_runs(runs)
    steps = []  # (name of an index, or None for a load; (operand, code) of a load; its compiled code)
    for line in lines:
        d = re.match(r"\s*const (?:int64_t|int) (\w+) = (.*);$", line)
        load = re.match(r"\s*const [\w:]+ \w+ = tg::load\((\w+), (.*)\);$", line)
        try:
            if d:
                steps.append((d.group(1), None, compile_index(d.group(2))))
            elif load:
                steps.append((None, (load.group(1), load.group(2)), compile_index(load.group(2))))
        except Unsupported:
            continue
    found = {}
    for run in samples:
        for lane in range(lanes):
            env = {"run": run, "lane": lane}
            for index, load, code in steps:
                try:
                    if index:
                        env[index] = code(env)
                    else:
                        found.setdefault(load, []).append(code(env))
                except Unsupported:
                    continue
    out = []
    for (operand, _), offsets in found.items():
        if len(offsets) == len(samples) * lanes:
            out.append((operand, lanes, [offsets[k:k + lanes] for k in range(0, len(offsets), lanes)]))
    return out


def contiguous_runs(offsets, lanes):
    """Do the lanes of every sampled run read `lanes` neighbours, from a multiple of `lanes`?"""
    return all(o[0] % lanes == 0 and o == list(range(o[0], o[0] + lanes)) for o in offsets)


def ptx_entries(ptx):
    """{entry name: its PTX text}."""
    out = {}
    starts = [(m.start(), m.group(1)) for m in re.finditer(r"\.entry (\w+)\(", ptx)]
    for k, (at, name) in enumerate(starts):
        out[name] = ptx[at:starts[k + 1][0] if k + 1 < len(starts) else len(ptx)]
    return out


def main(cu, ptx_path, log_path):
    source, ptx, log = open(cu).read(), open(ptx_path).read(), open(log_path).read()
    entries = ptx_entries(ptx)
    failures = 0
    wide = 0
    allowed = 0
    functions = element_functions(source)
    for name, (params, body) in kernels(source).items():
        for operand, lanes, offsets in lane_loads(body, functions):
            size = SIZES.get(params.get(operand, ""), 0) * lanes
            if size in (8, 16) and contiguous_runs(offsets, lanes):
                print(f"{cu}: {name}: {operand} is read in runs of {lanes} neighbours element by element, "
                      f"not as one {size}-byte vector access (tg::load_run)")
                failures += 1
        lane_loop = re.search(r"TG_UNROLL for \(int lane = 0; lane < (\d+);", body)
        runs = [(kind, operand, lane_loop.group(1))  # pointwise runs (from any element: run * 4, (run % 192) * 4, ...)
                for kind, operand in re.findall(r"tg::(load|store)_run\((\w+), ", body)] if lane_loop else []
        runs += [(kind, operand, lanes)  # a row kernel's runs of the row part a thread holds
                 for kind, lanes, operand in re.findall(r"tg::(load|store)_run_(?:to|from)<(\d+)>\((\w+),", body)]
        if not runs:
            continue
        text = entries.get(name)
        if text is None:
            print(f"{cu}: {name}: no PTX entry")
            failures += 1
            continue
        expected = {}
        for kind, operand, lanes in runs:
            size = SIZES.get(params.get(operand, ""), 0) * int(lanes)
            if size not in (8, 16):
                continue  # a narrower run: no single vector access to look for
            op = "ld.global" if kind == "load" else "st.global"
            expected[(op, size)] = expected.get((op, size), 0) + 1
            if size not in vector_access_bytes(text, op):
                print(f"{cu}: {name}: the {size}-byte {kind} run of {operand} is not one {size}-byte {op} vector access")
                failures += 1
            else:
                wide += 1
        for (op, size), count in expected.items():  # (each run in the source at least one instruction)
            found = vector_access_bytes(text, op).count(size)
            if 0 < found < count:
                print(f"{cu}: {name}: {count} {size}-byte {op} runs in the source, {found} such vector accesses in the PTX")
                failures += 1
    spills = re.findall(r"Function properties for (\w+)\n\s*\d+ bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", log)
    if not spills and "__global__" in source:
        print(f"{cu}: ptxas reported no functions (was -Xptxas -v given?)")
        failures += 1
    for function, stores, loads in spills:
        if stores == "0" and loads == "0":
            continue
        cold = re.search(r"(div|rcp)\.rn\.f(32|64)|__cudart_i2opi_[fd]", entries.get(function, ""))
        if cold and int(stores) <= 64 and int(loads) <= 64:
            print(f"{cu}: {function}: {stores} bytes spilled, {loads} reloaded around accurate math's cold path "
                  f"({'division' if cold.group(1) else 'trig reduction'}; allowed)")
            allowed += 1
        else:
            print(f"{cu}: {function}: ptxas spills {stores} bytes, reloads {loads}")
            failures += 1
    regs = [int(r) for r in re.findall(r"Used (\d+) registers", log)]
    print(f"{cu}: {wide} wide run accesses as expected; {len(spills)} functions, "
          f"{'no spills' if not allowed else f'no spills but {allowed} around math cold paths'}"
          f"{', at most ' + str(max(regs)) + ' registers' if regs else ''}" if not failures else f"{cu}: {failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(main(*sys.argv[1:]))
