"""frognano-bot: the five Leaf tools, run inside the sandbox.

The host (src/leaf/tools.ts) runs this file with `python3 -c <this text>` inside the sandbox boundary and
writes one JSON request to its stdin: {"tool": NAME, "args": {...}, "workdir": PATH}. The answer is the
observation text on stdout, nothing else. Paths are resolved here, in the sandbox's own filesystem view,
so a symlink to /etc/shadow names the sandbox's file, never the host's.

FrogNano was trained with upstream Leaf's tool runner (microsoft/FrogNano, frognano/harness/leaf); every
text this file prints matches what that runner prints for the same request, down to the Python exception
texts, so tests/leaf/conformance keeps golden outputs recorded from it. Standard library only, Python 3.
"""

import glob
import json
import os
import signal
import stat
import subprocess
import sys
from pathlib import Path


class Limits:
    """Output bounds; each can be changed through the sandbox's environment, as upstream allows."""

    @staticmethod
    def number(name, fallback):
        raw = os.environ.get(name)
        return fallback if raw is None or raw == "" else int(raw)

    @classmethod
    def read_chars(cls):
        return cls.number("LEAF_TOOL_OUTPUT_CHARS", 20000)

    @classmethod
    def bash_chars(cls):
        return cls.number("LEAF_BASH_OUTPUT_CHARS", 30000)

    @classmethod
    def bash_seconds(cls):
        return cls.number("LEAF_BASH_TIMEOUT_SEC", 120)

    @classmethod
    def glob_files(cls):
        return max(1, cls.number("LEAF_GLOB_LIMIT", 1000))


def clip(text, limit):
    """Keeps the first `limit` characters and says how many were dropped (a limit of 0 or less: no cut)."""
    if 0 < limit < len(text):
        return text[:limit] + "\n[truncated %d chars]" % (len(text) - limit)
    return text


def as_int(value, fallback):
    return fallback if value is None or value == "" else int(value)


def is_true(value):
    if isinstance(value, bool):
        return value
    return str(value or "").strip().lower() in ("1", "true", "yes", "on")


def absolute(value):
    """A path as the model gave it, made absolute against the working directory (`~` expanded)."""
    candidate = Path(str(value)).expanduser()
    if candidate.is_absolute():
        return candidate
    return Path.cwd() / candidate


_here = []
_real_dirs = {}


def real_path(name):
    """os.path.realpath, with each directory's real path worked out once: a Glob shows thousands of files that share
    a few directories. A name that is itself a link (or `.`/`..`) goes to realpath whole."""
    head, tail = os.path.split(name)
    if not head or tail in ("", ".", "..") or os.path.islink(name):
        return os.path.realpath(name)
    if head not in _real_dirs:
        _real_dirs[head] = os.path.realpath(head)
    return os.path.join(_real_dirs[head], tail)


def shown(path):
    """Relative to the working directory when the real path lies under it, else the path as given.

    (Path.resolve() is os.path.realpath, and relative_to of a real path below another is the rest of the string;
    computed this way a Glob over thousands of files costs a realpath each, not two Path objects and a cwd lookup.)"""
    if not _here:
        _here.append(os.path.realpath(os.getcwd()))
    here = _here[0]
    real = real_path(str(path))
    if real == here:
        return "."
    prefix = here if here.endswith("/") else here + "/"
    if real.startswith(prefix):
        return real[len(prefix):]
    return str(path)


def target(args, key):
    given = args.get(key) or args.get("path")
    if not given:
        raise ValueError(key + " is required")
    return absolute(given)


def refuse_special(path, reading):
    """A FIFO would block the call, and reading a device other than /dev/null (/dev/zero, /dev/urandom) would never
    end; upstream's runner treats them as files. Refuse those; everything else behaves as upstream."""
    try:
        info = os.stat(str(path))
    except OSError:
        return  # missing or unreadable: the read or write below raises Python's own error, as upstream's does
    mode = info.st_mode
    endless = reading and (stat.S_ISBLK(mode) or (stat.S_ISCHR(mode) and info.st_rdev != os.makedev(1, 3)))
    if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or endless:
        raise ValueError("%s is not a regular file" % shown(path))


def load_text(path):
    refuse_special(path, True)
    return path.read_text(encoding="utf-8", errors="replace")


def store_text(path, text):
    refuse_special(path, False)
    path.write_text(text, encoding="utf-8")


def tool_read(args):
    path = target(args, "file_path")
    lines = load_text(path).splitlines()
    first = max(1, as_int(args.get("offset"), 1))
    count = as_int(args.get("limit"), 0)
    last = len(lines) if count <= 0 else min(len(lines), first - 1 + count)
    numbered = []
    for index in range(first - 1, last):
        numbered.append("%d. %s" % (index + 1, lines[index]))
    return clip(shown(path) + "\n" + "\n".join(numbered), Limits.read_chars())


def tool_write(args):
    path = target(args, "file_path")
    content = str(args.get("content", ""))
    path.parent.mkdir(parents=True, exist_ok=True)
    store_text(path, content)
    return "Wrote %s (%d bytes)." % (shown(path), len(content))


