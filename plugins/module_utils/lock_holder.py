# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which controller process holds a member lock, and whether that process still runs.

A lock names the ansible-playbook process of its run: the host name, the boot id (``/proc/sys/kernel/random/boot_id``,
new at every boot), the PID namespace (a container's PIDs are not the host's), the process id and its start time (a PID
reused by a later process has another), and AWX's job id when AWX runs it (AWX puts ``JOB_ID`` in the job's
environment). The module process is short-lived and so is the worker ansible-playbook forks for each task: the run is
the topmost of the consecutive ancestors that run the ansible-playbook command (the worker is a fork of it, with the
same command line). A module run by something else (a test, a script) is held by its parent process.

Only a run on the same controller - same host, boot and PID namespace - can see whether the holder still runs; there a
holder whose process is gone (or is another process now) has died, and its lock is taken over at once. Anywhere else a
live lock is waited for, unless the run is told to take it over.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import socket

PROC = "/proc"
# Commands whose process is the run (the first two words of a command line: the script, or the interpreter and it).
RUN_COMMANDS = ("ansible-playbook", "ansible", "ansible-console", "ansible-pull")
SAME_CONTROLLER_KEYS = ("host", "boot_id", "pid_namespace")
# How many parents to climb at most (a module is a few processes below its run).
MAX_DEPTH = 32


def _read(path):
    try:
        with open(path, "rb") as handle:
            return handle.read().decode("utf-8", "replace")
    except (IOError, OSError):
        return None


def process_stat(pid, proc=PROC):
    """``(parent pid, start time in clock ticks after boot)`` of ``pid``, None when no such process is visible."""
    stat = _read(os.path.join(proc, str(pid), "stat"))
    if not stat or ")" not in stat:
        return None
    fields = stat.rsplit(")", 1)[1].split()  # the command name may hold spaces and parentheses
    try:
        return int(fields[1]), int(fields[19])
    except (IndexError, ValueError):
        return None


def command_line(pid, proc=PROC):
    return [word for word in (_read(os.path.join(proc, str(pid), "cmdline")) or "").split("\0") if word]


def runs_ansible(argv):
    """Whether a command line is an Ansible run (``ansible-playbook ...`` or ``python .../ansible-playbook ...``)."""
    return any(os.path.basename(word) in RUN_COMMANDS for word in argv[:2])


def run_process(pid=None, proc=PROC):
    """The process id of the run a module process belongs to (see the module docstring), None when unknown."""
    chain = []
    current = os.getpid() if pid is None else pid
    while len(chain) < MAX_DEPTH:
        stat = process_stat(current, proc)
        if stat is None or stat[0] <= 0:
            break
        current = stat[0]
        chain.append((current, command_line(current, proc)))
    for index, (found, argv) in enumerate(chain):
        if runs_ansible(argv):
            for parent, parent_argv in chain[index + 1:]:
                if parent_argv != argv:
                    break
                found = parent
            return found
    return chain[0][0] if chain else None


def this_controller(environ=None, proc=PROC, pid=None):
    """The identity of the run this process belongs to, as a lock records it."""
    environ = os.environ if environ is None else environ
    holder = run_process(pid, proc)
    namespace = None
    try:
        namespace = os.readlink(os.path.join(proc, "self", "ns", "pid"))
    except (OSError, AttributeError):
        pass
    stat = process_stat(holder, proc) if holder else None
    return {
        "host": socket.gethostname(),
        "boot_id": (_read(os.path.join(proc, "sys", "kernel", "random", "boot_id")) or "").strip() or None,
        "pid_namespace": namespace,
        "pid": holder,
        "started": stat[1] if stat else None,
        "job": environ.get("JOB_ID") or environ.get("AWX_JOB_ID") or None,
    }


def encode(identity):
    return json.dumps(identity, sort_keys=True, separators=(",", ":"))


def decode(text):
    """The identity a lock recorded; None for none or one written by hand that does not parse."""
    try:
        identity = json.loads(text) if text else None
    except ValueError:
        return None
    return identity if isinstance(identity, dict) else None


def alive(pid, started, proc=PROC):
    """Whether process ``pid`` runs here and is the one that started at ``started`` (not a later one given its PID)."""
    stat = process_stat(pid, proc)
    return stat is not None and (started is None or stat[1] == started)


def same_controller(holder, here):
    """Whether ``holder`` ran on this controller: same host, boot and PID namespace, each known."""
    return bool(holder and here) and all(holder.get(key) and holder.get(key) == here.get(key) for key in SAME_CONTROLLER_KEYS)


def takeover_reason(holder, here, is_alive, takeover=False):
    """Why a live lock held by ``holder`` (its recorded identity, or None) may be taken over now, or None to wait for it.

    ``here``: this run's identity; ``is_alive(pid, started)``: whether that process runs on this controller;
    ``takeover``: the run was told to take over whatever holds the lock."""
    if takeover:
        return "lock_takeover is set"
    if not same_controller(holder, here):
        return None
    pid = holder.get("pid")
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return None
    if is_alive(pid, holder.get("started")):
        return None
    return "its run (process %d on %s) no longer runs" % (pid, holder["host"])


def describe(identity):
    """``process 4242 on ctl-1, AWX job 42`` of a recorded identity ('' when none)."""
    if not identity:
        return ""
    words = "process %s on %s" % (identity.get("pid") or "?", identity.get("host") or "?")
    if identity.get("job"):
        words += ", AWX job %s" % identity["job"]
    return words
