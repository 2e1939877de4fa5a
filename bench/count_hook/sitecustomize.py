"""Benchmark probe: counts the API round trips and Helm runs of every Ansible module process (bench/scale.py).

Put on PYTHONPATH only for the counting re-run, with FLEETOPS_BENCH_CALLS=<file>: in a process whose command line
is an AnsiballZ module wrapper it wraps urllib3's request method (what the kubernetes client sends through) and
subprocess.Popen (Helm), and appends one JSON line per process at exit: module, requests (method, host:port, path,
without query strings or bodies), the Helm subcommands and the CPU seconds of the process and of its children.

In ansible-playbook itself it does the same for each worker process that sends API requests: a module whose action
runs its code in the controller (plugin_utils/controller_run.py: member_info, hub_prepare on a local connection). Its
line is marked ``in_controller``. Other processes are left alone.
"""

import atexit
import json
import os
import re
import time


def _argv():
    try:
        with open('/proc/self/cmdline', 'rb') as handle:
            return handle.read().split(b'\0')
    except OSError:
        return []


def _module_name():
    for arg in _argv():
        match = re.search(rb'AnsiballZ_([A-Za-z0-9_]+)\.py', arg)
        if match:
            return match.group(1).decode()
    return None


def _install(path, module, in_controller=False):
    """Count this process's requests and Helm runs; returns the function that appends its line."""
    record = {'module': module, 'pid': os.getpid(), 'start': time.time(), 'requests': [], 'helm': [], 'in_controller': in_controller}
    try:
        from urllib3 import connectionpool
    except ImportError:
        connectionpool = None
    if connectionpool is not None:
        original = connectionpool.HTTPConnectionPool.urlopen

        def urlopen(self, method, url, *args, **kwargs):
            record['requests'].append([method, '%s:%s' % (self.host, self.port), url.split('?', 1)[0]])
            return original(self, method, url, *args, **kwargs)
        connectionpool.HTTPConnectionPool.urlopen = urlopen

    import subprocess
    popen_init = subprocess.Popen.__init__

    def init(self, args, *rest, **kwargs):
        argv = [a.decode('utf-8', 'replace') if isinstance(a, bytes) else str(a)
                for a in (args if isinstance(args, (list, tuple)) else [args])]
        if argv and os.path.basename(argv[0]) == 'helm':
            record['helm'].append(argv[1] if len(argv) > 1 else '')
        popen_init(self, args, *rest, **kwargs)
    subprocess.Popen.__init__ = init

    def dump():
        record['end'] = time.time()
        times = os.times()
        record['cpu'] = times.user + times.system
        record['children_cpu'] = times.children_user + times.children_system
        with open(path, 'a') as handle:
            handle.write(json.dumps(record) + '\n')
    dump.record = record
    return dump


def _count_workers(path):
    """In ansible-playbook: a line for each worker whose task sent API requests (it exits with os._exit, no atexit)."""
    from ansible.executor.process import worker

    run_task = worker.WorkerProcess._run

    def _run(self):
        dump = _install(path, str(self._task.action).rsplit('.', 1)[-1], in_controller=True)
        try:
            return run_task(self)
        finally:
            if dump.record['requests']:
                dump()
    worker.WorkerProcess._run = _run


def _is_ansible_playbook():
    return any(os.path.basename(arg) == b'ansible-playbook' for arg in _argv()[:2])


_PATH = os.environ.get('FLEETOPS_BENCH_CALLS')
if _PATH:
    _MODULE = _module_name()
    if _MODULE:
        atexit.register(_install(_PATH, _MODULE))
    elif _is_ansible_playbook():
        _count_workers(_PATH)
