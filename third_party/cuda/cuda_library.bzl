"""cuda_library: compiles .cu files with nvcc for the H200 (sm_90) and wraps
the objects in a cc_library.

Each .cu file becomes one position-independent object through a genrule, so
Bazel can link it into tests (shared) and binaries (static) alike. The genrule
runs sandboxed: every header a .cu file includes must be listed in `hdrs`
(its own) or `cu_deps_hdrs` (headers of other targets it includes).
"""

load("@local_cuda//:defs.bzl", "NVCC")

# -Werror through the host compiler keeps .cu files to the same warning bar as
# the C++ code; sm_90 is the H200.
_NVCC_FLAGS = [
    "-std=c++20",
    "-O3",
    "-arch=sm_90",
    "--expt-relaxed-constexpr",
    "-Werror=all-warnings",
    "-Xcompiler=-fPIC,-Wall,-Wextra,-Werror,-Wno-unused-parameter,-Wno-sign-compare",
    "-DONNX_NAMESPACE=onnx",
    "-DONNX_ML=1",
]

def cuda_library(name, srcs, hdrs = [], cu_deps_hdrs = [], deps = [], nvcc_flags = [], **kwargs):
    objects = []
    for src in srcs:
        stem = src.replace("/", "_").rsplit(".", 1)[0]
        obj = "_objs/%s/%s.pic.o" % (name, stem)
        native.genrule(
            name = "%s_%s_nvcc" % (name, stem),
            srcs = [src] + hdrs + cu_deps_hdrs,
            outs = [obj],
            cmd = " ".join([NVCC, "-c"] + _NVCC_FLAGS + nvcc_flags + [
                "-I.",
                "-I$(GENDIR)",
                "-o $@",
                "$(location %s)" % src,
            ]),
            message = "nvcc %s" % src,
        )
        objects.append(obj)
    native.cc_library(
        name = name,
        srcs = objects,
        hdrs = hdrs,
        deps = deps + ["@local_cuda//:cudart"],
        **kwargs
    )
