#!/usr/bin/env python3
"""Writes tests/pt2/hostile/: broken and hostile PT2 archives derived from torch-2.9/mlp.pt2.

    python3 tests/pt2/make_hostile.py [--base tests/pt2/torch-2.9/mlp.pt2] [--out tests/pt2/hostile]

Standard library only (zipfile to read the base archive, struct and zlib to write). Archives are
written the way torch's PyTorchStreamWriter (miniz) writes them, so that each file differs from
a real archive only in what its name says: every entry stored, its data 64-byte aligned by an
`FB` padding block in the local header's extra field, general-purpose flags 0x0808 (a data
descriptor after the data, UTF-8 names), zero times, and a ZIP64 end-of-central-directory record
and locator before the classic one. `control.pt2` is the base rewritten by this writer with
nothing changed, byte for byte the base (checked here): a reader must accept it. Each file's
fault is in hostile/README.md. The output is the same on every run.
"""
import argparse
import json
import random
import struct
import sys
import zipfile
import zlib
from dataclasses import dataclass, replace
from pathlib import Path

HERE = Path(__file__).resolve().parent
ALIGNMENT = 64
STORED, DEFLATED = 0, 8
FLAGS = 0x0808  # bit 3: sizes and CRC in a data descriptor; bit 11: UTF-8 names
NEEDS_ZIP64 = 0xFFFFFFFF


@dataclass(frozen=True)
class Entry:
    name: str
    data: bytes  # the bytes in the file: compressed for DEFLATED
    crc: int
    size: int  # uncompressed
    method: int = STORED
    central_size: int = None  # a size the central directory claims instead (through a ZIP64 extra field)


def stored(name, data):
    return Entry(name, data, zlib.crc32(data), len(data))


def deflated(name, chunks):
    """An entry deflated at level 9 from an iterable of byte chunks, never held whole."""
    z = zlib.compressobj(9, zlib.DEFLATED, -15)
    out, crc, size = [], 0, 0
    for chunk in chunks:
        crc, size = zlib.crc32(chunk, crc), size + len(chunk)
        out.append(z.compress(chunk))
    out.append(z.flush())
    return Entry(name, b"".join(out), crc, size, DEFLATED)


def padding(offset, name):
    """The local header's extra field that puts the data at the next multiple of ALIGNMENT."""
    pad = -(offset + 30 + len(name) + 4) % ALIGNMENT
    return b"FB" + struct.pack("<H", pad) + b"Z" * pad


def archive_bytes(entries):
    out, central = bytearray(), bytearray()
    for e in entries:
        name, offset = e.name.encode(), len(out)
        extra = padding(offset, name)
        out += struct.pack("<IHHHHHIIIHH", 0x04034B50, 0, FLAGS, e.method, 0, 0, 0, 0, 0, len(name), len(extra))
        out += name + extra + e.data
        out += struct.pack("<IIII", 0x08074B50, e.crc, len(e.data), e.size)
        size, cd_extra = e.size, b""
        if e.central_size is not None:
            size, cd_extra = NEEDS_ZIP64, struct.pack("<HHQ", 0x0001, 8, e.central_size)
        central += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 0, 45 if cd_extra else 0, FLAGS, e.method, 0, 0,
                               e.crc, len(e.data), size, len(name), len(cd_extra), 0, 0, 0, 0, offset)
        central += name + cd_extra
    cd_offset, n = len(out), len(entries)
    out += central
    zip64_end = len(out)
    out += struct.pack("<IQHHIIQQQQ", 0x06064B50, 44, 0x031E, 45, 0, 0, n, n, len(central), cd_offset)
    out += struct.pack("<IIQI", 0x07064B50, 0, zip64_end, 1)
    out += struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, n, n, len(central), cd_offset, 0)
    return bytes(out)


# ---- edits of the base archive's entries --------------------------------------------------


def read_entries(base):
    with zipfile.ZipFile(base) as z:
        return [stored(i.filename, z.read(i)) for i in z.infolist()]


def root_of(entries):
    return entries[0].name.split("/", 1)[0] + "/"


def find(entries, suffix):
    return next(i for i, e in enumerate(entries) if e.name == root_of(entries) + suffix)


def with_data(entries, suffix, data):
    out = list(entries)
    out[find(entries, suffix)] = stored(out[find(entries, suffix)].name, data)
    return out


def with_json(entries, suffix, edit):
    """entries with the JSON entry <root>/<suffix> replaced by edit(document)'s result."""
    doc = json.loads(entries[find(entries, suffix)].data)
    return with_data(entries, suffix, json.dumps(edit(doc)).encode())


