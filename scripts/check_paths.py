#!/usr/bin/env python3
"""Fails when a file of the repository refers to a path outside it.

A clone holds only the repository, so every path a file names must be found there. Three
kinds of reference are refused, in every text file git knows (tracked, or new and not
ignored; without git, every file of the tree but build*/, .venv/ and .git/):

- a relative path starting with "..": it must resolve, from the file's own folder, to
  something that exists inside the repository (a Markdown link to ../README.md, an
  #include of a neighbour); anything else leaves it or points at nothing;
- a design or style document (DESIGN or STYLE, then .md) that is not in the repository
  (the design is docs/design.md);
- an absolute path into a home or work directory of the author's machine: a path under
  /work, /root, /home, /Users or /mnt. System paths (/proc, /dev, /usr, /bin, /tmp, /etc,
  ...), ~/..., and URLs are fine.

Usage: check_paths.py [ROOT]     (ROOT: the repository, default this script's parent's
                                  parent); prints FILE:LINE: why, and the line; exit 1.
       check_paths.py --self-test  plants references of every kind in a temporary tree and
                                  fails unless exactly the bad ones are found.
Plain standard library: run it with any python3.
"""
import os
import re
import subprocess
import sys
import tempfile

SKIPPED_DIRS = re.compile(r"^(build[^/]*|\.venv|\.git)(/|$)")
# Text that looks like a reference and is not one: (file, text) pairs, each with its reason.
NOT_REFERENCES = {
    # A unit name the build driver must refuse (BadUnitNamesAreRejected).
    ("tests/build/build_test.cpp", ".." + "/evil.cpp"),
}
# A parent path not part of a longer path ("a/" then "..") or of an ellipsis (".../v1").
PARENT_PATH = re.compile(r"(?<![\w./~-])\.\./(?:\.\./)*\w[\w.+-]*(?:/[\w.+-]+)*")
DESIGN_DOC = re.compile(r"(?<![\w.-])(?:[\w.-]+/)*(?:DESIGN|STYLE)\.md\b")
# The separators are written apart so this file does not refuse itself.
MACHINE_DIRS = ("work", "root", "home", "Users", "mnt")
MACHINE_PATH = re.compile(r"(?<![\w.~$}\])/:-])/(?:" + "|".join(MACHINE_DIRS) + ")/")


def listed_files(root):
    """Relative paths of the files to check: git's view when there is one, else a walk."""
    try:
        command = ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"]
        out = subprocess.run(command, cwd=root, capture_output=True, check=True).stdout
        names = [n for n in out.decode("utf-8", "replace").split("\0") if n]
    except (OSError, subprocess.CalledProcessError):
        names = []
        for folder, dirs, files in os.walk(root):
            rel = os.path.relpath(folder, root)
            dirs[:] = [d for d in dirs if not SKIPPED_DIRS.match(d)] if rel == "." else dirs
            names += [os.path.normpath(os.path.join(rel, f)) for f in files]
    keep = []
    for name in sorted(set(names)):
        path = os.path.join(root, name)
        if SKIPPED_DIRS.match(name) or os.path.islink(path) or not os.path.isfile(path):
            continue
        keep.append(name)
    return keep


def read_text(path):
    """The file's lines, or None for a binary file."""
    with open(path, "rb") as f:
        data = f.read()
    if b"\0" in data[:8192]:
        return None
    return data.decode("utf-8", "replace").splitlines()


def inside(root, rel):
    """Whether `rel` (already normalized, relative to root) stays inside the root."""
    return rel != ".." and not rel.startswith("../") and not os.path.isabs(rel)


def parent_path_problem(root, folder, ref):
    target = os.path.normpath(os.path.join(folder, ref))
    if not inside(root, target):
        return f"{ref} leaves the repository"
    if not os.path.exists(os.path.join(root, target)):
        return f"{ref} (from {folder or '.'}/) is not in the repository"
    return None


