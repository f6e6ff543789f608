#!/usr/bin/env bash
# remat_plans.sh WORK TRACE...: every rematerialization plan computes the same gradients. Each
# trace is generated, built for host emulation (-O2) and checked against LibTorch autograd
# (thunder-gen-check) under plans other than the default (which example.<name>.emu checks):
# `save` on every symbol it calls; `recompute` on every symbol; a random set of symbol and @value
# policies (a fixed seed per trace); and an activation budget of half the default plan's.
# A random set whose policies contradict each other must be refused with exit 1 and a
# diagnostic, never produce a folder. Tools come from the environment, as for check_example.sh.
set -u
work=$1; shift
mkdir -p "$work" || exit 2
here=$(cd "$(dirname "$0")" && pwd)
pass=0 fail=0
for trace in "$@"; do
  name=$(basename "$trace" .json)
  # One plan per line: the generator flags.
  plans=$(python3 - "$trace" <<'PY'
import json, random, sys
t = json.load(open(sys.argv[1]))
symbols = sorted({op["op"] for op in t["ops"]})
values = [o["name"] for op in t["ops"] for o in op["out"]]
policies = ["save", "recompute", "prefer-save", "prefer-recompute"]
print(" ".join(f"--tag {s}=save" for s in symbols))
print(" ".join(f"--tag {s}=recompute" for s in symbols))
rng = random.Random(t["name"])
for _ in range(1):
    picks = rng.sample(symbols, k=min(2, len(symbols))) + ["@" + v for v in rng.sample(values, k=min(3, len(values)))]
    print(" ".join(f"--tag {p}={rng.choice(policies)}" for p in picks))
PY
)
  default=$("$THUNDER_GEN" "$trace" --emit plan | sed -n 's/.* bytes (\([0-9]*\) of them activations.*/\1/p')
  plans+=$'\n'"--activation-budget $((default / 2))"
  k=0
  while IFS= read -r flags; do
    dir="$work/$name.plan$k"
    if TG_FLAGS="$flags" TG_FAST=1 "$here/check_example.sh" emu "$trace" "$dir" >"$dir.log" 2>&1; then
      pass=$((pass + 1)); echo "ok $name plan $k: ${flags:-default}"
    elif grep -q "error: the rematerialization policies leave no plan" "$dir.log" && [ ! -e "$dir/out" ]; then
      pass=$((pass + 1)); echo "ok $name plan $k: ${flags:-default}: refused as contradictory"
    else
      fail=$((fail + 1)); echo "FAIL $name plan $k: ${flags:-default} (log: $dir.log)"; tail -5 "$dir.log"
    fi
    k=$((k + 1))
  done <<<"$plans"
done
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
