"""Host processes of the lab: start in their own process group, identify, measure, stop.

A process is recorded as ``{"name", "pid", "pgid", "start": <jiffies since boot>}``; the start
time guards against signalling an unrelated process that reused a recorded pid.
"""

import errno
import os
import signal
import socket
import subprocess
import time


class LabError(Exception):
    """An error a user can act on; the message says what happened and what to do."""


class ComponentFailed(LabError):
    """A lab component exited or did not become ready."""

    def __init__(self, name, reason, log_path=None):
        self.name = name
        self.log_path = log_path
        message = '%s %s' % (name, reason)
        if log_path:
            last = tail(log_path)
            message += '\n--- last lines of %s ---\n%s' % (log_path, last)
            if 'address already in use' in last:
                message += ('\n--- a port the lab picked is in use by another process; run "up" again, or pin the ports '
                            'with FLEETOPS_LAB_BASE_PORT=<free port range start>')
        super().__init__(message)


def tail(path, lines=25):
    """Last ``lines`` lines of a text file ('' if it does not exist)."""
    try:
        with open(path, 'rb') as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - 16384))
            data = handle.read().decode(errors='replace')
    except OSError:
        return ''
    return '\n'.join(data.splitlines()[-lines:])


def start_time(pid):
    """Start time of ``pid`` in clock ticks since boot, or None if it does not exist."""
    try:
        with open('/proc/%d/stat' % pid, encoding='ascii', errors='replace') as handle:
            stat = handle.read()
    except OSError:
        return None
    # the command name (field 2) may contain spaces and parentheses: split after the last ')'
    fields = stat[stat.rfind(')') + 2:].split()
    if fields[0] == 'Z':
        return None
    return int(fields[19])


