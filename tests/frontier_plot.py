#!/usr/bin/env python3
"""frontier_plot.py THUNDER_GEN WORK: `python -m thunder_gen.frontier` end to end.

The nanoGPT block's frontier drawn as SVG with a peer's point: the file is SVG, the command
reports as many plans as `explain --frontier --json` lists, and the picture has one marker per
plan, and one each for the chosen plan, the plan by bytes and the peer.
A trace with no backward, and a malformed --peer, are refused with a message and a non-zero exit.
"""
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
gen, work = sys.argv[1], Path(sys.argv[2])
work.mkdir(parents=True, exist_ok=True)
env = dict(os.environ, THUNDER_GEN=gen, PYTHONPATH=str(ROOT / "python"))
block = ROOT / "examples" / "corpus" / "nanogpt_block.json"
failures = []


def check(name, ok):
    print(("ok " if ok else "FAIL ") + name)
    if not ok:
        failures.append(name)


def plot(*args):
    return subprocess.run([sys.executable, "-m", "thunder_gen.frontier", *args], capture_output=True, text=True, env=env)


svg = work / "frontier.svg"
svg.unlink(missing_ok=True)
run = plot(str(block), "-o", str(svg), "--peer", "peer=96000:150", "--", "--time-slack", "5")
check("draws", run.returncode == 0 and svg.exists())
doc = json.loads(subprocess.run([gen, "explain", str(block), "--frontier", "--json", "--remat-objective", "time", "--time-slack", "5"],
                                capture_output=True, text=True, check=True).stdout)
check("reports the plans", run.stdout.startswith(f"{svg}: {len(doc['frontier'])} plans, the chosen one {doc['chosen']}"))
if svg.exists():
    root = ET.parse(svg).getroot()
    check("is svg", root.tag.endswith("svg"))
    def markers(gid):  # matplotlib writes each marker as a <use> in the artist's group
        group = next((e for e in root.iter() if e.get("id") == gid), None)
        return -1 if group is None else sum(1 for e in group.iter() if e.tag.endswith("use"))
    check("a marker per plan", markers("plans") == len(doc["frontier"]))
    check("the chosen, the plan by bytes, the peer", [markers(g) for g in ("chosen", "bytes-first", "peer-0")] == [1, 1, 1])
run = plot(str(ROOT / "examples" / "softmax.json"), "-o", str(work / "none.svg"))
check("no backward refused", run.returncode == 1 and "no backward" in run.stderr and not (work / "none.svg").exists())
run = plot(str(block), "-o", str(work / "bad.svg"), "--peer", "oops")
check("bad peer refused", run.returncode == 2 and "NAME=BYTES:MICROSECONDS" in run.stderr)
sys.exit(1 if failures else 0)
