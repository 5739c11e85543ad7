# The in-sandbox half of the verification scans (src/verify/scans/index.ts). Standard-library Python 3, run in a
# fresh sandbox of its own on a clean checkout of the base commit, in the bot's clean shell, without network.
# stdin: {"patch", "files": [{"path", "oldPath"?, "isNew", "added": [line, ...]}], "security", "secrets",
#         "banditTests", "eslint": {"bundleDir", "rules": {rule: severity}, "script"}, "toolTimeoutS", "maxFindings",
#         "maxFileBytes", "maxFiles"}
# The analysers (bandit for Python, ESLint for JavaScript/TypeScript through eslint.mjs) run on the base versions of
# the patch's files, then on the patched ones; a finding is new when its rule, file and code line were not on the base.
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


def run_tool(argv, stdin, budget, req):
    """Runs one analyser process within what is left of its own time budget (toolTimeoutS for its base and patched
    runs together, however long the other analysers took), and charges the time it took."""
    if budget["left"] <= 0:
        raise ToolFailed("timed out after %g s" % req["toolTimeoutS"])
    started = time.monotonic()
    try:
        return subprocess.run(argv, input=stdin, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                              timeout=budget["left"], check=False)
    except subprocess.TimeoutExpired:
        raise ToolFailed("timed out after %g s" % req["toolTimeoutS"])
    finally:
        budget["left"] -= time.monotonic() - started


def run_bandit(paths, req, budget):
    """bandit's results on `paths` (relative to the workspace), with the pinned test set, as (rule, line, severity,
    message) dicts."""
    if not paths:
        return []  # nothing to look at: whether bandit is installed does not matter
    exe = shutil.which("bandit")
    if exe is None:
        raise ToolFailed("bandit is not installed in the sandbox image")
    argv = [exe, "-f", "json", "-q", "-t", req["banditTests"], "--"] + paths
    p = run_tool(argv, None, budget, req)
    if p.returncode not in (0, 1):
        raise ToolFailed("bandit crashed (exit %d)" % p.returncode)
    try:
        results = json.loads(p.stdout.decode("utf-8", "replace")).get("results", [])
    except ValueError:
        raise ToolFailed("bandit crashed (its output was not JSON)")
    return [{"path": os.path.normpath(r.get("filename", "")), "rule": r.get("test_id", "?"),
             "line": int(r.get("line_number", 0)), "severity": SEVERITY.get(r.get("issue_severity", ""), "medium"),
             "message": "%s: %s" % (r.get("test_name", ""), r.get("issue_text", ""))} for r in results]


def run_eslint(paths, req, budget):
    """ESLint's results on `paths` with the pinned rules (eslint.mjs, the bundle at req["eslint"]["bundleDir"]). The
    texts are read here, with this script's bounds; eslint.mjs opens no file of the repository."""
    if not paths:
        return []
    cfg = req["eslint"]
    exe = shutil.which("node")
    if exe is None:
        raise ToolFailed("node is not installed in the sandbox image")
    if not os.path.isfile(os.path.join(cfg["bundleDir"], "node_modules", "eslint", "package.json")):
        raise ToolFailed("the eslint bundle is not installed in the sandbox (%s)" % cfg["bundleDir"])
    files = []
    for p in paths:
        lines = read_lines(p, req["maxFileBytes"])
        if lines is not None:
            files.append({"path": p, "text": "\n".join(lines)})
    stdin = json.dumps({"bundleDir": cfg["bundleDir"], "rules": cfg["rules"], "files": files}).encode("utf-8")
    p = run_tool([exe, "--input-type=module", "-e", cfg["script"]], stdin, budget, req)
    try:
        out = json.loads(p.stdout.decode("utf-8", "replace").strip().split("\n")[-1])
    except ValueError:
        raise ToolFailed("eslint crashed (exit %d)" % p.returncode)
    if p.returncode != 0 or "results" not in out:
        raise ToolFailed(str(out.get("error") or "eslint crashed (exit %d)" % p.returncode)[:200])
    found = []
    for r in out["results"]:
        if r.get("fatal"):
            UNPARSED.setdefault(r["path"], r["fatal"])
        for m in r.get("messages", []):
            found.append({"path": r["path"], "rule": m["rule"], "line": int(m["line"]),
                          "severity": cfg["rules"].get(m["rule"], "medium"), "message": "%s: %s" % (m["rule"], m["message"])})
    return found


