# The in-sandbox half of the verification scans (src/verify/scans/index.ts). Standard-library Python 3, run in a
# fresh sandbox of its own on a clean checkout of the base commit, in the bot's clean shell, without network.
# stdin: {"patch", "files": [{"path", "oldPath"?, "isNew", "added": [line, ...]}], "security", "secrets",
#         "banditTests", "toolTimeoutS", "maxFindings", "maxFileBytes", "maxFiles"}
# stdout: one JSON object {"scans": [...], "findings": [...]}. Secrets are masked HERE: nothing that leaves the
# sandbox repeats a secret value (only the rule, file, line and a masked form).
import json
import math
import os
import re
import shutil
import stat
import subprocess
import sys
import time

MAX_LINE = 8192


def rule(name, pattern, label, keep=0, group=0):
    return {"name": name, "re": re.compile(pattern), "label": label, "keep": keep, "group": group}


# Well-known formats. `keep` is how many leading characters of the match are a fixed, public prefix (shown).
RULES = [
    rule("aws-access-key-id", r"\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b", "AWS access key id", 4),
    rule("aws-secret-access-key",
         r"(?i)aws.{0,20}?(?:secret|private)?.{0,10}?(?:key|token)['\"]?\s*(?:=|:|=>)\s*['\"]?([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])",
         "AWS secret access key", 0, 1),
    rule("github-token", r"\bgh[pousr]_[A-Za-z0-9]{36,255}\b", "GitHub token", 4),
    rule("github-fine-grained-token", r"\bgithub_pat_[A-Za-z0-9_]{22,255}\b", "GitHub fine-grained token", 11),
    rule("gitlab-token", r"\bgl(?:pat|ptt|dt|rt)-[A-Za-z0-9_-]{20,}\b", "GitLab token", 5),
    rule("slack-token", r"\bxox[baprsoe]-[A-Za-z0-9-]{10,}\b", "Slack token", 5),
    rule("slack-webhook", r"https://hooks\.slack\.com/services/T[A-Za-z0-9_]+/B[A-Za-z0-9_]+/[A-Za-z0-9_]+",
         "Slack webhook URL", 29),
    rule("stripe-key", r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}\b", "Stripe secret key", 3),
    rule("google-api-key", r"\bAIza[0-9A-Za-z_-]{35}\b", "Google API key", 4),
    rule("private-key", r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----", "private key block", 0),
    rule("jwt", r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}", "JSON web token", 3),
]
GENERIC = re.compile(
    r"(?i)([A-Za-z0-9_.-]*(?:secret|passw(?:or)?d|pwd|token|api[_-]?key|access[_-]?key|private[_-]?key|credential|auth)"
    r"[A-Za-z0-9_.-]*)['\"]?\s*(?:=|:|:=|=>)\s*[rbuf]?['\"]([^'\"\s]{16,})['\"]"
)
PLACEHOLDER = re.compile(r"(?i)example|placeholder|changeme|dummy|xxxx|your[_-]|\$\{|<[a-z_]+>|^\*+$")
SEVERITY = {"LOW": "low", "MEDIUM": "medium", "HIGH": "high"}


def entropy(s):
    counts = {}
    for ch in s:
        counts[ch] = counts.get(ch, 0) + 1
    return -sum(c / len(s) * math.log2(c / len(s)) for c in counts.values())


def masked(value, keep):
    shown = value[:keep] if keep else ""
    return "%s%s (%d characters)" % (shown, "*" * 8, len(value))


def mask_text(text):
    """Masks every secret-shaped value in a text another tool wrote (bandit's messages quote code)."""
    for r in RULES:
        text = r["re"].sub("********", text)
    text = GENERIC.sub(lambda m: m.group(1) + " = ********", text)
    return re.sub(r"'[^']{12,}'|\"[^\"]{12,}\"", "'********'", text)


def secrets_in_line(text):
    found, spans = [], []
    for r in RULES:
        for m in r["re"].finditer(text):
            value = m.group(r["group"])
            spans.append(m.span())
            found.append((r["name"], "%s: %s" % (r["label"], masked(value, r["keep"]))))
            break
    for m in GENERIC.finditer(text):
        name, value = m.group(1), m.group(2)
        if any(s[0] < m.end() and m.start() < s[1] for s in spans):
            continue
        if PLACEHOLDER.search(value) or entropy(value) < 3.5:
            continue
        label = "high-entropy value assigned to %s" % name[:40]
        found.append(("high-entropy-secret", "%s: %s" % (label, masked(value, 0))))
        break
    return found


# Files of the patch that exist but could not be read: a scan that missed them must not read as "nothing found".
UNREADABLE = set()


def read_lines(path, max_bytes):
    """The lines of a regular file (a symlink or anything else is not read), or None."""
    try:
        st = os.lstat(path)
        if not stat.S_ISREG(st.st_mode) or st.st_size > max_bytes:
            return None
        with open(path, "rb") as f:
            return f.read(max_bytes).decode("utf-8", "replace").split("\n")
    except FileNotFoundError:
        return None
    except OSError:
        UNREADABLE.add(path)
        return None


def scan_secrets(files, req, out):
    seen = 0
    for f in files[: req["maxFiles"]]:
        lines = read_lines(f["path"], req["maxFileBytes"]) if f["added"] else None
        if lines is None:
            continue
        seen += 1
        for n in f["added"]:
            if n - 1 >= len(lines):
                continue
            for name, message in secrets_in_line(lines[n - 1][:MAX_LINE]):
                out.append({"kind": "secret", "tool": "secrets", "rule": name, "severity": "high",
                            "file": f["path"], "line": n, "message": message})
    return {"tool": "secrets", "ran": True, "files": seen}


class ToolFailed(Exception):
    pass


def run_bandit(paths, req, deadline):
    """bandit's results on `paths` (relative to the workspace), with the pinned test set."""
    exe = shutil.which("bandit")
    if exe is None:
        raise ToolFailed("bandit is not installed in the sandbox image")
    if not paths:
        return []
    left = deadline - time.monotonic()
    if left <= 0:
        raise ToolFailed("timed out after %g s" % req["toolTimeoutS"])
    argv = [exe, "-f", "json", "-q", "-t", req["banditTests"], "--"] + paths
    try:
        p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, timeout=left, check=False)
    except subprocess.TimeoutExpired:
        raise ToolFailed("timed out after %g s" % req["toolTimeoutS"])
    if p.returncode not in (0, 1):
        raise ToolFailed("bandit crashed (exit %d)" % p.returncode)
    try:
        return json.loads(p.stdout.decode("utf-8", "replace")).get("results", [])
    except ValueError:
        raise ToolFailed("bandit crashed (its output was not JSON)")


