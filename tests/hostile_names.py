#!/usr/bin/env python3
"""Every legal Python identifier must work as a value, input or trace name.

  hostile_names.py generate WORK       writes WORK/hostile_<k>.json (k < TRACES): traces whose
                                       values, inputs, outputs and trace names are C++ keywords,
                                       the predefined macros of g++ and nvcc, the macros of the
                                       runtime headers, the identifiers generated code uses, and
                                       names that would alias harness files; ctest then runs each
                                       through tests/check_example.sh (emu against LibTorch, nvcc,
                                       NVRTC)
  hostile_names.py macros WORK         checks the identifier scheme against every macro visible
                                       to generated code: preprocesses a generated folder in each
                                       build mode with -dM and fails if any macro name starts with
                                       one of src/support/generated_text.cpp's role prefixes, or (in a
                                       trace whose inputs are named like all of them) becomes an
                                       entry point's parameter as it is

Tools: thunder-gen as tools/thunder_gen_binary.py finds it ($THUNDER_GEN first); CXX, NVCC from the environment.
"""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
from thunder_gen_binary import find_thunder_gen  # noqa: E402
TRACES = 4

CPP_KEYWORDS = """alignas alignof and and_eq asm atomic_cancel atomic_commit atomic_noexcept auto bitand bitor
bool break case catch char char8_t char16_t char32_t class compl concept const consteval constexpr constinit
const_cast continue co_await co_return co_yield decltype default delete do double dynamic_cast else enum
explicit export extern false float for friend goto if inline int long mutable namespace new noexcept not
not_eq nullptr operator or or_eq private protected public reflexpr register reinterpret_cast requires return
short signed sizeof static static_assert static_cast struct switch synchronized template this thread_local
throw true try typedef typeid typename union unsigned using virtual void volatile wchar_t while xor xor_eq
final override import module transaction_safe transaction_safe_dynamic
__restrict__ __restrict restrict __global__ __device__ __host__ __shared__ __constant__ __managed__
__launch_bounds__ __forceinline__ __noinline__ __attribute__ __asm__ __asm typeof __typeof__ __extension__
__inline __inline__ __volatile__ __const __signed __signed__ __complex__ __real__ __imag__ __label__
__thread __int128 __float128 __builtin_va_list _Bool _Complex _Pragma __func__ __FUNCTION__
__PRETTY_FUNCTION__""".split()

# Named in the hardening issue, or well-known macros of the C and POSIX headers the runtime
# includes; and what the generator itself names (loop variables, harness locals, role-prefixed
# look-alikes, kernel-like names).
EXTRAS = """linux unix i386 errno NULL EOF NAN INFINITY HUGE_VAL stdin stdout stderr assert offsetof
va_arg va_start setjmp major minor st_atime isnan isinf signbit FLT_MAX INT64_MAX SIZE_MAX true false
int64_t uint64_t int32_t size_t ptrdiff_t std printf memcpy malloc free exit abort main argc argv
cudaGetLastError cudaMalloc cudaStream_t dim3 threadIdx blockIdx blockDim gridDim warpSize __syncthreads
tg tg_emu tg_kernels TG_UNROLL TG_HD TG_KERNEL_DIR TG_LAUNCH TG_NVRTC_HOST TG_GPU TG_INFINITY
i j k n row rows run runs lane d0 d1 d12 h stream out0 out1 cot0 grad0 saved0 in_x in_in_x
g_x g_g_x v_x c_x r_x w_x b_x s_x ix_x acc_x sum_x m2_x mean_x at_x both_x p_x x_1 v_x_1""".split()

ROLE_CASE = re.compile(r'case Role::\w+: return "(\w+)";')


def role_prefixes():
    prefixes = ROLE_CASE.findall((ROOT / "src" / "support" / "generated_text.cpp").read_text())
    if len(prefixes) < 10:
        sys.exit(f"hostile_names: found only {prefixes} as role prefixes in src/support/generated_text.cpp")
    return prefixes


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw).stdout


