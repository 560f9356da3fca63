#!/usr/bin/env python3
"""Checks that the docs say only what is true of the repository:

  Files and commands
  - every relative link in README.md and docs/*.md points at a file of the repository;
  - no file names DESIGN.md unless it exists;
  - no doc says a `banyan <cmd>` does not exist ("there is no `banyan profile` command") while the
    CLI has it (the CLI's subcommands are read from tools/banyan/main.cpp);
  - docs/install.md's list of the installed CLI's subcommands ("(the CLI: `partition`, ...)") is
    exactly the subcommands of tools/banyan/main.cpp;
  - every `-DBANYAN_ONLY=...` a doc shows names folders the top CMakeLists.txt knows;
  - docs/runtime.md's opening paragraphs name each of its `##` sections;
  - with BANYAN (the built CLI): every `banyan <word>` a doc names outside code blocks is a
    subcommand `banyan --help` lists, and `banyan --help` lists none that docs/cli.md does not describe.

  The SDK (docs/sdk.md against the public headers, which are parsed here)
  - every `ns::errc::member` in the docs is a member of that namespace's `errc`; a bare
    `errc::member` in sdk.md must name a member of exactly one namespace (`timeout` is both
    `sdk::errc` and `runtime::errc`: sdk.md must say which);
  - sdk.md's table of error enums has one row per public `errc` (`| `ns::errc` | header | codes |`)
    whose codes are exactly the enum's members;
  - every signature sdk.md writes as a code span (`std::optional<payload> snapshot(context&)`) is
    declared so in a public header, parameter names aside;
  - sdk.md names every virtual hook of banyan::component and every free function of payload.hpp
    (read_as);
  - every `ctx.name` in the docs is a member of banyan::context, and every `app.name(` a member of
    banyan::app, except where sdk.md says "**`app.name()` is gone**": then app.hpp must lack it.

  check_mentions.py SOURCE_DIR [BANYAN]

Exit 0 when all hold; 1 otherwise, naming the file and line.
"""
import glob
import os
import re
import subprocess
import sys


# --- reading the docs ---------------------------------------------------------------------------

