"""Finds the CUDA toolkit and exposes it as the repository @local_cuda.

The toolkit lives at $CUDA_PATH when that is set, else /usr/local/cuda. The
repository links the toolkit's include/ and lib64/ folders and records nvcc's
absolute path in defs.bzl for the cuda_library macro.
"""

def _cuda_configure_impl(ctx):
    cuda_path = ctx.os.environ.get("CUDA_PATH", "/usr/local/cuda")
    nvcc = ctx.path(cuda_path + "/bin/nvcc")
    if not nvcc.exists:
        fail("CUDA toolkit not found: %s does not exist. Install the CUDA 13 " % nvcc +
             "toolkit or point CUDA_PATH at it (see deploy/setup.sh).")
    ctx.symlink(cuda_path + "/include", "include")
    ctx.symlink(cuda_path + "/lib64", "lib64")
    ctx.file("defs.bzl", "NVCC = \"%s\"\nCUDA_PATH = \"%s\"\n" % (nvcc, cuda_path))
    ctx.template("BUILD", ctx.attr._build_template, {
        "%{cuda_path}": cuda_path,
    })

cuda_configure = repository_rule(
    implementation = _cuda_configure_impl,
    environ = ["CUDA_PATH"],
    local = True,
    attrs = {
        "_build_template": attr.label(default = "//third_party/cuda:cuda.BUILD.tpl"),
    },
)
