"""The Python tests that drive the real graphserve binary (tests/BUILD)."""

def server_python_test(name, data = []):
    """`name`.py on the venv deploy/setup.sh builds (deploy/venv_test.sh).

    The script gets --server (the graphserve binary) and --make-repository
    (the demo repository's maker); `data` adds its fixtures.
    """
    native.sh_test(
        name = name,
        size = "medium",
        srcs = ["//deploy:venv_test.sh"],
        args = [
            "python",
            "$(rootpath %s.py)" % name,
            "--server",
            "$(rootpath //server:graphserve)",
            "--make-repository",
            "$(rootpath //examples:make_demo_repository)",
        ],
        data = [
            "graphserve_process.py",
            name + ".py",
            "//examples:make_demo_repository",
            "//server:graphserve",
        ] + data,
    )