def macro_names(text):
    return {m.group(1) for m in re.finditer(r"^#define (\w+)", text, re.M)}


def predefined_macros():
    cxx, nvcc = os.environ.get("CXX", "g++"), os.environ.get("NVCC", "nvcc")
    names = macro_names(run([cxx, "-std=c++20", "-dM", "-E", "-x", "c++", "/dev/null"]))
    probe = Path(os.environ.get("TMPDIR", "/tmp")) / f"hostile_names_{os.getpid()}.cu"
    probe.write_text("int main() {}\n")
    try:
        dry = subprocess.run([nvcc, "--dryrun", "-std=c++17", "-c", str(probe), "-o", "/dev/null"], capture_output=True, text=True)
    finally:
        probe.unlink()
    names |= set(re.findall(r"-D(\w+)", dry.stdout + dry.stderr))
    return names


def runtime_identifiers():
    """Macros the runtime headers define, and every identifier in code an example generates."""
    names = set()
    for header in (ROOT / "templates").iterdir():
        names |= macro_names(header.read_text())
    return names


def code_identifiers(folder):
    names = set()
    for f in folder.iterdir():
        if f.suffix in (".cu", ".cpp"):
            code = re.sub(r"//[^\n]*|\"(?:\\.|[^\"\\])*\"", " ", f.read_text())
            names |= set(re.findall(r"\b[A-Za-z_]\w*\b", code))
    return names


def hostile_names(work):
    tg = find_thunder_gen()
    sample = work / "sample"
    names = set(CPP_KEYWORDS) | set(EXTRAS) | predefined_macros() | runtime_identifiers()
    for example in ("layer_norm", "gpt2_mlp", "cross_entropy", "dropout_p09"):
        run([tg, str(ROOT / "examples" / f"{example}.json"), "-o", str(sample / example)])
        names |= code_identifiers(sample / example)
    names = sorted(n for n in names if re.fullmatch(r"[A-Za-z_]\w*", n))
    return names