def code_key(r, lines):
    n = int(r.get("line_number", 0))
    text = lines[n - 1].strip() if lines and 0 < n <= len(lines) else ""
    return (r.get("test_id", ""), text)


def bandit_base(files, req, deadline):
    """Keys (rule, new-side path, line text) of what bandit finds on the base versions of the patch's files."""
    old = {}
    for f in files:
        src = f.get("oldPath") or f["path"]
        if not f["isNew"] and src.endswith(".py") and read_lines(src, req["maxFileBytes"]) is not None:
            old[src] = f["path"]
    keys = {}
    for r in run_bandit(sorted(old), req, deadline):
        src = os.path.normpath(r.get("filename", ""))
        if src not in old:
            continue
        k = (old[src],) + code_key(r, read_lines(src, req["maxFileBytes"]))
        keys[k] = keys.get(k, 0) + 1
    return keys


def bandit_new(files, base, req, deadline, out):
    added = {f["path"]: set(f["added"]) for f in files if f["path"].endswith(".py") and f["added"]}
    paths = sorted(p for p in added if read_lines(p, req["maxFileBytes"]) is not None)
    for r in run_bandit(paths, req, deadline):
        path = os.path.normpath(r.get("filename", ""))
        n = int(r.get("line_number", 0))
        if path not in added or n not in added[path]:
            continue
        k = (path,) + code_key(r, read_lines(path, req["maxFileBytes"]))
        if base.get(k, 0) > 0:
            base[k] -= 1  # the same finding on the same code was on the base: moved, not new
            continue
        out.append({"kind": "security", "tool": "bandit", "rule": r.get("test_id", "?"),
                    "severity": SEVERITY.get(r.get("issue_severity", ""), "medium"), "file": path, "line": n,
                    "message": mask_text("%s: %s" % (r.get("test_name", ""), r.get("issue_text", "")))[:500]})
    return {"tool": "bandit", "ran": True, "files": len(paths)}


def apply_patch(patch):
    p = subprocess.run(["git", "apply", "--whitespace=nowarn", "-"], input=patch.encode("utf-8", "surrogateescape"),
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120, check=False)
    return p.returncode == 0


def main():
    req = json.loads(sys.stdin.read())
    files = [f for f in req["files"]][: req["maxFiles"]]
    py = [f for f in files if f["path"].endswith(".py")]
    deadline = time.monotonic() + req["toolTimeoutS"]
    scans, findings, base, base_error = [], [], {}, None
    if req["security"]:
        try:
            base = bandit_base(py, req, deadline)
        except ToolFailed as e:
            base_error = str(e)
    if not apply_patch(req["patch"]):
        reason = "the patch does not apply to the base commit"
        tools = (["bandit"] if req["security"] else []) + (["secrets"] if req["secrets"] else [])
        print(json.dumps({"scans": [{"tool": t, "ran": False, "reason": reason} for t in tools], "findings": []}))
        return
    if req["security"]:
        try:
            if base_error:
                raise ToolFailed(base_error)
            scans.append(bandit_new(py, base, req, deadline, findings))
        except ToolFailed as e:
            scans.append({"tool": "bandit", "ran": False, "reason": str(e)})
    if req["secrets"]:
        scans.append(scan_secrets(files, req, findings))
    if UNREADABLE:
        reason = "the scanner could not read %d of the patch's files in the sandbox" % len(UNREADABLE)
        scans = [dict(s, ran=False, reason=reason) if s.get("ran") else s for s in scans]
    print(json.dumps({"scans": scans, "findings": findings[: req["maxFindings"]]}))


main()
