#!/usr/bin/env python3
"""Doxygen INPUT_FILTER for banyan's headers: prints a header with its `//` comments turned into
the doc comments Doxygen reads, so the headers keep their plain comment style (STYLE.md) and the
API reference is generated from exactly those comments.

  - the comment that opens the file (before `#pragma once`) documents the file (\\file);
  - a block of comment-only lines at namespace or class scope documents what follows it;
  - a trailing `code;  // text` documents that member (`///<`), and so do the comment-only lines
    aligned under it that continue it;
  - comments inside function bodies stay plain comments;
  - a comment block followed, with no blank line, by several functions that it is about (overloads
    of one name, names the comment mentions, or an alias and the function that takes it) documents
    each of them: a copy of it goes before each, on the same line (`/** ... */`);
  - comment lines indented by two or more extra spaces (`//   app.run();`) are example code: they
    are indented further so that Doxygen's Markdown shows them as a code block.

One output line per input line, so Doxygen's warnings point at the header's own lines.
Usage: doxygen_filter.py HEADER
"""
import re
import sys

DECL_KEYWORDS = re.compile(r"\b(namespace|class|struct|union|enum)\b")


def split_comment(line):
    """(code, column of a trailing `//` outside string and character literals, or None)."""
    quote = None
    i = 0
    while i < len(line):
        c = line[i]
        if quote:
            if c == "\\":
                i += 2
                continue
            if c == quote:
                quote = None
        elif c in "\"'":
            quote = c
        elif line.startswith("//", i):
            return line[:i], i
        i += 1
    return line, None


def keep_dashes(text):
    """`--mode` outside code spans, escaped so that Doxygen does not print an en dash."""
    parts = text.split("`")
    for i in range(0, len(parts), 2):
        parts[i] = re.sub(r"(?<![\w-])--(?=\w)", r"\\-\\-", parts[i])
    return "`".join(parts)


def doc_line(line):
    """A comment-only line as a `///` doc line; example code gets a Markdown code indent."""
    indent = line[: len(line) - len(line.lstrip())]
    text = line.lstrip()[2:]
    if text.startswith("   ") and text.strip():
        return indent + "///    " + text
    return indent + "///" + keep_dashes(text)


def main(path):
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    out = []
    scopes = []            # one entry per open brace: True at namespace/class/enum scope
    statement = ""         # code since the last ; { or }
    parens = 0             # open parentheses
    seen_code = False      # past the file's opening comment
    file_comment = False   # the opening comment was turned into doc lines
    continuation_col = None  # column of the previous line's trailing comment
    after_doc = False      # the previous line ended a doc block
    group = None           # the declarations a doc block is about (see complete())
    block_text = []        # the current doc block's words
    block_start = 0        # its first line in `out`

    def complete(text):
        """A declaration at the group's depth ended; `text` is its code."""
        if group is None or group["closed"]:
            return
        alias = re.match(r"\s*using\s+(\w+)\s*=", text)
        name = alias.group(1) if alias else None
        if not name:
            m = re.search(r"(~?\w+|operator\S+)\s*\(", text)
            name = m.group(1) if m else None
        about = name is not None and (
            not group["names"] or name in group["names"] or name in block_text
            or (group["alias"] is not None and re.search(r"\b" + group["alias"] + r"\b", text)))
        if not about:
            group["closed"] = True
            return
        group["names"].add(name)
        group["alias"] = name if alias else None
        group["members"].append(group["start"])
        group["start"] = None

    def close_group():
        nonlocal group
        if group:
            text = " ".join(group["doc"]).replace("*/", "* /")
            for start in group["members"][1:]:
                head = out[start]
                indent = head[: len(head) - len(head.lstrip())]
                out[start] = indent + "/** " + text + " */ " + head.lstrip()
        group = None

    for line in lines:
        stripped = line.strip()
        in_decl_scope = all(scopes)
        if not stripped or stripped.startswith("//") or re.match(r"(public|private|protected)\s*:", stripped):
            close_group()
        if stripped.startswith("//") and not stripped.startswith("///"):
            col = len(line) - len(line.lstrip())
            if in_decl_scope and not after_doc:
                block_text.clear()
                block_start = len(out)
            if continuation_col is not None and col == continuation_col:
                out.append(line[:col] + "///<" + stripped[2:])
            elif in_decl_scope:
                out.append(doc_line(line))
                block_text.extend(re.findall(r"\w+", stripped))
                file_comment = file_comment or not seen_code
                after_doc = seen_code
            else:
                out.append(line)
            continue
        continuation_col = None
        if after_doc and stripped and in_decl_scope and not stripped.startswith("#"):
            group = {"depth": len(scopes), "members": [], "start": None, "names": set(), "alias": None,
                     "closed": False, "text": "", "doc": [l.strip()[3:].strip() for l in out[block_start:]]}
        after_doc = False
        if not seen_code and stripped == "#pragma once" and file_comment:
            out.append("/// \\file")  # closes the opening comment: it documents this file
            seen_code = True
            continue
        if stripped:
            seen_code = True
        if group is not None and group["start"] is None:
            group["start"] = len(out)
        code, col = split_comment(line)
        member = code.strip() and not code.lstrip().startswith(("#", "}"))
        if col is not None and in_decl_scope and member:
            out.append(code + "///<" + keep_dashes(line[col + 2:]))
            continuation_col = col
        else:
            out.append(line)
        if code.lstrip().startswith("#"):
            continue
        for c in code:
            if group is not None:
                group["text"] += c
            if c in "()":
                parens = max(0, parens + (1 if c == "(" else -1))
                statement += c
            elif parens:
                statement += c  # a default argument's `{}` is no scope
            elif c == "{":
                s = statement.strip()
                scopes.append((bool(DECL_KEYWORDS.search(s)) and "(" not in s) or s.startswith('extern "C"'))
                statement = ""
            elif c == "}":
                if scopes:
                    scopes.pop()
                statement = ""
                if group and len(scopes) == group["depth"]:
                    complete(group["text"])
                    group["text"] = ""
                elif group and len(scopes) < group["depth"]:
                    close_group()
            elif c == ";":
                statement = ""
                if group and len(scopes) == group["depth"] and code.strip() not in ("};", "}"):
                    complete(group["text"])
                    group["text"] = ""
            else:
                statement += c
        statement += " "
    close_group()
    sys.stdout.write("\n".join(out))


if __name__ == "__main__":
    main(sys.argv[1])
