#!/usr/bin/env python3
"""Builds the SDK's API reference with Doxygen and fails on any warning, or when a part of the API
that the reference must cover is missing or undocumented (docs/install.md, "The API reference").
Run from anywhere:

  check_api_docs.py SOURCE_DIR OUTPUT_DIR

Exit 0: built, no warning, every required entry documented. Exit 1: otherwise, saying what.
"""
import html
import os
import re
import shutil
import subprocess
import sys

# (page, member) pairs whose documentation must be present and non-empty: request/reply, payloads,
# post/after, add_composite<T>, a custom root (app's constructor), and the run.
REQUIRED = [
    ("classbanyan_1_1context.html", "serve"),
    ("classbanyan_1_1context.html", "request"),
    ("classbanyan_1_1context.html", "serve_text"),
    ("classbanyan_1_1context.html", "request_text"),
    ("classbanyan_1_1context.html", "publish"),
    ("classbanyan_1_1context.html", "subscribe"),
    ("classbanyan_1_1context.html", "post"),
    ("classbanyan_1_1context.html", "after"),
    ("classbanyan_1_1payload.html", "build"),
    ("classbanyan_1_1payload.html", "copy_of"),
    ("classbanyan_1_1spec.html", "add_composite"),
    ("classbanyan_1_1spec.html", "add_leaf"),
    ("classbanyan_1_1app.html", "app"),
    ("classbanyan_1_1component.html", "on_start"),
]
# Text the main page must show: the worked example, included from tests/install/consumer.
MAIN_PAGE = ["class weather_service : public banyan::composite", "add_composite<region>(name",
             "project(weather LANGUAGES CXX)", "capnp_generate_cpp(weather_srcs"]


def member_docs(page_html, member):
    """The text of every documentation block of `member` on a class page (one per overload)."""
    docs = []
    title = re.compile(r'<h2 class="memtitle">.*?</span>' + re.escape(member) + r'\(\)(?: <span class="overload">[^<]*</span>)?</h2>')
    for m in title.finditer(page_html):
        start = page_html.find('<div class="memdoc">', m.end())
        end = page_html.find('<h2 class="memtitle">', start)
        block = page_html[start:end if end >= 0 else len(page_html)]
        docs.append(html.unescape(re.sub(r"<[^>]+>", "", block)).strip())
    return docs


def main(source, out):
    doxygen = shutil.which("doxygen")
    if not doxygen:
        print("doxygen is not installed (tools/setup installs it): the API reference cannot be checked")
        return 1
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    env = dict(os.environ, BANYAN_DOXYGEN_OUT=out)
    run = subprocess.run([doxygen, "docs/api/Doxyfile"], cwd=source, env=env, capture_output=True, text=True)
    problems = []
    output = (run.stdout + run.stderr).strip()
    if run.returncode != 0 or output:
        problems.append("doxygen exited %d with:\n%s" % (run.returncode, output))
    html_dir = os.path.join(out, "html")
    for page, member in REQUIRED:
        path = os.path.join(html_dir, page)
        if not os.path.exists(path):
            problems.append("%s: not generated" % page)
            continue
        with open(path, encoding="utf-8") as f:
            docs = member_docs(f.read(), member)
        if not docs:
            problems.append("%s: no entry for `%s`" % (page, member))
        elif not all(docs):
            problems.append("%s: `%s` has %d of %d entries undocumented" % (page, member, docs.count(""), len(docs)))
    index = os.path.join(html_dir, "index.html")
    text = open(index, encoding="utf-8").read() if os.path.exists(index) else ""
    text = html.unescape(re.sub(r"<[^>]+>", "", text))
    for needle in MAIN_PAGE:
        if needle not in text:
            problems.append("index.html: the main page lacks `%s` (the worked example)" % needle)
    for p in problems:
        print("FAIL:", p)
    if not problems:
        print("API reference: no warnings, %d required entries documented; %s" % (len(REQUIRED), index))
    return 1 if problems else 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print(__doc__)
        sys.exit(2)
    sys.exit(main(os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])))
