#!/usr/bin/env python3
"""wink_build: a wink plugin component from a Python app module.

    python3 wink_build.py [--app app] [--path DIR]... [--wit DIR] -o build/my_plugin.wasm

runs, in the current directory::

    componentize-py -d WIT -w plugin componentize APP -p . -p SDK [-p DIR]... -o OUT

where ``WIT`` is the wink checkout's ``wit/`` (``../../wit`` from this file)
and ``SDK`` the folder holding ``wink_sdk`` (this file's). componentize-py
must be importable (``pip install componentize-py==0.25.1``; or put the
folder it was installed into with ``pip install --target`` on PYTHONPATH).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import List, Optional

HERE = os.path.dirname(os.path.abspath(__file__))


def command(app: str, out: str, wit: str, paths: List[str]) -> List[str]:
    """The componentize-py arguments building ``app`` into ``out``."""
    args = ["componentize-py", "-d", wit, "-w", "plugin", "componentize", app, "-p", ".", "-p", HERE]
    for p in paths:
        args += ["-p", p]
    return args + ["-o", out]


def main(argv: Optional[List[str]] = None) -> int:
    """Parse the arguments and run componentize-py in this process."""
    parser = argparse.ArgumentParser(description="Build a wink plugin component from a Python app.")
    parser.add_argument("--app", default="app", help="the app module (default: app)")
    parser.add_argument("-o", "--out", required=True, help="the component to write")
    parser.add_argument("--wit", default=os.path.join(HERE, "..", "..", "wit"), help="the WIT folder")
    parser.add_argument("--path", action="append", default=[], help="more module folders")
    opts = parser.parse_args(argv)
    out_dir = os.path.dirname(os.path.abspath(opts.out))
    os.makedirs(out_dir, exist_ok=True)
    try:
        from componentize_py import script
    except ImportError:
        print("wink_build: componentize-py is not installed: pip install componentize-py==0.25.1", file=sys.stderr)
        return 1
    sys.argv = command(opts.app, opts.out, os.path.abspath(opts.wit), opts.path)
    return script() or 0


if __name__ == "__main__":
    sys.exit(main())