def with_model(entries, edit):
    def apply(doc):
        edit(doc)
        return doc
    return with_json(entries, "models/model.json", apply)


def graph(doc):
    return doc["graph_module"]["graph"]


def node(doc, op):
    return next(n for n in graph(doc)["nodes"] if n["target"] == f"torch.ops.aten.{op}")


# ---- the hostile files --------------------------------------------------------------------


def not_a_zip(entries, base):
    return random.Random(0).randbytes(4096)


def truncated(entries, base):
    data = base.read_bytes()
    return data[: len(data) // 2]


def zip_bomb(entries, base):
    gib, chunk = 1 << 30, b" " * (1 << 20)  # JSON whitespace: a parser would read it all
    bomb = deflated(entries[find(entries, "models/model.json")].name, (chunk for _ in range(gib // len(chunk))))
    out = list(entries)
    out[find(entries, "models/model.json")] = bomb
    return archive_bytes(out)


def compressed_model_json(entries, base):
    model = entries[find(entries, "models/model.json")]
    out = list(entries)
    out[find(entries, "models/model.json")] = deflated(model.name, [model.data])
    return archive_bytes(out)


def path_traversal(entries, base):
    return archive_bytes(entries + [stored("../../evil", b"evil\n")])


def absolute_path(entries, base):
    return archive_bytes(entries + [stored("/etc/evil", b"evil\n")])


def huge_declared_size(entries, base):
    out = list(entries)
    i = find(entries, "data/weights/weight_0")
    out[i] = replace(out[i], central_size=1 << 40)
    return archive_bytes(out)


def duplicate_entry(entries, base):
    model = entries[find(entries, "models/model.json")]
    return archive_bytes(entries + [model])


def crc_mismatch(entries, base):
    out = list(entries)
    i = find(entries, "data/weights/weight_0")
    data = bytearray(out[i].data)
    data[0] ^= 0x01
    out[i] = replace(out[i], data=bytes(data))  # the CRC stays the original's
    return archive_bytes(out)


def crc_mismatch_model_json(entries, base):
    out = list(entries)
    i = find(entries, "models/model.json")
    data = bytearray(out[i].data)
    data[data.index(b" ")] = ord("\t")  # still JSON; the CRC stays the original's
    out[i] = replace(out[i], data=bytes(data))
    return archive_bytes(out)


def missing_archive_format(entries, base):
    return archive_bytes([e for e in entries if e.name != root_of(entries) + "archive_format"])


def archive_version_1(entries, base):
    return archive_bytes(with_data(entries, "archive_version", b"1"))


def big_endian(entries, base):
    return archive_bytes(with_data(entries, "byteorder", b"big"))


def schema_major_9(entries, base):
    return archive_bytes(with_model(entries, lambda doc: doc["schema_version"].update(major=9)))


def unknown_argument_kind(entries, base):
    def edit(doc):
        named = node(doc, "layer_norm.default")["inputs"][0]  # input: {"as_tensor": {"name": "x"}}
        named["arg"] = {"as_mystery": named["arg"]["as_tensor"]}
    return archive_bytes(with_model(entries, edit))


def unknown_dtype(entries, base):
    return archive_bytes(with_model(entries, lambda doc: graph(doc)["tensor_values"]["x"].update(dtype=99)))


def pickled_weights(entries, base):
    def edit(config):
        config["config"]["norm.weight"]["use_pickle"] = True
        return config
    return archive_bytes(with_json(entries, "data/weights/model_weights_config.json", edit))


def legacy_2_7_layout(entries, base):
    doc = json.loads(entries[find(entries, "models/model.json")].data)
    version = f"{doc['schema_version']['major']}.{doc['schema_version']['minor']}"
    return archive_bytes([stored("serialized_exported_program.json", entries[find(entries, "models/model.json")].data),
                          stored("version", version.encode())])


def updates_fc1_bias(doc, spec):
    """The graph computes fc1.bias + 1 first and returns it as its first output, of OutputSpec `spec`."""
    g = graph(doc)
    g["tensor_values"]["fc1_bias_updated"] = dict(g["tensor_values"]["p_fc1_bias"])
    g["nodes"].insert(0, {"target": "torch.ops.aten.add.Tensor",
                          "inputs": [{"name": "self", "arg": {"as_tensor": {"name": "p_fc1_bias"}}, "kind": 1},
                                     {"name": "other", "arg": {"as_float": 1.0}, "kind": 1}],
                          "outputs": [{"as_tensor": {"name": "fc1_bias_updated"}}], "metadata": {},
                          "is_hop_single_tensor_return": None})
    g["outputs"].insert(0, {"as_tensor": {"name": "fc1_bias_updated"}})
    doc["graph_module"]["signature"]["output_specs"].insert(0, spec)


def buffer_mutation(entries, base):
    """fc1.bias becomes a buffer that the graph also updates (bias + 1) and returns, as
    run_decompositions() writes a module's in-place buffer update (`self.b.add_(1.0)`)."""
    def edit(doc):
        for spec in doc["graph_module"]["signature"]["input_specs"]:
            if spec.get("parameter", {}).get("parameter_name") == "fc1.bias":
                spec.clear()
                spec["buffer"] = {"arg": {"name": "p_fc1_bias"}, "buffer_name": "fc1.bias", "persistent": True}
        graph(doc)["tensor_values"]["p_fc1_bias"]["requires_grad"] = False
        updates_fc1_bias(doc, {"buffer_mutation": {"arg": {"name": "fc1_bias_updated"}, "buffer_name": "fc1.bias"}})

    def as_buffer(config):
        config["config"]["fc1.bias"]["is_param"] = False
        config["config"]["fc1.bias"]["tensor_meta"]["requires_grad"] = False
        return config
    entries = with_json(entries, "data/weights/model_weights_config.json", as_buffer)
    return archive_bytes(with_model(entries, edit))


def parameter_mutation(entries, base):
    """The graph updates the parameter fc1.bias (bias + 1) and returns it as a parameter_mutation,
    which a training step's program never does (the optimizer updates parameters)."""
    def edit(doc):
        updates_fc1_bias(doc, {"parameter_mutation": {"arg": {"name": "fc1_bias_updated"}, "parameter_name": "fc1.bias"}})
    return archive_bytes(with_model(entries, edit))


def higher_order_op(entries, base):
    return archive_bytes(with_model(entries, lambda doc: node(doc, "gelu.default").update(target="torch.ops.higher_order.cond")))


def extension_op(entries, base):
    return archive_bytes(with_model(entries, lambda doc: node(doc, "gelu.default").update(target="#mylib:myop")))


def negative_size(entries, base):
    return archive_bytes(with_model(entries, lambda doc: graph(doc)["tensor_values"]["p_norm_weight"].update(sizes=[{"as_int": -3}])))


def range_wider_than_guards(entries, base):
    """dynamic/sliced_dynamic.pt2 with seq's range widened to start at 2, below what its guards
    allow: h[:, 5:]'s length, seq - 5, could be negative."""
    def edit(doc):
        for r in doc["range_constraints"].values():
            if r["min_val"] == 7:
                r["min_val"] = 2
    return archive_bytes(with_model(read_entries(HERE / "torch-2.9" / "dynamic" / "sliced_dynamic.pt2"), edit))


DEPTH = 10_000


def deep_nesting(entries, base):
    """The layer_norm's normalized_shape, [8], wrapped in 10,000 more lists. json.dumps cannot
    write that deep, so a marker is replaced in the text."""
    marker = "DEEP-NESTING-MARKER"

    def edit(doc):
        node(doc, "layer_norm.default")["inputs"][1]["arg"] = {"as_ints": marker}
    i = find(entries, "models/model.json")
    text = with_model(entries, edit)[i].data.decode()
    text = text.replace(json.dumps(marker), "[" * DEPTH + "8" + "]" * DEPTH)
    return archive_bytes(with_data(entries, "models/model.json", text.encode()))


HOSTILE = [not_a_zip, truncated, zip_bomb, compressed_model_json, path_traversal, absolute_path, huge_declared_size,
           duplicate_entry, crc_mismatch, crc_mismatch_model_json, missing_archive_format, archive_version_1, big_endian, schema_major_9,
           unknown_argument_kind, unknown_dtype, pickled_weights, legacy_2_7_layout, buffer_mutation, parameter_mutation, higher_order_op,
           extension_op, negative_size, range_wider_than_guards, deep_nesting]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", default=str(HERE / "torch-2.9" / "mlp.pt2"), help="the real archive to derive from")
    parser.add_argument("--out", default=str(HERE / "hostile"), help="output folder")
    a = parser.parse_args(argv)
    base, out = Path(a.base), Path(a.out)
    entries = read_entries(base)
    control = archive_bytes(entries)
    if control != base.read_bytes():
        sys.exit(f"make_hostile: rewriting {base} does not give its bytes back: the writer no longer matches torch's")
    out.mkdir(parents=True, exist_ok=True)
    (out / "control.pt2").write_bytes(control)
    for make in HOSTILE:
        data = make(entries, base)
        (out / f"{make.__name__}.pt2").write_bytes(data)
        print(f"{out / make.__name__}.pt2: {len(data)} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
