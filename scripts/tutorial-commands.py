#!/usr/bin/env python3
"""Extracts the runnable parts of a markdown tutorial (docs/tutorial.md), so
that tests run exactly what the document shows.

Fenced blocks whose info string carries a tag are taken, in document order:
  ```LANG file=NAME      (any language) the block's text is written to DIR/NAME
  ```sh TAG              the block's commands go into the script, printed on
                         stdout (bash, stopping at the first failure)
usage: tutorial-commands.py DOC --dir DIR --tag TAG [--tag TAG...]
A document without any block of a requested tag is an error, so a renamed
tag cannot turn a test into one that runs nothing.
"""
import argparse
import os
import re
import sys

FENCE = re.compile(r"^```(\S*)(.*)$")


def blocks(text):
    """Yields (language, words of the info string after it, body)."""
    lines = text.splitlines(keepends=True)
    i = 0
    while i < len(lines):
        match = FENCE.match(lines[i].rstrip("\n"))
        if not match or not match.group(1):
            i += 1
            continue
        body = []
        i += 1
        while i < len(lines) and not lines[i].startswith("```"):
            body.append(lines[i])
            i += 1
        if i == len(lines):
            raise SystemExit(f"error: unterminated ``` block ({match.group(0)})")
        i += 1
        yield match.group(1), match.group(2).split(), "".join(body)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("doc")
    parser.add_argument("--dir", required=True, help="where file= blocks go")
    parser.add_argument("--tag", action="append", required=True)
    args = parser.parse_args()
    with open(args.doc) as f:
        text = f.read()
    script = ["set -euxo pipefail\n"]
    found = {tag: 0 for tag in args.tag}
    for language, words, body in blocks(text):
        for word in words:
            if word.startswith("file="):
                name = word[len("file="):]
                if not name or "/" in name or name.startswith("."):
                    raise SystemExit(f"error: bad file name '{name}'")
                with open(os.path.join(args.dir, name), "w") as out:
                    out.write(body)
        if language == "sh":
            tags = [w for w in words if w in found]
            for tag in tags:
                found[tag] += 1
            if tags:
                script.append(body)
    missing = [tag for tag, n in found.items() if n == 0]
    if missing:
        raise SystemExit(f"error: {args.doc} has no ```sh block tagged {', '.join(missing)}")
    sys.stdout.write("".join(script))


if __name__ == "__main__":
    main()