def trace(name, names, aliasing=False):
    """Inputs (all requiring grad, so the backward and the harness's grad_ and cotangent_ files
    see the names too), a chain of elementwise ops through the rest, a row sum, and outputs.
    With `aliasing`, more inputs whose harness files would alias others': one named like an
    input's gradient, one like an output's cotangent, one differing from another only in case."""
    split = max(2, len(names) // 3)
    inputs, values = names[:split], names[split:]
    if aliasing:
        taken = set(names)
        for alias in ("grad_" + inputs[0], "cotangent_" + values[-1], inputs[2].swapcase(), inputs[3] + "x" * 300):
            if alias not in taken:
                inputs.append(alias)
                taken.add(alias)
    shape = [3, 5]
    decl = lambda n, s=shape: {"name": n, "shape": s, "dtype": "f32"}
    ops, previous = [], inputs[0]
    prims = ["prims.add", "prims.mul", "prims.sub"]
    for k, v in enumerate(values[:-1]):
        other = inputs[(k + 1) % len(inputs)]
        if k % 7 == 6:
            ops.append({"op": "prims.tanh", "args": [previous], "out": [decl(v)]})
        else:
            ops.append({"op": prims[k % 3], "args": [previous, other], "out": [decl(v)]})
        previous = v
    ops.append({"op": "prims.sum", "args": [previous, [1]], "out": [decl(values[-1], [3])]})
    outputs = [values[-1], previous, values[len(values) // 2], inputs[1]]
    return {"format": "thunder-gen-trace", "version": 1, "name": name,
            "source": "tests/hostile_names.py: names that are keywords, macros and the generator's own identifiers",
            "inputs": [dict(decl(n), requires_grad=True) for n in inputs], "ops": ops, "outputs": outputs}


def generate(work):
    work.mkdir(parents=True, exist_ok=True)
    names = hostile_names(work)
    trace_names = ["int", "linux", "TG_UNROLL", "g_x"]
    for k in range(TRACES):
        chunk = names[k::TRACES]
        (work / f"hostile_{k}.json").write_text(json.dumps(trace(trace_names[k], chunk, aliasing=k == 0), indent=1))
    print(f"hostile_names: {len(names)} names in {TRACES} traces")


def header_parameters(header):
    """The parameter names the entry points of a generated header declare."""
    return set(re.findall(r"^    (?:const )?\w+\*? (\w+),$", header.read_text(), re.M))


def parameters_named_like_macros(tg, out, defined):
    """Generates a trace whose inputs are named like every macro a build mode sees (and its
    output like one more) and returns the macros that became an entry point's parameter as they
    are (src/support/generated_text.cpp, usable_as_parameter)."""
    names = sorted(n for n in defined if re.fullmatch(r"[A-Za-z_]\w*", n))
    decl = lambda n: {"name": n, "shape": [2], "dtype": "f32"}
    ops, previous = [], names[0]
    for k, name in enumerate(names[1:]):
        ops.append({"op": "prims.add", "args": [previous, name], "out": [decl(f"sum{k}")]})
        previous = f"sum{k}"
    doc = {"format": "thunder-gen-trace", "version": 1, "name": "macros", "source": "tests/hostile_names.py",
           "inputs": [decl(n) for n in names], "ops": ops, "outputs": [previous]}
    (out / "macros.json").write_text(json.dumps(doc))
    run([tg, str(out / "macros.json"), "-o", str(out / "macros")])
    return sorted(header_parameters(out / "macros" / "include" / "macros.h") & set(names))


def macros(work):
    """No macro any build mode sees starts with a role prefix, or is an entry point's parameter
    as it is."""
    tg, cxx, nvcc = find_thunder_gen(), os.environ.get("CXX", "g++"), os.environ.get("NVCC", "nvcc")
    out = work / "macros"
    run([tg, str(ROOT / "examples" / "gpt2_mlp.json"), "-o", str(out)])
    modes = {
        "emu (g++)": [cxx, "-std=c++20", "-x", "c++", "-I", str(out), "-dM", "-E"],
        "nvcc": [nvcc, "-std=c++17", "-arch=sm_90", "-x", "cu", "-I", str(out), "-E", "-Xcompiler", "-dM"],
        "nvrtc host (g++)": [cxx, "-std=c++20", "-x", "c++", "-DTG_GPU", "-DTG_NVRTC_HOST", "-DTG_KERNEL_DIR=\"x\"", "-I", str(out),
                             "-I", "/usr/local/cuda/include", "-dM", "-E"],
    }
    prefixes = role_prefixes()
    failures, seen, every_macro = 0, 0, set()
    for mode, cmd in modes.items():
        for source in ("forward.cu", "backward.cu", "harness.cpp"):
            defined = macro_names(run(cmd + [str(out / source)]))
            seen = max(seen, len(defined))
            every_macro |= defined
            for name in sorted(defined):
                if any(name.startswith(p) for p in prefixes):
                    print(f"hostile_names: {mode}, {source}: macro {name} starts with a role prefix")
                    failures += 1
    # The public header in the GNU dialects users' programs default to (g++ and gcc define linux
    # and unix there).
    header = out / "include" / "gpt2_mlp.h"
    every_macro |= macro_names(run([cxx, "-std=gnu++20", "-x", "c++", "-dM", "-E", str(header)]))
    every_macro |= macro_names(run([os.environ.get("CC", "gcc"), "-std=gnu17", "-x", "c", "-dM", "-E", str(header)]))
    as_parameters = parameters_named_like_macros(tg, work, every_macro)
    for name in as_parameters:
        print(f"hostile_names: macro {name} is an entry point's parameter as it is")
    print(f"hostile_names: role prefixes {' '.join(prefixes)}; up to {seen} macros a build mode sees; {failures} starting with a prefix; "
          f"{len(every_macro)} macros in all, {len(as_parameters)} of them a parameter as they are")
    return 1 if failures or as_parameters or seen < 1000 else 0


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("generate", "macros"):
        sys.exit(__doc__)
    work = Path(sys.argv[2])
    sys.exit(generate(work) if sys.argv[1] == "generate" else macros(work))