def spawn(name, argv, log_path, env=None, cwd=None):
    """Start ``argv`` in a new session (own process group), output appended to ``log_path``."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, 'ab') as log:
        try:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                    env=env, cwd=cwd, start_new_session=True, close_fds=True)
        except OSError as exc:
            raise ComponentFailed(name, 'could not be started: %s' % exc) from exc
    return proc


def record(name, proc, **extra):
    """State record of a process started by ``spawn``."""
    entry = {'name': name, 'pid': proc.pid, 'pgid': proc.pid, 'start': start_time(proc.pid)}
    entry.update(extra)
    return entry


def alive(entry):
    """True if the recorded process still runs (same pid and start time)."""
    if not entry or not entry.get('pid'):
        return False
    current = start_time(entry['pid'])
    return current is not None and (entry.get('start') is None or current == entry['start'])


def group_members(pgid):
    """Pids of live processes in process group ``pgid``."""
    pids = []
    for name in os.listdir('/proc'):
        if not name.isdigit():
            continue
        try:
            with open('/proc/%s/stat' % name, encoding='ascii', errors='replace') as handle:
                stat = handle.read()
        except OSError:
            continue
        fields = stat[stat.rfind(')') + 2:].split()
        if fields[0] != 'Z' and int(fields[2]) == pgid:
            pids.append(int(name))
    return pids


def ours(entry):
    """True if the recorded process (group) still exists and is the one recorded.

    The leader is checked by pid and start time. If the leader is gone, members left in its group
    are still ours: Linux does not reuse an id while a process group of that id exists.
    """
    if not entry or not entry.get('pid'):
        return False
    current = start_time(entry['pid'])
    if current is not None:
        return entry.get('start') is None or current == entry['start']
    return bool(group_members(entry.get('pgid') or entry['pid']))


def stop(entry, grace=10.0):
    """Stop a recorded process and its whole process group: SIGTERM, then SIGKILL after ``grace``."""
    stop_many([entry], grace)


def stop_many(entries, grace=10.0):
    """Stop several recorded processes at once: SIGTERM to every group, wait, SIGKILL what is left."""
    entries = [e for e in entries if e]
    live = [e.get('pgid') or e['pid'] for e in entries if ours(e)]
    for pgid in live:
        _signal_group(pgid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while live and time.monotonic() < deadline:
        for entry in entries:
            _reap(entry.get('pid'))
        live = [g for g in live if group_members(g)]
        time.sleep(0.1)
    for pgid in live:
        _signal_group(pgid, signal.SIGKILL)
    deadline = time.monotonic() + 5
    while live and time.monotonic() < deadline:
        for entry in entries:
            _reap(entry.get('pid'))
        live = [g for g in live if group_members(g)]
        time.sleep(0.05)
    for entry in entries:
        _reap(entry.get('pid'))


def leftovers(root, executables):
    """Processes running one of ``executables`` with a working directory inside ``root`` (the lab's own)."""
    root = os.path.realpath(root)
    wanted = {os.path.realpath(e) for e in executables}
    found = []
    for name in filter(str.isdigit, os.listdir('/proc')):
        try:
            cwd = os.readlink('/proc/%s/cwd' % name)
            exe = os.readlink('/proc/%s/exe' % name)
        except OSError:
            continue
        if exe in wanted and (cwd == root or cwd.startswith(root + os.sep)):
            pid = int(name)
            try:
                if os.getpgid(pid) != pid:   # the lab starts every process as a group leader
                    continue
            except OSError:
                continue
            found.append({'name': os.path.basename(exe), 'pid': pid, 'pgid': pid, 'start': start_time(pid)})
    return found


def _signal_group(pgid, sig):
    try:
        os.killpg(pgid, sig)
    except OSError as exc:
        if exc.errno != errno.ESRCH:
            raise


def _reap(pid):
    """Collect a child's exit status if it is our child (no zombie left)."""
    if not pid:
        return
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def rss_bytes(pid):
    """Resident set size of ``pid`` in bytes (0 if gone)."""
    try:
        with open('/proc/%d/status' % pid, encoding='ascii', errors='replace') as handle:
            for line in handle:
                if line.startswith('VmRSS:'):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def group_rss_bytes(pgid):
    """Summed RSS of every process in a process group."""
    return sum(rss_bytes(pid) for pid in group_members(pgid))


def free_port():
    """A TCP port on 127.0.0.1 that is free right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


def port_busy(port):
    """True if something listens on 127.0.0.1:port (or the port cannot be bound)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(('127.0.0.1', port))
        except OSError:
            return True
    return False


def listener_of(port):
    """Best-effort description of the process listening on ``port`` (for error messages)."""
    inode = None
    for table in ('/proc/net/tcp', '/proc/net/tcp6'):
        try:
            with open(table, encoding='ascii') as handle:
                next(handle)
                for line in handle:
                    parts = line.split()
                    if int(parts[1].rsplit(':', 1)[1], 16) == port and parts[3] == '0A':
                        inode = parts[9]
                        break
        except OSError:
            continue
        if inode:
            break
    if not inode:
        return None
    target = 'socket:[%s]' % inode
    for pid in filter(str.isdigit, os.listdir('/proc')):
        try:
            for fd in os.listdir('/proc/%s/fd' % pid):
                if os.readlink('/proc/%s/fd/%s' % (pid, fd)) == target:
                    with open('/proc/%s/cmdline' % pid, 'rb') as handle:
                        cmd = handle.read().split(b'\0')[0].decode(errors='replace')
                    return 'pid %s (%s)' % (pid, cmd)
        except OSError:
            continue
    return None


def wait_until(check, timeout, what, procs=(), interval=0.2):
    """Poll ``check()`` until truthy; fail early if one of ``procs`` ((name, Popen, log)) exits."""
    deadline = time.monotonic() + timeout
    while True:
        for name, proc, log in procs:
            code = proc.poll()
            if code is not None:
                raise ComponentFailed(name, 'exited with status %s while waiting for %s' % (code, what), log)
        result = check()
        if result:
            return result
        if time.monotonic() > deadline:
            name, _proc, log = procs[0] if procs else (what, None, None)
            raise ComponentFailed(name, 'not ready after %ds (waiting for %s)' % (timeout, what), log)
        time.sleep(interval)
