#!/usr/bin/env python3
"""Generate src/core/entries.def, the one table of wrapped driver entry points.

src/core/entries.def is committed, generated from the CUDA 13.0 cuda.h. A build
against headers of another release (configure compares CUDA_VERSION) runs this
script into the build tree instead, so that the table matches the cuda.h the
library is compiled with. By hand, when moving the committed table to newer
headers:

    tools/gen-entries.py /usr/local/cuda/include [SRCDIR] > src/core/entries.def

Every CUresult-returning function that cuda.h declares under its exact ELF name
(__CUDA_API_VERSION_INTERNAL exposes _v2, _ptsz, _ptds and the legacy names),
and every one that SRCDIR/core/compat.h declares for older headers (SRCDIR:
the library's src/, by default next to this script), becomes one line:

    GA_ENTRY(name, class, pt, stream, (params), (args))    plain pass-through
    GA_HOOKED(name, family, class, pt, stream, (params), (args), (hook params))

class   r      never writes device memory and enqueues no work: plain pass-through
        d      writes memory but maps none (copies and memsets): bumps the write
               epoch, not the map epoch
        w      may write device memory, and map or unmap it: bumps both epochs
               (default-deny: any function not known to be read-only is a writer)
family  the hook: src/core/hooks.h declares ga_hook_<family>(id, params...)
pt      1 for the per-thread-default-stream variants (_ptsz/_ptds)
stream  the CUstream the call enqueues work on, GA_DEFSTREAM for synchronous
        copies/memsets and the old launch API (default stream), GA_HIDDENSTREAM
        for a call whose streams are inside its parameters, GA_NOSTREAM for
        calls that enqueue nothing

The table also defines GA_ENTRIES_CUDA_VERSION, the CUDA_VERSION of the cuda.h
it was generated from; src/core/common.h refuses to compile against another.
"""
import os
import re
import subprocess
import sys

OLDEST = 12000  # the oldest cuda.h the library builds against

# Entry points whose wrapper calls a feature hook. Variants of one family share
# a prototype; the wrapper passes its entry id so the hook knows the variant.
HOOKS = {
    "cuGetProcAddress": "getproc4",
    "cuGetProcAddress_v2": "getproc5",
    "cuMemAlloc_v2": "alloc",
    "cuMemAllocPitch_v2": "alloc_pitch",
    "cuMemFree_v2": "free",
    "cuMemGetInfo_v2": "meminfo",
    "cuMemcpyDtoH_v2": "dtoh",
    "cuMemcpyDtoH_v2_ptds": "dtoh",
    "cuMemcpyDtoHAsync_v2": "dtoh_async",
    "cuMemcpyDtoHAsync_v2_ptsz": "dtoh_async",
    "cuMemcpy": "memcpy",
    "cuMemcpy_ptds": "memcpy",
    "cuMemcpyAsync": "memcpy_async",
    "cuMemcpyAsync_ptsz": "memcpy_async",
    "cuLaunchKernel": "launch",
    "cuLaunchKernel_ptsz": "launch",
    "cuLaunchKernelEx": "launch_ex",
    "cuLaunchKernelEx_ptsz": "launch_ex",
    "cuStreamCreate": "stream_create",
    "cuStreamCreateWithPriority": "stream_create_prio",
    "cuStreamDestroy_v2": "stream_destroy",
    "cuStreamAttachMemAsync": "stream_attach",
    "cuStreamAttachMemAsync_ptsz": "stream_attach",
    "cuStreamSetAttribute": "stream_set_attr",
    "cuStreamSetAttribute_ptsz": "stream_set_attr",
    "cuStreamSynchronize": "stream_sync",
    "cuStreamSynchronize_ptsz": "stream_sync",
    "cuStreamQuery": "stream_query",
    "cuStreamQuery_ptsz": "stream_query",
    "cuCtxSynchronize": "ctx_sync",
    "cuCtxSynchronize_v2": "ctx_sync_v2",
    "cuModuleUnload": "module_unload",
    "cuModuleLoadData": "module_load",
    "cuModuleLoadDataEx": "module_load_ex",
    "cuModuleLoadFatBinary": "module_load_fatbin",
    "cuLibraryLoadData": "library_load",
    "cuLibraryUnload": "library_unload",
    "cuCtxDestroy_v2": "ctx_destroy",
    "cuDevicePrimaryCtxReset_v2": "primary_reset",
    "cuDevicePrimaryCtxRelease_v2": "primary_reset",
    "cuEventSynchronize": "event_sync",
    "cuStreamBeginCapture_v2": "capture_begin",
    "cuStreamBeginCapture_v2_ptsz": "capture_begin",
    "cuStreamBeginCapture": "capture_begin_v1",
    "cuStreamBeginCapture_ptsz": "capture_begin_v1",
    "cuStreamBeginCaptureToGraph": "capture_begin_graph",
    "cuStreamBeginCaptureToGraph_ptsz": "capture_begin_graph",
    "cuStreamEndCapture": "capture_end",
    "cuStreamEndCapture_ptsz": "capture_end",
    "cuMemFreeAsync": "free_async",
    "cuMemFreeAsync_ptsz": "free_async",
    "cuIpcGetMemHandle": "ipc_get",
    "cuIpcOpenMemHandle_v2": "ipc_open",
    "cuMemGetHandleForAddressRange": "range_export",
    "cuMemGetAddressRange_v2": "addr_range",
    "cuMemAllocAsync": "alloc_async",
    "cuMemAllocAsync_ptsz": "alloc_async",
    "cuMemAllocFromPoolAsync": "alloc_pool_async",
    "cuMemAllocFromPoolAsync_ptsz": "alloc_pool_async",
    "cuMemPoolSetAttribute": "pool_set_attr",
    "cuMemPoolGetAttribute": "pool_get_attr",
    "cuMemHostAlloc": "host_alloc",
    "cuMemAllocHost_v2": "host_alloc_v2",
    "cuMemFreeHost": "host_free",
    "cuMemcpyHtoD_v2": "htod",
    "cuMemcpyHtoD_v2_ptds": "htod",
    "cuMemcpyHtoDAsync_v2": "htod_async",
    "cuMemcpyHtoDAsync_v2_ptsz": "htod_async",
}