def tool_edit(args):
    path = target(args, "file_path")
    old = str(args.get("old_string") or "")
    new = str(args.get("new_string") or "")
    if not old:
        raise ValueError("old_string must be non-empty")
    text = load_text(path)
    found = text.count(old)
    every = is_true(args.get("replace_all"))
    if found == 0:
        raise ValueError("old_string was not found")
    if found > 1 and not every:
        raise ValueError(
            "old_string matched %d times; set replace_all=true or use a more specific old_string" % found
        )
    store_text(path, text.replace(old, new) if every else text.replace(old, new, 1))
    done = found if every else 1
    return "Edited %s (%d replacement%s)." % (shown(path), done, "" if done == 1 else "s")


class GlobTooLong(Exception):
    pass


def bounded_glob(pattern):
    """glob.glob(pattern, recursive=True), as upstream, within a time and a size bound: `**` follows directory
    links, so a symlink loop (a -> ., b -> .) or a search from / or /proc/self would otherwise run until the host's
    120 s limit ends the whole run. (A deliberate difference: upstream's runner hangs there.)"""
    seconds = Limits.number("FROGNANO_GLOB_SECONDS", 30)
    most = Limits.number("FROGNANO_GLOB_SCAN_MAX", 200000)

    def expire(signum, frame):
        raise GlobTooLong("searched for more than %d seconds" % seconds)

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        hits = []
        for hit in glob.iglob(pattern, recursive=True):
            hits.append(hit)
            if len(hits) > most:
                raise GlobTooLong("matched more than %d paths" % most)
        return hits
    except GlobTooLong as why:
        raise ValueError(
            "Glob stopped: it %s (a symlink loop, or too large a tree); narrow the pattern or the path" % why
        )
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def tool_glob(args):
    pattern = str(args.get("pattern") or "")
    if not pattern:
        raise ValueError("pattern is required")
    base = absolute(args.get("path") or ".")
    files = sorted(shown(Path(hit)) for hit in bounded_glob(str(base / pattern)) if os.path.isfile(hit))
    most = Limits.glob_files()
    if not files:
        return "No files matched."
    listing = "\n".join(files[:most])
    if len(files) > most:
        listing += "\n... %d more files" % (len(files) - most)
    return listing


def bash_seconds(args):
    """timeout_ms wins; `timeout` is seconds, or milliseconds when above 1000; at least 0.1 s."""
    if args.get("timeout_ms") is not None:
        return max(0.1, float(args["timeout_ms"]) / 1000.0)
    given = args.get("timeout")
    if given is None:
        return float(Limits.bash_seconds())
    seconds = float(given)
    if seconds > 1000:
        seconds = seconds / 1000.0
    return max(0.1, seconds)


def partial(captured):
    if captured is None:
        return ""
    if isinstance(captured, bytes):
        return captured.decode(errors="replace")
    return str(captured)


def tool_bash(args):
    command = str(args.get("command") or "")
    if not command:
        raise ValueError("command is required")
    seconds = bash_seconds(args)
    try:
        done = subprocess.run(
            ["/bin/bash", "-lc", command],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            universal_newlines=True,
            timeout=max(0.1, seconds),
            check=False,
        )
    except subprocess.TimeoutExpired as expired:
        report = "Timed out after %.1fs\nSTDOUT:\n%s\nSTDERR:\n%s" % (
            seconds,
            partial(expired.stdout),
            partial(expired.stderr),
        )
        return clip(report, Limits.bash_chars())
    report = "Exit code: %d\nSTDOUT:\n%s\nSTDERR:\n%s" % (
        done.returncode,
        done.stdout or "",
        done.stderr or "",
    )
    return clip(report, Limits.bash_chars())


TOOLS = {
    "Read": tool_read,
    "Write": tool_write,
    "Edit": tool_edit,
    "Glob": tool_glob,
    "Bash": tool_bash,
}


def observe(name, args):
    """The observation for one call; a failure is the exception's `Type: message`, as the model knows it."""
    run = TOOLS.get(name)
    if run is None:
        return "Unknown tool: " + name
    try:
        return run(args)
    except Exception as failure:
        return "%s: %s" % (type(failure).__name__, failure)


def request():
    if len(sys.argv) > 1 and sys.argv[1] not in ("", "-"):
        text = Path(sys.argv[1]).read_text(encoding="utf-8")
    else:
        text = sys.stdin.read()
    decoded = json.loads(text)
    if not isinstance(decoded, dict):
        raise ValueError("payload must be a JSON object")
    return decoded


def main():
    try:
        job = request()
        if job.get("workdir"):
            os.chdir(str(job["workdir"]))
        args = job.get("args")
        if args is None:
            args = job.get("arguments")
        answer = observe(str(job.get("tool") or ""), args if isinstance(args, dict) else {})
    except Exception as failure:
        answer = "leaf tool_runner error: %s: %s" % (type(failure).__name__, failure)
    sys.stdout.write(answer)
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
