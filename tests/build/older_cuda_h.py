#!/usr/bin/env python3
"""older_cuda_h.py CUDA_INCLUDE VERSION OUT_DIR - write OUT_DIR/cuda.h: the
given cuda.h as an older release's would declare it, for building against
headers older than the ones installed (tests/build/older-headers.sh).

Every function introduced after VERSION loses its declaration, and
CUDA_VERSION becomes VERSION. When a function came is read from
cudaTypedefs.h beside cuda.h: PFN_<base>_v<release> names each ABI of a base
name with the release that introduced it, and the ABIs in release order are
the ELF names base, base_v2, base_v3... (the _ptsz/_ptds variants share their
ABI's release). Types newer than VERSION stay: they are not what a build
against older headers would miss."""
import collections
import os
import re
import sys


def releases(typedefs):
    """ELF name -> the CUDA release that introduced it."""
    by_base = collections.defaultdict(set)
    for m in re.finditer(r"PFN_(cu\w+?)_v(\d+)(?:_ptsz|_ptds)?\)", typedefs):
        by_base[m.group(1)].add(int(m.group(2)))
    out = {}
    for base, versions in by_base.items():
        for i, v in enumerate(sorted(versions)):
            name = base if i == 0 else f"{base}_v{i + 1}"
            for suffix in ("", "_ptsz", "_ptds"):
                out[name + suffix] = v
    return out


def strip(text, names):
    """text without the declarations `CUresult CUDAAPI name(...);` of names."""
    decl = re.compile(r"(?:__CUDA_DEPRECATED\s+)?CUresult\s+CUDAAPI\s+(cu\w+)\s*\([^;]*?\)\s*;")
    return decl.sub(lambda m: "" if m.group(1) in names else m.group(0), text)


def main():
    inc, version, out_dir = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    with open(os.path.join(inc, "cuda.h")) as f:
        cuda_h = f.read()
    with open(os.path.join(inc, "cudaTypedefs.h")) as f:
        since = releases(f.read())
    newer = {name for name, v in since.items() if v > version}
    text, n = re.subn(r"#define CUDA_VERSION \d+", f"#define CUDA_VERSION {version}", cuda_h)
    if n != 1:
        raise SystemExit("cuda.h: no single #define CUDA_VERSION")
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "cuda.h"), "w") as f:
        f.write(strip(text, newer))


if __name__ == "__main__":
    main()