# Hooked entry points that older headers lack and compat.h cannot declare (their
# parameter types are newer too), with the CUDA_VERSION that introduced them:
# a table for older headers has no such entry, and src/hooks/ compiles their
# hook only from that version on.
HOOKS_SINCE = {
    "cuStreamBeginCaptureToGraph": 12030,
    "cuStreamBeginCaptureToGraph_ptsz": 12030,
}

# Functions that never write device memory and enqueue no work. Anything that
# does not match is a writer: a stale read is worse than a missed optimization.
# (cuPointerSetAttribute is one: marking memory for synchronous memory
# operations says a NIC may write it, and what was read of it must go.)
READ_ONLY = re.compile(r"""^cu(
      GetErrorString|GetErrorName|Init|DriverGetVersion|GetExportTable|GetProcAddress
    | (Stream|Ctx|Event)Synchronize|StreamQuery|StreamCreate|StreamDestroy|StreamBeginCapture
    | MemGetInfo|MemcpyDtoH|MemcpyAtoH
    | Device(Get|Can|Primary(CtxRetain|CtxGetState|CtxSetFlags)|Register|Unregister|TotalMem)
    | Ctx(Get|Set(Current|Limit|CacheConfig|SharedMemConfig|Flags)|PushCurrent|PopCurrent|Create|Record|WaitEvent|FromGreenCtx)
    | (Module|Library|Kernel|Func)(Get|Set|IsLoaded|Load$|Enumerate)
    | Occupancy
    | PointerGet
    | Mem(GetAddressRange|GetAllocationGranularity|GetAllocationProperties|GetAccess|HostGet|Pool(Get|Set|Create|Export|Import)|GetDefaultMemPool|GetMemPool|SetMemPool|RetainAllocationHandle|ExportToShareableHandle|ImportFromShareableHandle|GetHandleForAddressRange|RangeGetAttribute)
    | Stream(Get|IsCapturing)
    | Event(Create|Query|ElapsedTime|Destroy)
    | Graph(Create|Add|Get|Node|Clone|Destroy|DebugDot|KernelNode|Host|MemcpyNode|MemsetNode|ChildGraph|EventRecordNode|EventWaitNode|ExternalSemaphores|BatchMemOp|MemAlloc|MemFree|Instantiate|ExecGetFlags|ExecDestroy|Retain|Release|Conditional|ExecNode|ExecKernel|ExecMemcpy|ExecMemset|ExecHost|ExecChild|ExecEvent|ExecExternal|ExecBatch|ExecGet|ExecUpdate|InstantiateWith|Upload)
    | UserObject
    | TexObject|SurfObject|TexRef|SurfRef|Tensor
    | Link|ProfilerStart|ProfilerStop|Coredump|Logs|GreenCtx|DevResource|DevSm|Multicast(Get|Create)
    | ArrayGet|Array3DGet|MipmappedArrayGet
    | Ipc(Get)
    | FuncGet|Func
)""", re.X)


