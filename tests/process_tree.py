"""Killing a whole ansible-playbook run, as a controller that dies (a node lost, a container killed) ends it.

``os.killpg`` on the playbook's process group is not that: ansible-core's workers leave it (each calls ``setsid``, or
``setpgid`` with session isolation off), so a worker keeps running its task after the playbook is gone. CI once met
such an orphan: the worker of the role's ``always`` release retried until the killed hub API server was back and then
released the lock the test meant to leave behind. Here every process of the run is stopped first (so none forks or
exits meanwhile), then killed.
"""

import os
import signal


def _children():
    """{pid: [child pids]} of every process now."""
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry) as handle:
                stat = handle.read()
        except OSError:  # gone meanwhile
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])  # the command may hold spaces and parentheses
        children.setdefault(parent, []).append(int(entry))
    return children


def descendants(pid):
    """The pids of ``pid``'s children, their children, and so on."""
    tree, found, todo = _children(), [], [pid]
    while todo:
        for child in tree.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _signal(pids, signum):
    for pid in pids:
        try:
            os.kill(pid, signum)
        except ProcessLookupError:
            pass


def kill_tree(pid):
    """SIGKILL ``pid`` and every process below it, stopped first so that the tree cannot change while it is read.
    Returns the pids killed (``pid`` first)."""
    stopped = stop_tree(pid)
    _signal(stopped, signal.SIGKILL)
    return stopped


def stop_tree(pid):
    """SIGSTOP ``pid`` and every process below it (a controller frozen: nothing of the run acts any more, until
    kill_tree ends it). Returns the pids stopped (``pid`` first)."""
    stopped = [pid]
    _signal(stopped, signal.SIGSTOP)
    while True:
        more = [child for child in descendants(pid) if child not in stopped]
        if not more:
            break
        _signal(more, signal.SIGSTOP)
        stopped.extend(more)
    return stopped
