"""The ``gapscope`` command of the wheel: the command-line program shipped
inside the package (with the injection library ``gapscope record`` loads
next to it), run in place of this Python process."""

import os
import sys

_BIN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_bin")


def executable() -> str:
    """Path of the bundled ``gapscope`` program."""
    return os.path.join(_BIN, "gapscope")


def main() -> None:
    exe = executable()
    if not os.access(exe, os.X_OK):
        sys.stderr.write(
            f"gapscope: error: the gapscope program is missing from this installation ({exe}); "
            "reinstall the wheel\n"
        )
        sys.exit(2)
    # exec, not a child: signals, the exit status and the terminal are the
    # program's own, as `gapscope record` needs.
    os.execv(exe, ["gapscope", *sys.argv[1:]])


if __name__ == "__main__":
    main()
