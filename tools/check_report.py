"""What tools/check_against_torch.py and tools/check_distributed.py share: one line per compared
tensor, and a run over models (or traces) in which one's failure does not hide the others'."""
import time

import torch_reference


def compare_line(out, label, got, want, dt, tolerance_dt=None) -> int:
    """Writes '<label> <dt>[shape]: <max errors>: ok|MISMATCH' for got against want at the
    tolerance of tolerance_dt (dt's own by default); returns 1 on a mismatch, else 0."""
    c = torch_reference.compare(got, want.detach(), tolerance_dt or dt)
    out.write(f"{label} {dt}{list(want.shape)}: {c.summary()}: {'ok' if c.ok else 'MISMATCH'}\n")
    return 0 if c.ok else 1


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
