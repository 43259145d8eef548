"""cc_grpc_library: the gRPC C++ service stubs for a proto_library.

Bazel 4.2.3 has native rules for messages (proto_library -> cc_proto_library)
but none for services, and the upstream gRPC rules cannot be fetched offline.
This macro is the missing last link of the chain:

    proto_library  ->  cc_proto_library  ->  cc_grpc_library
     x.proto            x.pb.h / x.pb.cc      x.grpc.pb.h / x.grpc.pb.cc

It runs protoc with /usr/bin/grpc_cpp_plugin (@com_github_grpc_grpc stand-in)
on the descriptor sets that proto_library has already produced, so protoc sees
exactly the files and import paths that the message code was generated from,
and compiles the stubs into a cc_library on top of the cc_proto_library.

Usage:

    cc_grpc_library(
        name = "x_cc_grpc",
        srcs = [":x_proto"],     # the proto_library holding the services
        deps = [":x_cc_proto"],  # its cc_proto_library
    )

`#include "<package>/x.grpc.pb.h"` then works from the workspace root.
"""

def _import_path(src, proto_info):
    """The path protoc knows `src` by, e.g. "proto/grpc_service.proto"."""
    root = proto_info.proto_source_root
    if root and root != "." and src.path.startswith(root + "/"):
        return src.path[len(root) + 1:]
    return src.short_path

def _grpc_cpp_codegen_impl(ctx):
    proto_info = ctx.attr.src[ProtoInfo]
    headers = []
    sources = []
    files_to_generate = []
    for src in proto_info.direct_sources:
        import_path = _import_path(src, proto_info)
        files_to_generate.append(import_path)

        # protoc writes <grpc_out>/<import path stem>.grpc.pb.{h,cc}; declaring
        # them relative to this package puts them exactly there as long as the
        # proto lives in this package (checked below).
        stem = src.basename[:-len(".proto")]
        for suffix in [".grpc.pb.h", ".grpc.pb.cc"]:
            out = ctx.actions.declare_file(stem + suffix)
            expected_suffix = import_path[:-len(".proto")] + suffix
            if not out.path.endswith("/" + expected_suffix):
                fail("cc_grpc_library: %s must be in the package of %s" % (src.short_path, ctx.label))
            (headers if suffix.endswith(".h") else sources).append(out)

    grpc_out = ctx.bin_dir.path
    if ctx.label.workspace_root:
        grpc_out += "/" + ctx.label.workspace_root

    outputs = headers + sources
    descriptor_sets = proto_info.transitive_descriptor_sets
    args = ctx.actions.args()
    args.add_joined(descriptor_sets, join_with = ":", format_joined = "--descriptor_set_in=%s")
    args.add(ctx.executable._plugin, format = "--plugin=protoc-gen-grpc=%s")
    args.add(grpc_out, format = "--grpc_out=%s")
    args.add_all(files_to_generate)

    ctx.actions.run(
        executable = ctx.executable._protoc,
        arguments = [args],
        inputs = descriptor_sets,
        tools = [ctx.executable._plugin],
        outputs = outputs,
        mnemonic = "GrpcCppCodegen",
        progress_message = "Generating gRPC C++ stubs for %s" % ctx.label,
    )
    return [
        DefaultInfo(files = depset(outputs)),
        OutputGroupInfo(headers = depset(headers), sources = depset(sources)),
    ]

_grpc_cpp_codegen = rule(
    implementation = _grpc_cpp_codegen_impl,
    attrs = {
        "src": attr.label(mandatory = True, providers = [ProtoInfo]),
        "_protoc": attr.label(
            default = "@com_google_protobuf//:protoc",
            executable = True,
            cfg = "exec",
            allow_single_file = True,
        ),
        "_plugin": attr.label(
            default = "@com_github_grpc_grpc//:grpc_cpp_plugin",
            executable = True,
            cfg = "exec",
            allow_single_file = True,
        ),
    },
)

def cc_grpc_library(name, srcs, deps, copts = [], **kwargs):
    """The gRPC C++ stubs of one proto_library, as a cc_library.

    Args:
      name: the cc_library holding the stubs.
      srcs: exactly one proto_library with the service definitions; its .proto
        files must live in the calling package.
      deps: the cc_proto_library (or libraries) of the messages the services
        use, so the stubs link against the same message code as everyone else.
      copts: extra compiler options for the generated stubs.
      **kwargs: passed to the cc_library (visibility, testonly, ...).
    """
    if len(srcs) != 1:
        fail("cc_grpc_library %s: srcs must hold exactly one proto_library" % name)
    codegen = name + "_codegen"
    _grpc_cpp_codegen(
        name = codegen,
        src = srcs[0],
        visibility = ["//visibility:private"],
    )
    for group in ["headers", "sources"]:
        native.filegroup(
            name = "%s_%s" % (codegen, group),
            srcs = [":" + codegen],
            output_group = group,
            visibility = ["//visibility:private"],
        )
    native.cc_library(
        name = name,
        hdrs = [":%s_headers" % codegen],
        srcs = [":%s_sources" % codegen],
        deps = deps + ["@com_github_grpc_grpc//:grpc++"],
        copts = copts,
        **kwargs
    )
