"""The memory-time frontier of a trace's rematerialization plans, drawn.

    python -m thunder_gen.frontier trace.json -o frontier.svg [--peer torch.compile=96000:140.2] [-- THUNDER-GEN FLAGS]

runs `thunder-gen explain TRACE --frontier --json --remat-objective time` (flags after `--` are
passed on: --device-model, --time-slack, --plan-at, --tag ...) and draws its Pareto plans as a
staircase of activation bytes against predicted step time (the kernels' where the choice priced
them, else the cut's estimate), the chosen plan and the plan by bytes alone marked, and each --peer NAME=BYTES:MICROSECONDS as a point of its own (another tool's plan
costed by the same model). matplotlib, headless; the format follows the output's suffix. In an
SVG each kind of point is a group of its own: ids plans, chosen, bytes-first, peer-0, peer-1...
"""
import argparse
import json
import subprocess
import sys

from .binary import find_thunder_gen


def read_frontier(trace, flags=()):
    """The JSON `explain --frontier --json` prints for `trace` (docs/rematerialization.md)."""
    out = subprocess.run([find_thunder_gen(), "explain", str(trace), "--frontier", "--json", "--remat-objective", "time", *flags],
                         capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(out.stderr.strip() or f"thunder-gen exited with {out.returncode}")
    return json.loads(out.stdout)


def parse_peer(text):
    """NAME=BYTES:MICROSECONDS -> (name, bytes, us)."""
    name, sep, point = text.partition("=")
    bytes_text, colon, us_text = point.partition(":")
    if not sep or not colon or not name:
        raise argparse.ArgumentTypeError(f"--peer {text!r}: expected NAME=BYTES:MICROSECONDS")
    try:
        return name, int(bytes_text), float(us_text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--peer {text!r}: BYTES is an integer, MICROSECONDS a number") from None


def predicted(plan):
    """A plan's predicted step: its kernels' where the choice priced them, else the cut's estimate."""
    return plan["kernels_us"]["step"] if plan.get("kernels_us") else plan["predicted_us"]


def draw(doc, title, peers, output):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plans = doc["frontier"]
    if not plans:
        raise RuntimeError(doc.get("note", "no frontier: nothing is saved"))
    fig, ax = plt.subplots(figsize=(7, 4.5))
    kib = [p["activation_bytes"] / 1024 for p in plans]
    us = [predicted(p) for p in plans]
    ax.step(kib, us, where="post", color="tab:blue", alpha=0.5)
    ax.plot(kib, us, "o", color="tab:blue", gid="plans", label=f"thunder-gen frontier ({doc['device_model']} model)")
    if doc["chosen"] >= 0:
        ax.plot([kib[doc["chosen"]]], [us[doc["chosen"]]], "*", markersize=16, color="tab:red", gid="chosen", label="chosen")
    first = doc["bytes_first"]
    ax.plot([first["activation_bytes"] / 1024], [predicted(first)], "s", color="tab:gray", gid="bytes-first", label="by bytes alone")
    for i, (name, nbytes, micros) in enumerate(peers):
        ax.plot([nbytes / 1024], [micros], "D", color=f"C{i + 3}", gid=f"peer-{i}", label=name)
    ax.set_xlabel("activation bytes saved for the backward (KiB)")
    ax.set_ylabel("predicted step, forward + backward (us)")
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(output)
    plt.close(fig)


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    passed = argv[argv.index("--") + 1:] if "--" in argv else []
    own = argv[:argv.index("--")] if "--" in argv else argv
    parser = argparse.ArgumentParser(prog="python -m thunder_gen.frontier", description=__doc__.split("\n")[0])
    parser.add_argument("trace")
    parser.add_argument("-o", "--output", required=True, help="the picture: .svg, .png or .pdf")
    parser.add_argument("--peer", action="append", type=parse_peer, default=[], help="NAME=BYTES:MICROSECONDS, repeatable")
    args = parser.parse_args(own)
    try:
        doc = read_frontier(args.trace, passed)
        draw(doc, args.trace, args.peer, args.output)
    except RuntimeError as e:
        print(f"thunder_gen.frontier: error: {e}", file=sys.stderr)
        return 1
    print(f"{args.output}: {len(doc['frontier'])} plans, the chosen one {doc['chosen']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