def design_doc_problem(root, folder, ref, basenames):
    if "/" not in ref:
        return None if ref in basenames else f"{ref} is not in the repository"
    for base in ("", folder):
        target = os.path.normpath(os.path.join(base, ref))
        if inside(root, target) and os.path.isfile(os.path.join(root, target)):
            return None
    return f"{ref} is not in the repository"


def problems_in(root, name, lines, basenames):
    folder = os.path.dirname(name)

    def refs(pattern, line):
        matches = (m.group(0) for m in pattern.finditer(line))
        return [ref for ref in matches if (name, ref) not in NOT_REFERENCES]

    for number, line in enumerate(lines, 1):
        whys = [parent_path_problem(root, folder, ref) for ref in refs(PARENT_PATH, line)]
        whys += [design_doc_problem(root, folder, ref, basenames) for ref in refs(DESIGN_DOC, line)]
        whys += [f"{ref}... is a path on the author's machine" for ref in refs(MACHINE_PATH, line)]
        for why in filter(None, whys):
            yield number, why, line.strip()


def check(root):
    """Every problem as (file, line, why, text), and the number of files read."""
    names = listed_files(root)
    basenames = {os.path.basename(n) for n in names}
    found, read = [], 0
    for name in names:
        lines = read_text(os.path.join(root, name))
        if lines is None:
            continue
        read += 1
        found += [(name, *problem) for problem in problems_in(root, name, lines, basenames)]
    return found, read


def report(found):
    for name, number, why, text in found:
        print(f"{name}:{number}: {why}\n    {text}")


def self_test():
    """Plants good and bad references in a temporary tree; exactly the bad ones must show."""
    up, design = ".." + "/", "DESIGN" + ".md"
    machine = "/" + "work" + "/shared/"
    files = {
        "README.md": ["# t", f"See `{up}shared/{design}` for the design.", "[ok](docs/x.md)"],
        "docs/x.md": [f"[readme]({up}README.md) and [a header]({up}src/a.h)",
                      "/proc/self/maps /dev/null /usr/include /bin/sh /tmp/x /etc/passwd",
                      "~/.cache/ollie and https://example.com/home/page and .../v1 and a/../b",
                      f"[gone]({up}missing.md)"],
        "src/a.h": [f"// the ABI of {design} section 3", f'#include "{up}b.h"',
                    f"// cloned from {machine}DESIGN", f"// {up}{up}{up}outside/thing"],
        "b.h": ["// not here either: STYLE" + ".md"],
        "build/junk.txt": [f"{up}{up}skipped, a build folder"],
    }
    bad = {("README.md", 2), ("docs/x.md", 4), ("src/a.h", 1), ("src/a.h", 3), ("src/a.h", 4),
           ("b.h", 1)}
    with tempfile.TemporaryDirectory() as root:
        for name, lines in files.items():
            os.makedirs(os.path.join(root, os.path.dirname(name)), exist_ok=True)
            with open(os.path.join(root, name), "w") as f:
                f.write("\n".join(lines) + "\n")
        found, read = check(root)
    got = {(name, number) for name, number, _, _ in found}
    if got != bad or read != len(files) - 1:
        report(found)
        print(f"self-test FAILED: missed {sorted(bad - got)}, wrongly refused "
              f"{sorted(got - bad)}, read {read} files (expected {len(files) - 1})")
        return 1
    print(f"self-test: ok ({len(bad)} planted bad references found, the good ones passed)")
    return 0


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    if len(argv) > 2 or (len(argv) == 2 and argv[1].startswith("-")):
        print(__doc__)
        return 2
    default_root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    root = os.path.abspath(argv[1] if len(argv) == 2 else default_root)
    found, read = check(root)
    report(found)
    if found:
        print(f"{len(found)} reference(s) to paths outside the repository in {read} files")
        return 1
    print(f"checked {read} files: no reference leaves the repository")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
