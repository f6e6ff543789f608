"""Writes src/frontend/core_aten_ops.def: the Core ATen opset (every aten overload tagged
`core` in the installed torch), the list `thunder-gen list-ops --aten` measures its coverage
against. Run with the pinned torch (tools/requirements.txt):

    .venv/bin/python tools/core_aten_snapshot.py > src/frontend/core_aten_ops.def
"""
import torch


def core_overloads():
    found = []
    for name in dir(torch.ops.aten):
        try:
            packet = getattr(torch.ops.aten, name)
            overloads = packet.overloads()
        except (AttributeError, RuntimeError):
            continue
        for overload in overloads:
            if torch.Tag.core in getattr(packet, overload).tags:
                found.append(f"aten.{name}.{overload}")
    return sorted(found)


def main():
    ops = core_overloads()
    version = torch.__version__.split("+")[0]
    print(f"// The Core ATen opset of torch {version}: the {len(ops)} aten overloads tagged `core`, over")
    print(f"// {len({op.split('.')[1] for op in ops})} ops. Written by tools/core_aten_snapshot.py; "
          "read by `thunder-gen list-ops --aten`.")
    print(f'TG_CORE_ATEN_VERSION("{version}")')
    for op in ops:
        print(f'TG_CORE_ATEN("{op}")')


if __name__ == "__main__":
    main()