# Writers that only move or set bytes: a copy or a memset cannot turn a host
# range into device or managed memory, so what the tracker learned about host
# pointers (the map epoch) stands across them.
DATA_ONLY = re.compile(r"^cuMem(cpy|set)")


def preprocess(include_dir, src_dir):
    """cuda.h and core/compat.h as the library sees them: (CUDA_VERSION, text)."""
    src = ("#define __CUDA_API_VERSION_INTERNAL 1\n#include <cuda.h>\n"
           "#include \"core/compat.h\"\nint ga_cuda_version = CUDA_VERSION;\n")
    out = subprocess.run(["cc", "-E", "-P", "-I", include_dir, "-I", src_dir, "-x", "c", "-"],
                         input=src, capture_output=True, text=True, check=True).stdout
    flat = re.sub(r"\s+", " ", out)
    version = re.search(r"int ga_cuda_version = (\d+) ?;", flat)
    if not version:
        raise SystemExit("cuda.h defines no numeric CUDA_VERSION")
    return int(version.group(1)), flat


def prototypes(flat):
    for m in re.finditer(r"CUresult (cu[A-Z]\w*)\(([^;]*?)\);", flat):
        yield m.group(1), m.group(2).strip()


def split_params(params):
    if params in ("", "void"):
        return []
    parts, depth, cur = [], 0, ""
    for ch in params:
        if ch == "," and depth == 0:
            parts.append(cur.strip())
            cur = ""
            continue
        depth += ch == "("
        depth -= ch == ")"
        cur += ch
    parts.append(cur.strip())
    return parts


def param_name(p):
    m = re.search(r"(\w+)\s*(\[[^\]]*\])?$", p)
    if not m or m.group(1) in ("int", "char", "void", "size_t"):
        raise SystemExit(f"unnamed parameter: {p}")
    return m.group(1)


# Calls that enqueue work without a CUstream parameter: the old launch API runs
# on the default stream; the multi-device cooperative launch names its streams
# inside its parameters, which the tracker cannot follow (GA_HIDDENSTREAM: from
# then on every stream is presumed busy).
STREAM_OVERRIDES = {
    "cuLaunch": "GA_DEFSTREAM",
    "cuLaunchGrid": "GA_DEFSTREAM",
    "cuLaunchCooperativeKernelMultiDevice": "GA_HIDDENSTREAM",
}


def main():
    inc = sys.argv[1] if len(sys.argv) > 1 else "/usr/local/cuda/include"
    src_dir = sys.argv[2] if len(sys.argv) > 2 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "src")
    version, flat = preprocess(inc, src_dir)
    if version < OLDEST:
        raise SystemExit(f"cuda.h is CUDA_VERSION {version}: the library needs {OLDEST} or newer")
    seen = set()
    rows = []
    for name, params in prototypes(flat):
        if name in seen:
            continue
        seen.add(name)
        plist = split_params(params)
        names = [param_name(p) for p in plist]
        stream = next((n for p, n in zip(plist, names)
                       if re.match(r"(const )?CUstream \w+$", p)), None)
        cls = "r" if READ_ONLY.match(name) else "d" if DATA_ONLY.match(name) else "w"
        fam = HOOKS.get(name)
        if cls == "r" and not name.startswith("cuMemcpy"):
            stream = None  # a query that takes a stream enqueues no work on it
        if stream is None:
            stream = STREAM_OVERRIDES.get(name) or (
                "GA_DEFSTREAM" if re.match(r"cuMem(cpy|set)", name) else "GA_NOSTREAM")
        pt = 1 if re.search(r"_pt(sz|ds)$", name) else 0
        head = f"GA_HOOKED({name}, {fam}, {cls}" if fam else f"GA_ENTRY({name}, {cls}"
        row = f"{head}, {pt}, {stream}, ({params or 'void'}), ({', '.join(names)})"
        if fam:  # the hook's own parameter list: the runtime and entry id first
            row += ", (const ga_rt_t *rt, ga_id_t id" + "".join(", " + p for p in plist) + ")"
        rows.append((name, row + ")"))
    missing = {n for n in set(HOOKS) - seen if version >= HOOKS_SINCE.get(n, 0)}
    if missing:
        raise SystemExit(f"hooked entry points missing from cuda.h: {sorted(missing)}")
    print("/* Generated by tools/gen-entries.py from cuda.h: do not edit by hand.\n"
          " * One line per wrapped driver entry point; see that script for the columns. */")
    print(f"#ifndef GA_ENTRIES_CUDA_VERSION\n#define GA_ENTRIES_CUDA_VERSION {version}\n#endif")
    for _, row in sorted(rows):  # by name: the ids are then in strcmp order
        print(row)


if __name__ == "__main__":
    main()
