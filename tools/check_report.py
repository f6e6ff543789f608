"""What tools/check_against_torch.py, tools/check_pt2.py and tools/check_distributed.py share: one
line per compared tensor, a model's results against eager's, and a run over models (or traces)
in which one's failure does not hide the others'."""
import time

import torch_reference


def compare_line(out, label, got, want, dt, tolerance_dt=None) -> int:
    """Writes '<label> <dt>[shape]: <max errors>: ok|MISMATCH' for got against want at the
    tolerance of tolerance_dt (dt's own by default); returns 1 on a mismatch, else 0."""
    c = torch_reference.compare(got, want.detach(), tolerance_dt or dt)
    out.write(f"{label} {dt}{list(want.shape)}: {c.summary()}: {'ok' if c.ok else 'MISMATCH'}\n")
    return 0 if c.ok else 1


def compare_results(out, model, expected, results, exact, dtype_name) -> int:
    """Each of `expected` ({file stem: eager tensor or None}) against the harness's results/<stem>.npy:
    missing ones fail; under bf16 autocast (model.autocast) a tensor beyond bf16's tolerance passes
    when it is as accurate as eager's against `exact` (f64) results. Returns the failure count."""
    from thunder_gen.eager_check import accuracy_line
    failures = 0
    for key, want in expected.items():
        path = results / f"{key}.npy"
        if want is None or not path.exists():
            out.write(f"{model.name}: {key}: {'no eager gradient' if want is None else 'not written by the harness'}: MISSING\n")
            failures += 1
            continue
        dt = dtype_name(want.dtype)
        got = torch_reference.load_npy(path, dt)
        if key in exact and not torch_reference.compare(got, want.detach(), "bf16").ok:
            failures += accuracy_line(out, f"{model.name}: {key}", got, want, exact[key])
            continue
        # Under bf16 autocast an f32 gradient comes through bf16 GEMMs, so bf16's tolerance holds.
        failures += compare_line(out, f"{model.name}: {key}", got, want, dt, "bf16" if model.autocast else None)
    return failures


def run_each(names, check) -> int:
    """Calls check(name) -> number of failures for each name, an exception counting as one (its
    message printed), and prints '<name>: matches PyTorch eager (T s)' or its failure count.
    Returns how many names had a failure."""
    failed = 0
    for name in names:
        start = time.time()
        try:
            failures = check(name)
        except Exception as e:  # one model's failure must not hide the others' results
            print(f"{name}: FAILED: {type(e).__name__}: {e}")
            failures = 1
        print(f"{name}: {'matches PyTorch eager' if failures == 0 else f'{failures} failures'} ({time.time() - start:.1f} s)",
              flush=True)
        failed += failures > 0
    return failed