def prose_lines(path):
    """The file's lines with those inside ``` blocks blanked (so line numbers stay right)."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    out, in_code = [], False
    for line in lines:
        if line.startswith("```"):
            in_code = not in_code
            out.append("")
        else:
            out.append("" if in_code else line)
    return out


def line_of(text, offset):
    return text.count("\n", 0, offset) + 1


def code_spans(text):
    """(offset, content) of every inline `code` span (double-backtick spans included)."""
    for m in re.finditer(r"(`+)(.+?)\1", text, re.S):
        yield m.start(), m.group(2).strip()


# --- reading the sources ------------------------------------------------------------------------

def strip_comments(code):
    code = re.sub(r"/\*.*?\*/", " ", code, flags=re.S)
    return re.sub(r"//[^\n]*", "", code)


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def cli_commands(source):
    """The subcommands tools/banyan/main.cpp registers: {"name", "summary", setup}."""
    main_cpp = read(os.path.join(source, "tools", "banyan", "main.cpp"))
    return re.findall(r'\{\s*"([a-z][a-z-]*)",\s*"', strip_comments(main_cpp))


def errc_enums(source):
    """{namespace: [members]} of every public `enum class errc` outside samples/."""
    enums = {}
    pattern = os.path.join(source, "**", "include", "banyan", "*", "error.hpp")
    for path in sorted(glob.glob(pattern, recursive=True)):
        rel = os.path.relpath(path, source)
        if rel.split(os.sep)[0] in ("samples", "build") or "/build/" in path:
            continue
        code = strip_comments(read(path))
        ns = re.search(r"namespace\s+banyan::(\w+)\s*\{", code)
        body = re.search(r"enum\s+class\s+errc\s*(?::\s*[\w:]+\s*)?\{(.*?)\}", code, re.S)
        if ns and body:
            members = [m.split("=")[0].strip() for m in body.group(1).split(",")]
            enums[ns.group(1)] = ([m for m in members if m], rel)
    return enums


def normalize_params(params):
    """Parameter types only: names and default values dropped, spacing made canonical."""
    out = []
    for p in split_top_level(params):
        p = p.split("=")[0].strip()
        p = re.sub(r"\s+", " ", p)
        m = re.match(r"^(.*[\w>&*])\s+(\w+)$", p)
        if m and m.group(1) not in ("const", "unsigned", "signed", "long", "short"):
            p = m.group(1)
        p = re.sub(r"\s*([&*<>,])\s*", r"\1", p)
        if p:
            out.append(p)
    return out


def split_top_level(params):
    parts, depth, cur = [], 0, ""
    for ch in params:
        if ch in "<([{":
            depth += 1
        elif ch in ">)]}":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    return [p for p in (x.strip() for x in parts) if p]


def header_declarations(headers):
    """{name: [(text before the name, normalized params)]} for every `name(...)` in the headers."""
    decls = {}
    for path in headers:
        code = re.sub(r"\s+", " ", strip_comments(read(path)))
        for m in re.finditer(r"(~?\w+)\s*\(", code):
            depth, i = 1, m.end()
            while i < len(code) and depth:
                depth += {"(": 1, ")": -1}.get(code[i], 0)
                i += 1
            before = code[max(0, m.start() - 200):m.start()]
            before = re.split(r"[;{}]|\b(?:public|private|protected):", before)[-1]
            decls.setdefault(m.group(1), []).append((tidy_type(before), normalize_params(code[m.end():i - 1])))
    return decls


def tidy_type(text):
    text = re.sub(r"\b(virtual|static|inline|constexpr|friend|explicit)\b|\[\[\w+\]\]", " ", text)
    text = re.sub(r"\s+", " ", text).strip()
    return re.sub(r"\s*([&*<>,])\s*", r"\1", text)


def class_members(header, class_name):
    """Names of the functions declared in `class class_name { ... };` of `header`."""
    code = strip_comments(read(header))
    m = re.search(r"\bclass\s+" + class_name + r"\b[^;{]*\{", code)
    if not m:
        return set()
    depth, i = 1, m.end()
    while i < len(code) and depth:
        depth += {"{": 1, "}": -1}.get(code[i], 0)
        i += 1
    return set(re.findall(r"(?:^|[\s&*>])(\w+)\s*\(", code[m.end():i]))


# --- the checks ---------------------------------------------------------------------------------

def check_commands(source, docs, problems):
    commands = cli_commands(source)
    if not commands:
        problems.append("tools/banyan/main.cpp: no subcommands found (the checker's pattern is stale)")
        return
    negations = [r"there\s+is\s+no\s+`banyan ([a-z][a-z-]*)`",
                 r"\bno\s+`banyan ([a-z][a-z-]*)`\s+(?:sub)?command",
                 r"`banyan ([a-z][a-z-]*)`\s+(?:(?:sub)?command\s+)?(?:does\s+not|doesn't)\s+exist",
                 r"`banyan ([a-z][a-z-]*)`\s+is\s+not\s+a\s+(?:sub)?command"]
    for path in docs:
        rel = os.path.relpath(path, source)
        text = "\n".join(prose_lines(path))
        said = sorted({(line_of(text, m.start()), m.group(1)) for pattern in negations
                       for m in re.finditer(pattern, text, re.I) if m.group(1) in commands})
        for line, c in said:
            if not any(l == line - 1 and d == c for l, d in said):  # one sentence over two lines: once
                problems.append("%s:%d: says `banyan %s` does not exist, but tools/banyan/main.cpp has it"
                                % (rel, line, c))
    install = os.path.join(source, "docs", "install.md")
    text = "\n".join(prose_lines(install))
    m = re.search(r"\(the CLI:([^)]*)\)", text)
    if not m:
        problems.append("docs/install.md: no list of the CLI's subcommands (`(the CLI: `partition`, ...)`)")
    else:
        listed = re.findall(r"`([a-z][a-z-]*)`", m.group(1))
        where = "docs/install.md:%d" % line_of(text, m.start())
        for c in commands:
            if c not in listed:
                problems.append("%s: the CLI list lacks `%s`, a subcommand of tools/banyan/main.cpp" % (where, c))
        for c in listed:
            if c not in commands:
                problems.append("%s: the CLI list names `%s`, which tools/banyan/main.cpp does not have" % (where, c))


def check_build_options(source, docs, problems):
    top = read(os.path.join(source, "CMakeLists.txt"))
    m = re.search(r"set\(banyan_folders([^)]*)\)", top)
    folders = m.group(1).split() if m else []
    for path in docs:
        rel = os.path.relpath(path, source)
        with open(path, encoding="utf-8") as f:
            text = f.read()
        for m in re.finditer(r"-DBANYAN_ONLY=(\"[^\"]*\"|'[^']*'|[^\s`]+)", text):
            value = m.group(1).strip("\"'")
            if value in ("...", "…"):
                continue
            for folder in value.split(";"):
                if folder not in folders:
                    problems.append("%s:%d: BANYAN_ONLY names `%s`, not a folder of the top CMakeLists.txt (%s)"
                                    % (rel, line_of(text, m.start()), folder, " ".join(folders)))


def check_section_index(source, problems):
    rel = os.path.join("docs", "runtime.md")
    text = "\n".join(prose_lines(os.path.join(source, rel)))
    first = re.search(r"^## ", text, re.M)
    intro = text[:first.start()] if first else text
    for m in re.finditer(r"^## (.+)$", text, re.M):
        title = m.group(1).strip()
        if title.lower() not in re.sub(r"[*_`]", "", intro).lower():
            problems.append("%s:%d: the opening paragraphs do not name the section `%s`"
                            % (rel, line_of(text, m.start()), title))


def check_sdk(source, docs, problems):
    enums = errc_enums(source)
    if "sdk" not in enums or "broker" not in enums:
        problems.append("no sdk::errc or broker::errc found under */include/banyan/*/error.hpp "
                        "(the checker's pattern is stale)")
        return
    owners = {}
    for ns, (members, _) in enums.items():
        for member in members:
            owners.setdefault(member, []).append(ns)
    sdk_md = os.path.join(source, "docs", "sdk.md")

    # errc mentions, in every doc
    for path in docs:
        rel = os.path.relpath(path, source)
        text = "\n".join(prose_lines(path))
        for m in re.finditer(r"(?<![\w:])(?:banyan::)?(\w+)::errc::(\w+)", text):
            ns, member = m.groups()
            if ns not in enums:
                if ns in ("banyan", "std"):
                    continue
                problems.append("%s:%d: `%s::errc::%s`: no public `errc` in namespace banyan::%s"
                                % (rel, line_of(text, m.start()), ns, member, ns))
            elif member not in enums[ns][0]:
                problems.append("%s:%d: `%s::errc::%s` is not a member of %s (%s)"
                                % (rel, line_of(text, m.start()), ns, member, enums[ns][1], ", ".join(enums[ns][0])))
        if path != sdk_md:
            continue
        for m in re.finditer(r"(?<![\w:])errc::(\w+)", text):
            member, where = m.group(1), owners.get(m.group(1), [])
            if not where:
                problems.append("%s:%d: `errc::%s` is a member of no public errc" % (rel, line_of(text, m.start()), member))
            elif len(where) > 1:
                problems.append("%s:%d: `errc::%s` is ambiguous (%s): say which namespace's"
                                % (rel, line_of(text, m.start()), member, ", ".join(w + "::errc" for w in sorted(where))))

    text = "\n".join(prose_lines(sdk_md))
    # the table of error enums
    rows = {}
    for m in re.finditer(r"^\|\s*`(?:banyan::)?(\w+)::errc`\s*\|(.*)$", text, re.M):
        cells = [c.strip() for c in m.group(2).split("|")]
        rows[m.group(1)] = (line_of(text, m.start()), re.findall(r"`(\w+)`", cells[1] if len(cells) > 1 else ""))
    for ns, (members, header) in sorted(enums.items()):
        if ns not in rows:
            problems.append("docs/sdk.md: the table of error enums has no row for `%s::errc` (%s)" % (ns, header))
            continue
        line, listed = rows[ns]
        if sorted(listed) != sorted(members):
            problems.append("docs/sdk.md:%d: `%s::errc` lists %s; %s has %s"
                            % (line, ns, ", ".join(listed) or "nothing", header, ", ".join(members)))
    for ns, (line, _) in rows.items():
        if ns not in enums:
            problems.append("docs/sdk.md:%d: a row for `%s::errc`, which no public header declares" % (line, ns))

    # signatures written as code spans
    headers = sorted(glob.glob(os.path.join(source, "sdk", "include", "banyan", "sdk", "*.hpp")) +
                     glob.glob(os.path.join(source, "broker", "include", "banyan", "broker", "*.hpp")) +
                     glob.glob(os.path.join(source, "base", "include", "banyan", "base", "*.hpp")))
    decls = header_declarations(headers)
    signature = re.compile(r"^((?:(?:const\s+)?[\w:]+(?:<[^()]*>)?[&*]*\s+)+)(~?\w+)(?:<[^()]*>)?\(([^()]*)\)(\s*const)?$")
    for offset, span in code_spans(text):
        m = signature.match(span)
        if not m or m.group(1).strip() in ("return", "new", "delete", "throw"):
            continue
        ret, name, params = tidy_type(m.group(1)), m.group(2), normalize_params(m.group(3))
        found = [d for d in decls.get(name, []) if d[1] == params and (d[0] == ret or d[0].endswith(" " + ret) or
                                                                         d[0].endswith(">" + ret))]
        if not found:
            known = ["%s %s(%s)" % (d[0].split(" ")[-1], name, ", ".join(d[1]))
                     for d in decls.get(name, []) if d[0] and d[0].split(" ")[-1] != "return"][:4]
            problems.append("docs/sdk.md:%d: `%s` is not declared so in the public headers%s"
                            % (line_of(text, offset), span, "; they have " + "; ".join(known) if known else ""))

    # hooks and free functions sdk.md must name
    component_hpp = os.path.join(source, "sdk", "include", "banyan", "sdk", "component.hpp")
    payload_hpp = os.path.join(source, "sdk", "include", "banyan", "sdk", "payload.hpp")
    required = re.findall(r"\bvirtual\s+[^;{(]*?\b(\w+)\s*\(", strip_comments(read(component_hpp)))
    required += re.findall(r"^(?:template\s*<[^>]*>\s*)?[\w:]+(?:<[^>]*>)?\s+(\w+)\s*\(",
                           strip_comments(read(payload_hpp)), re.M)
    for name in required:
        if name.startswith("~"):
            continue
        if not re.search(r"`[^`]*\b" + re.escape(name) + r"\b[^`]*`", text):
            problems.append("docs/sdk.md: does not name `%s` (sdk/include/banyan/sdk/%s)"
                            % (name, "component.hpp" if name not in ("read_as",) else "payload.hpp"))

    # ctx.name and app.name( mentions
    context_members = class_members(os.path.join(source, "sdk", "include", "banyan", "sdk", "context.hpp"), "context")
    app_members = class_members(os.path.join(source, "sdk", "include", "banyan", "sdk", "app.hpp"), "app")
    for path in docs:
        rel = os.path.relpath(path, source)
        text = "\n".join(prose_lines(path))
        gone = [(m.start(), m.end(), m.group(1)) for m in
                re.finditer(r"\*\*`app\.(\w+)\(\)` is gone\*\*", text)] if path == sdk_md else []
        for start, _, name in gone:
            if name in app_members:
                problems.append("%s:%d: says `app.%s()` is gone, but app.hpp still has it"
                                % (rel, line_of(text, start), name))
        for m in re.finditer(r"`[^`\n]*`", text):
            for c in re.finditer(r"\bctx\.(\w+)", m.group(0)):
                if c.group(1) not in context_members:
                    problems.append("%s:%d: `ctx.%s`: banyan::context has no such member"
                                    % (rel, line_of(text, m.start()), c.group(1)))
            if any(start <= m.start() < end for start, end, _ in gone):
                continue
            for a in re.finditer(r"\bapp\.(\w+)\(", m.group(0)):
                if a.group(1) not in app_members:
                    problems.append("%s:%d: `app.%s(`: banyan::app has no such member"
                                    % (rel, line_of(text, m.start()), a.group(1)))


def check_links(source, docs, problems):
    design_exists = os.path.exists(os.path.join(source, "DESIGN.md"))
    mentions = []
    for path in docs:
        rel = os.path.relpath(path, source)
        for n, line in enumerate(prose_lines(path), 1):
            for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", line):
                if re.match(r"[a-z]+://", target) or target.startswith("mailto:"):
                    continue
                if not os.path.exists(os.path.normpath(os.path.join(os.path.dirname(path), target))):
                    problems.append("%s:%d: link to `%s`, which does not exist" % (rel, n, target))
            if "DESIGN.md" in line and not design_exists:
                problems.append("%s:%d: cites DESIGN.md, which is not in the repository" % (rel, n))
            for c in re.findall(r"`banyan ([a-z][a-z-]*)\b", line):
                mentions.append((rel, n, c))
    return mentions


def check_help(source, banyan, mentions, problems):
    out = subprocess.run([banyan, "--help"], capture_output=True, text=True).stdout
    _, _, section = out.partition("Subcommands:")
    commands = re.findall(r"^\s{2}(\S+)\s", section, re.M)
    if not commands:
        problems.append("`banyan --help` lists no subcommands:\n" + out)
    cli_md = read(os.path.join(source, "docs", "cli.md"))
    for c in commands:
        if "banyan " + c not in cli_md:
            problems.append("`banyan --help` lists `%s`, which docs/cli.md does not describe" % c)
    for rel, n, c in mentions:
        if c not in commands:
            problems.append("%s:%d: names a `banyan %s` command, which `banyan --help` does not list" % (rel, n, c))


def main(source, banyan):
    problems = []
    docs = [os.path.join(source, "README.md")] + sorted(
        os.path.join(source, "docs", f) for f in os.listdir(os.path.join(source, "docs")) if f.endswith(".md"))
    mentions = check_links(source, docs, problems)
    check_commands(source, docs, problems)
    check_build_options(source, docs, problems)
    check_section_index(source, problems)
    check_sdk(source, docs, problems)
    if banyan:
        check_help(source, banyan, mentions, problems)
    for p in problems:
        print("FAIL:", p)
    if not problems:
        print("docs: %d files; links, commands, build options and the SDK's names and signatures agree with "
              "the sources" % len(docs))
    return 1 if problems else 0


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        print(__doc__)
        sys.exit(2)
    sys.exit(main(os.path.abspath(sys.argv[1]), sys.argv[2] if len(sys.argv) == 3 else None))
