#!/usr/bin/env python3
"""Per-tensor summary of an importance-matrix GGUF (llama-imatrix's or runnel imatrix's).

    scripts/imatrix_summary.py FILE.gguf                 JSON summary on stdout
    scripts/imatrix_summary.py FILE.gguf OTHER.gguf      compare two files: per tensor the
                                                         relative difference of the column sums

The summary, per weight: "counts" (rows summed, per matrix), "sum" (the sum of in_sum2 over
every column) and "max" (its largest column); with the file's chunk_count / chunk_size.
tests/native/imatrix_test.cpp compares runnel imatrix against such a summary of a
llama-imatrix run (scripts/imatrix_reference.sh). Plain Python: a reader of the few GGUF
parts an imatrix file uses (no numpy, no gguf-py).
"""
import json
import math
import struct
import sys

# GGUF metadata value types -> struct format (scalars)
SCALARS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
STRING, ARRAY = 8, 9
F32 = 0


class Reader:
    def __init__(self, data):
        self.data = data
        self.pos = 0

    def take(self, fmt):
        v = struct.unpack_from("<" + fmt, self.data, self.pos)
        self.pos += struct.calcsize("<" + fmt)
        return v[0]

    def string(self):
        n = self.take("Q")
        s = self.data[self.pos:self.pos + n].decode("utf-8")
        self.pos += n
        return s

    def value(self, vtype):
        if vtype == STRING:
            return self.string()
        if vtype == ARRAY:
            etype = self.take("I")
            return [self.value(etype) for _ in range(self.take("Q"))]
        return self.take(SCALARS[vtype])


def read_imatrix(path):
    """{weight: (sums [n_mat][ne0], counts [n_mat])}, metadata dict."""
    with open(path, "rb") as f:
        r = Reader(f.read())
    if r.data[:4] != b"GGUF":
        sys.exit(f"{path}: not a GGUF file")
    r.pos = 4
    version = r.take("I")
    if version not in (2, 3):
        sys.exit(f"{path}: GGUF version {version}, expected 2 or 3")
    n_tensors, n_kv = r.take("Q"), r.take("Q")
    meta = {}
    for _ in range(n_kv):
        key = r.string()
        meta[key] = r.value(r.take("I"))
    if meta.get("general.type") != "imatrix":
        sys.exit(f"{path}: general.type is {meta.get('general.type')!r}, expected 'imatrix'")
    infos = []
    for _ in range(n_tensors):
        name = r.string()
        dims = [r.take("Q") for _ in range(r.take("I"))]
        ttype, offset = r.take("I"), r.take("Q")
        if ttype != F32:
            sys.exit(f"{path}: tensor {name} has type {ttype}, expected F32 (0)")
        infos.append((name, dims, offset))
    align = meta.get("general.alignment", 32)
    base = (r.pos + align - 1) // align * align
    tensors = {}
    for name, dims, offset in infos:
        n = math.prod(dims)
        values = struct.unpack_from(f"<{n}f", r.data, base + offset)
        ne0 = dims[0]
        tensors[name] = [list(values[i:i + ne0]) for i in range(0, n, ne0)]
    out = {}
    for name, rows in tensors.items():
        if name.endswith(".in_sum2"):
            weight = name[: -len(".in_sum2")]
            counts = [int(c[0]) for c in tensors[weight + ".counts"]]
            out[weight] = (rows, counts)
    return out, meta


def summary(path):
    entries, meta = read_imatrix(path)
    tensors = {}
    for weight in sorted(entries):
        rows, counts = entries[weight]
        flat = [v for row in rows for v in row]
        tensors[weight] = {"counts": counts, "sum": float(f"{sum(flat):.7g}"), "max": float(f"{max(flat):.7g}")}
    return {"chunk_count": meta.get("imatrix.chunk_count"), "chunk_size": meta.get("imatrix.chunk_size"),
            "tensors": tensors}


def compare(a_path, b_path):
    a, _ = read_imatrix(a_path)
    b, _ = read_imatrix(b_path)
    if sorted(a) != sorted(b):
        print(f"tensors differ: only in {a_path}: {sorted(set(a) - set(b))}; only in {b_path}: {sorted(set(b) - set(a))}")
    worst = []
    for weight in sorted(set(a) & set(b)):
        (ra, ca), (rb, cb) = a[weight], b[weight]
        fa = [v for row in ra for v in row]
        fb = [v for row in rb for v in row]
        total = abs(sum(fa) - sum(fb)) / max(abs(sum(fb)), 1e-30)
        cols = max(abs(x - y) / max(abs(y), 1e-30) for x, y in zip(fa, fb))
        worst.append((total, cols, weight, ca == cb))
    worst.sort(reverse=True)
    print(f"{len(worst)} tensors; counts equal in {sum(w[3] for w in worst)}")
    print("largest relative differences (sum over columns, largest single column):")
    for total, cols, weight, same in worst[:8]:
        print(f"  {weight:32s} sum {100 * total:7.3f}%  column {100 * cols:8.3f}%{'' if same else '  COUNTS DIFFER'}")
    totals = sorted(w[0] for w in worst)
    print(f"median relative difference of the sums: {100 * totals[len(totals) // 2]:.3f}%")


if __name__ == "__main__":
    if len(sys.argv) == 2:
        json.dump(summary(sys.argv[1]), sys.stdout, indent=1)
        print()
    elif len(sys.argv) == 3:
        compare(sys.argv[1], sys.argv[2])
    else:
        sys.exit(__doc__)
