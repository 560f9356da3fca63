#!/usr/bin/env python3
"""Checks that the docs name only what exists (issue #21 item 6 found `banyan profile`, a command that
does not exist, in formats.md and `banyan --help`, and a DESIGN.md that is not in the repository):

  - every relative link in README.md and docs/*.md points at a file of the repository;
  - no file names DESIGN.md unless it exists;
  - every `banyan <word>` command a doc names outside code blocks is a subcommand `banyan --help`
    lists (`banyan profile` did not exist then; it does now, issue #18 item 1);
  - `banyan --help` lists no subcommand that docs/cli.md does not describe.

  check_mentions.py SOURCE_DIR [BANYAN]

Exit 0 when all hold; 1 otherwise, naming the file and line.
"""
import os
import re
import subprocess
import sys


def main(source, banyan):
    problems = []
    docs = [os.path.join(source, "README.md")] + sorted(
        os.path.join(source, "docs", f) for f in os.listdir(os.path.join(source, "docs")) if f.endswith(".md"))
    design_exists = os.path.exists(os.path.join(source, "DESIGN.md"))
    all_mentions = []
    for path in docs:
        rel = os.path.relpath(path, source)
        with open(path, encoding="utf-8") as f:
            lines = f.read().split("\n")
        in_code = False
        mentions = []
        for n, line in enumerate(lines, 1):
            if line.startswith("```"):
                in_code = not in_code
                continue
            if in_code:
                continue
            for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", line):
                if re.match(r"[a-z]+://", target) or target.startswith("mailto:"):
                    continue
                if not os.path.exists(os.path.normpath(os.path.join(os.path.dirname(path), target))):
                    problems.append("%s:%d: link to `%s`, which does not exist" % (rel, n, target))
            if "DESIGN.md" in line and not design_exists:
                problems.append("%s:%d: cites DESIGN.md, which is not in the repository" % (rel, n))
            for c in re.findall(r"`banyan ([a-z][a-z-]*)\b", line):
                mentions.append((rel, n, c))
        all_mentions.extend(mentions)
    if banyan:
        out = subprocess.run([banyan, "--help"], capture_output=True, text=True).stdout
        head, _, section = out.partition("Subcommands:")
        commands = re.findall(r"^\s{2}(\S+)\s", section, re.M)
        if not commands:
            problems.append("`banyan --help` lists no subcommands:\n" + out)
        cli_md = open(os.path.join(source, "docs", "cli.md"), encoding="utf-8").read()
        for c in commands:
            if "banyan " + c not in cli_md:
                problems.append("`banyan --help` lists `%s`, which docs/cli.md does not describe" % c)
        for rel, n, c in all_mentions:
            if c not in commands:
                problems.append("%s:%d: names a `banyan %s` command, which `banyan --help` does not list" % (rel, n, c))
    for p in problems:
        print("FAIL:", p)
    if not problems:
        print("docs: %d files, every link and command mention resolves" % len(docs))
    return 1 if problems else 0


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        print(__doc__)
        sys.exit(2)
    sys.exit(main(os.path.abspath(sys.argv[1]), sys.argv[2] if len(sys.argv) == 3 else None))
