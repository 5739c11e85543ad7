"""frognano-bot: reads a test command's report files INSIDE the verification sandbox.

src/verify/runTests.ts runs this with `python3 -I -c <this text> REPORT_DIR` right after a test command, in the
same clean shell, and writes one JSON request on stdin: {"workdir": PATH, "globs": [...], "maxFileBytes": N,
"maxTotalBytes": N, "maxFiles": N}. It prints one JSON object, {"reports": [{"path", "text", "truncated"}],
"notes": [...]}, and nothing else. Files are the generated pytest JUnit report in REPORT_DIR and the regular files
under the workdir that the repository's `verify.reports` globs match; links are never followed, every file is read
up to its byte cap, and the host only ever sees this bounded text. Standard library only, Python 3.
"""

import glob
import json
import os
import stat
import sys


def read_capped(full, cap):
    fd = os.open(full, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None, False
        data = b""
        while len(data) <= cap:
            chunk = os.read(fd, min(65536, cap + 1 - len(data)))
            if not chunk:
                break
            data += chunk
    finally:
        os.close(fd)
    truncated = len(data) > cap
    return data[:cap].decode("utf-8", "replace"), truncated


def candidates(report_dir, workdir, globs):
    for name in sorted(os.listdir(report_dir)) if os.path.isdir(report_dir) else []:
        yield os.path.join(report_dir, name), "<generated>/" + name
    root = os.path.realpath(workdir)
    for pattern in globs:
        if os.path.isabs(pattern) or ".." in pattern.split("/"):
            continue
        for rel in sorted(glob.glob(pattern, root_dir=root, recursive=True))[:1000]:
            full = os.path.join(root, rel)
            real = os.path.realpath(full)
            if real != full or not real.startswith(root + os.sep):
                continue  # a link, or a path through one: never followed
            yield full, rel


def main():
    request = json.loads(sys.stdin.read(1 << 20))
    cap, total_cap = int(request["maxFileBytes"]), int(request["maxTotalBytes"])
    max_files = int(request["maxFiles"])
    reports, notes, seen, total = [], [], set(), 0
    for full, rel in candidates(sys.argv[1], request["workdir"], request.get("globs", [])):
        if rel in seen:
            continue
        seen.add(rel)
        if len(reports) >= max_files or total >= total_cap:
            notes.append("more report files than the caps allow: the rest were not read")
            break
        try:
            text, truncated = read_capped(full, min(cap, total_cap - total))
        except OSError as error:
            notes.append("report %s not read: %s" % (rel, error.strerror))
            continue
        if text is None:
            continue
        total += len(text.encode("utf-8"))
        reports.append({"path": rel, "text": text, "truncated": truncated})
    sys.stdout.write(json.dumps({"reports": reports, "notes": notes}))


main()
