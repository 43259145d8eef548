"""libFuzzer targets that are also corpus regression tests (fuzz/README.md)."""

def graphserve_fuzz_target(name, srcs, deps, corpus, data = [], size = "small"):
    """A fuzz target `name` and its corpus test `name`_corpus_test.

    Under --config=fuzz (clang, --define=graphserve_fuzz=libfuzzer) `name`
    links libFuzzer's main; otherwise it links corpus_replay_main, which runs
    the target once on each file it is given. The test runs every file of
    `corpus` (a directory under fuzz/corpus/) through the same code, in every
    configuration, so the seeds and fixed crashes stay checked by
    `bazel test //...`.
    """
    corpus_files = native.glob([corpus + "/**"])
    native.cc_binary(
        name = name,
        srcs = srcs,
        deps = deps + select({
            "//fuzz:libfuzzer": [],
            "//conditions:default": ["//fuzz:corpus_replay_main"],
        }),
        linkopts = select({
            "//fuzz:libfuzzer": ["-fsanitize=fuzzer"],
            "//conditions:default": [],
        }),
        data = data,
    )
    native.cc_test(
        name = name + "_corpus_test",
        size = size,
        srcs = srcs,
        deps = deps + ["//fuzz:corpus_replay_main"],
        args = [native.package_name() + "/" + corpus],
        data = corpus_files + data,
    )
