"""What a failed lab test leaves to explain it: the lab's logs copied where the lab's teardown cannot remove them, and
the last lines of the agents' and Fleet controller's logs written during the test, for the failure report.

``.cache/test-failures/<test>/`` (FLEETOPS_TEST_FAILURES moves it) gets the whole ``logs/`` directory of the lab
(control planes, the agent runner, every agent and controller process the runner realised) and the test's own run
logs (``*.log`` in its ``tmp_path``). Tokens are cut from the lines printed in the report.
"""

import os
import re
import shutil
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# Processes whose logs say why an agent did or did not register (file names: <namespace>.<pod>.<container>.log).
EXPLAINING = ("fleet-agent", "member-agent", "agentmanagement", "fleet-controller", "hub-agent")
TAIL_LINES = 15
MAX_FILES = 8
JWT = re.compile(r"eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]+")
TOKEN_VALUE = re.compile(r"(?i)(token[\"']?\s*[:=]\s*[\"']?)[^\s\"',}]{8,}")


def failures_dir():
    return Path(os.environ.get("FLEETOPS_TEST_FAILURES") or REPO / ".cache" / "test-failures")


def redact(line):
    return TOKEN_VALUE.sub(r"\1<redacted>", JWT.sub("<redacted-jwt>", line))


def _safe_name(nodeid):
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", nodeid).strip("_")[:150]


def keep(nodeid, lab_root, run_dir=None, since=None):
    """Copy the lab's logs (those written to since ``since``, epoch seconds, if given) and ``run_dir``'s ``*.log`` for
    the test ``nodeid``; returns the folder (0700)."""
    target = failures_dir() / _safe_name(nodeid)
    if target.exists():
        shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True, mode=0o700)
    os.chmod(target, 0o700)
    logs = Path(lab_root) / "logs"
    if logs.is_dir():
        fresh = None if since is None else (lambda d, names: [n for n in names if os.path.isfile(os.path.join(d, n))
                                                              and os.path.getmtime(os.path.join(d, n)) < since])
        shutil.copytree(logs, target / "lab-logs", dirs_exist_ok=True, ignore=fresh)
    if run_dir is not None and Path(run_dir).is_dir():
        for log in sorted(Path(run_dir).glob("*.log")):
            shutil.copy2(log, target / log.name)
    return target


def tail(path, lines=TAIL_LINES):
    with open(path, "rb") as handle:
        handle.seek(0, os.SEEK_END)
        size = handle.tell()
        handle.seek(max(0, size - 64 * 1024))
        text = handle.read().decode("utf-8", "replace")
    return [redact(line) for line in text.splitlines()[-lines:]]


def explaining_logs(lab_root, since):
    """The agent and controller logs written to since ``since`` (epoch seconds), newest first."""
    logs = Path(lab_root) / "logs"
    if not logs.is_dir():
        return []
    found = [path for path in logs.rglob("*.log")
             if any(word in path.name for word in EXPLAINING) and path.stat().st_mtime >= since]
    return sorted(found, key=lambda p: -p.stat().st_mtime)[:MAX_FILES]


def report(nodeid, lab_root, since, run_dir=None):
    """The text a failed lab test's report gets: where its logs were kept, and their last lines."""
    kept = keep(nodeid, lab_root, run_dir)
    parts = ["lab logs kept in %s" % kept]
    for path in explaining_logs(lab_root, since):
        age = time.time() - path.stat().st_mtime
        parts.append("--- last lines of %s (%ds ago) ---" % (path.relative_to(Path(lab_root) / "logs"), age))
        parts.extend(tail(path))
    return "\n".join(parts)