# The analysers: which files each looks at, and how it is run (each within its own time budget, see run_tool).
ANALYSERS = {
    "bandit": {"ext": (".py",), "run": run_bandit},
    "eslint": {"ext": (".js", ".mjs", ".cjs", ".jsx", ".ts", ".mts", ".cts", ".tsx"), "run": run_eslint},
}
# Patched files eslint could not parse (path -> reason): not checked, which the scan's status must say.
UNPARSED = {}


def code_key(r, lines):
    n = r["line"]
    text = lines[n - 1].strip() if lines and 0 < n <= len(lines) else ""
    return (r["rule"], text)


def scan_base(tool, files, req, budget):
    """Keys (rule, new-side path, line text) of what `tool` finds on the base versions of the patch's files."""
    old = {}
    for f in files:
        src = f.get("oldPath") or f["path"]
        if not f["isNew"] and src.endswith(ANALYSERS[tool]["ext"]) and read_lines(src, req["maxFileBytes"]) is not None:
            old[src] = f["path"]
    keys = {}
    for r in ANALYSERS[tool]["run"](sorted(old), req, budget):
        if r["path"] not in old:
            continue
        k = (old[r["path"]],) + code_key(r, read_lines(r["path"], req["maxFileBytes"]))
        keys[k] = keys.get(k, 0) + 1
    UNPARSED.clear()  # a base file that does not parse only means nothing was on the base
    return keys


def scan_new(tool, files, base, req, budget, out):
    ext = ANALYSERS[tool]["ext"]
    added = {f["path"]: set(f["added"]) for f in files if f["path"].endswith(ext) and f["added"]}
    paths = sorted(p for p in added if read_lines(p, req["maxFileBytes"]) is not None)
    for r in ANALYSERS[tool]["run"](paths, req, budget):
        path, n = r["path"], r["line"]
        if path not in added or n not in added[path]:
            continue
        k = (path,) + code_key(r, read_lines(path, req["maxFileBytes"]))
        if base.get(k, 0) > 0:
            base[k] -= 1  # the same finding on the same code was on the base: moved, not new
            continue
        out.append({"kind": "security", "tool": tool, "rule": r["rule"], "severity": r["severity"], "file": path,
                    "line": n, "message": mask_text(r["message"])[:500]})
    if UNPARSED:
        first = sorted(UNPARSED)[0]
        raise ToolFailed("%s could not parse %d of the patch's files (%s, %s)"
                         % (tool, len(UNPARSED), mask_text(first)[:100], mask_text(UNPARSED[first])[:120]))
    return {"tool": tool, "ran": True, "files": len(paths)}


def apply_patch(patch):
    p = subprocess.run(["git", "apply", "--whitespace=nowarn", "-"], input=patch.encode("utf-8", "surrogateescape"),
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120, check=False)
    return p.returncode == 0


def main():
    req = json.loads(sys.stdin.read())
    files = [f for f in req["files"]][: req["maxFiles"]]
    tools = ["bandit", "eslint"] if req["security"] else []
    budgets, base, base_error = {}, {}, {}
    for tool in tools:
        budgets[tool] = {"left": req["toolTimeoutS"]}
        try:
            base[tool] = scan_base(tool, files, req, budgets[tool])
        except ToolFailed as e:
            base_error[tool] = str(e)
    if not apply_patch(req["patch"]):
        reason = "the patch does not apply to the base commit"
        names = tools + (["secrets"] if req["secrets"] else [])
        print(json.dumps({"scans": [{"tool": t, "ran": False, "reason": reason} for t in names], "findings": []}))
        return
    scans, findings = [], []
    for tool in tools:
        try:
            if tool in base_error:
                raise ToolFailed(base_error[tool])
            scans.append(scan_new(tool, files, base[tool], req, budgets[tool], findings))
        except ToolFailed as e:
            scans.append({"tool": tool, "ran": False, "reason": str(e)})
    if req["secrets"]:
        scans.append(scan_secrets(files, req, findings))
    if UNREADABLE:
        reason = "the scanner could not read %d of the patch's files in the sandbox" % len(UNREADABLE)
        scans = [dict(s, ran=False, reason=reason) if s.get("ran") else s for s in scans]
    print(json.dumps({"scans": scans, "findings": findings[: req["maxFindings"]]}))


main()
