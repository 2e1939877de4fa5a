"""Process supervision of realised pods: start, restart with back-off, report status, stop.

A ``PodRun`` owns one pod's container processes. ``supervise()`` (called by the runner's main
loop) prepares the pod's sandbox, starts containers whose start time has come, restarts exited
ones with back-off (restartCount, lastState and Ready=False are reported meanwhile) and writes the
pod status through ``pods/status`` like a kubelet once every container has run for a moment.
``stop()`` ends every process (no restart after it) and removes the pod directory.
"""

import json
import logging
import threading
import time

from fleetlab import processes
from fleetlab.podspec import NotReadyYet
from fleetlab.sandbox import PodSandbox

LOG = logging.getLogger('fleetlab.runner')

READY_AFTER = 1.0
MAX_BACKOFF = 60.0
STOP_GRACE = 10.0


def now_rfc3339():
    """Current UTC time as Kubernetes writes it."""
    return time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())


def exit_record(code, started_rfc):
    """``lastState.terminated`` of a container that exited with ``code`` (negative: killed by a signal)."""
    return {'exitCode': code if code >= 0 else 128 - code, 'finishedAt': now_rfc3339(),
            'startedAt': started_rfc, 'reason': 'Completed' if code == 0 else 'Error'}


def next_backoff(backoff, ran_seconds):
    """Back-off before the next restart: reset after a 2-minute run, else doubled up to MAX_BACKOFF."""
    return 1.0 if ran_seconds > 120 else min(backoff * 2, MAX_BACKOFF)


class ContainerRun:
    """One container realised as a host process."""

    def __init__(self, spec, binary_name, binary_path):
        self.spec = spec
        self.name = spec['name']
        self.binary_name = binary_name
        self.binary_path = binary_path
        self.proc = None
        self.entry = None
        self.started_at = None
        self.started_rfc = None
        self.restarts = 0
        self.next_start = 0.0
        self.backoff = 1.0
        self.last_exit = None
        self.waiting_reason = None
        self.waiting_message = None

    def running(self):
        """True while the process runs."""
        return self.proc is not None and self.proc.poll() is None

    def wait(self, reason, message):
        """Record why the container is not running."""
        self.waiting_reason, self.waiting_message = reason, message

    def status(self):
        """The container's entry in ``containerStatuses``."""
        ready = self.running() and time.monotonic() - self.started_at >= READY_AFTER
        entry = {'name': self.name, 'image': self.spec.get('image', ''), 'imageID': '', 'restartCount': self.restarts,
                 'ready': ready, 'started': self.running()}
        if self.running():
            entry['state'] = {'running': {'startedAt': self.started_rfc}}
        else:
            entry['state'] = {'waiting': {'reason': self.waiting_reason or 'ContainerCreating',
                                          'message': self.waiting_message or ''}}
        if self.last_exit:
            entry['lastState'] = {'terminated': self.last_exit}
        return entry


class PodRun:
    """A realised pod: its sandbox and its container processes."""

    def __init__(self, runner, cluster, pod, containers):
        self.runner = runner
        self.cluster = cluster
        meta = pod['metadata']
        self.namespace = meta['namespace']
        self.name = meta['name']
        self.uid = meta['uid']
        self.sandbox = PodSandbox(runner.apis[cluster], cluster, pod,
                                  runner.paths.pods / cluster / ('%s_%s' % (self.namespace, self.name)))
        self.containers = containers
        self.reported = None    # last status signature written
        self.lock = threading.Lock()   # supervise (main loop) vs stop (deletion thread)
        self.stopped = False
        self.retry_at = 0.0     # after a missing Secret/ConfigMap/ServiceAccount, retry later

    @property
    def pod(self):
        """The latest version of the pod."""
        return self.sandbox.pod

    @pod.setter
    def pod(self, value):
        self.sandbox.pod = value

    @property
    def api(self):
        """Admin API of the pod's cluster."""
        return self.runner.apis[self.cluster]

    def label(self):
        """namespace/pod."""
        return '%s/%s' % (self.namespace, self.name)

    def log_path(self, run):
        """Log file of a container."""
        return self.runner.paths.logs / self.cluster / ('%s.%s.%s.log' % (self.namespace, self.name, run.name))

    def start(self, run):
        """Start one container's process."""
        try:
            argv, env, cwd = self.sandbox.container_config(run.spec, run.binary_name, run.binary_path)
        except NotReadyYet as exc:
            run.wait('CreateContainerConfigError', str(exc))
            run.next_start = time.monotonic() + 5
            return
        log = self.log_path(run)
        log.parent.mkdir(parents=True, exist_ok=True)
        with open(log, 'ab') as handle:
            handle.write(('--- %s starting %s (restart %d)\n' % (now_rfc3339(), run.binary_name, run.restarts)).encode())
        run.proc = processes.spawn('%s %s/%s' % (self.cluster, self.label(), run.name), argv, log, env=env, cwd=str(cwd))
        run.entry = processes.record('%s/%s/%s' % (self.namespace, self.name, run.name), run.proc, binary=run.binary_name,
                                     namespace=self.namespace, pod=self.name, container=run.name, log=str(log))
        run.started_at = time.monotonic()
        run.started_rfc = now_rfc3339()
        run.wait(None, None)
        LOG.info('%s %s: started container %s (%s) pid %d', self.cluster, self.label(), run.name, run.binary_name, run.proc.pid)

    def supervise(self):
        """Start, restart and report; returns True if the set of processes changed."""
        with self.lock:
            if self.stopped:
                return False
            return self._supervise()

    def _supervise(self):
        if time.monotonic() < self.retry_at:
            return False
        try:
            self.sandbox.refresh()
        except NotReadyYet as exc:
            if not self.sandbox.prepared:
                for run in self.containers:
                    run.wait('ContainerCreating', str(exc))
            LOG.info('%s %s: waiting: %s', self.cluster, self.label(), exc)
            self.retry_at = time.monotonic() + 5
            self.report()
            return False
        changed = False
        for run in self.containers:
            if run.proc is not None and run.proc.poll() is not None:
                self._exited(run)
                changed = True
            if run.proc is None and time.monotonic() >= run.next_start:
                self.start(run)
                changed = changed or run.proc is not None
        self.report()
        return changed

    def _exited(self, run):
        """Book-keeping for a container whose process ended: back-off before the restart."""
        code = run.proc.returncode
        LOG.warning('%s %s: container %s exited with %s (log %s)', self.cluster, self.label(), run.name, code, self.log_path(run))
        processes.stop(run.entry, grace=1)
        run.last_exit = exit_record(code, run.started_rfc)
        run.backoff = next_backoff(run.backoff, time.monotonic() - (run.started_at or 0))
        run.next_start = time.monotonic() + run.backoff
        run.restarts += 1
        run.proc = run.entry = None
        run.wait('CrashLoopBackOff', 'back-off %ds restarting failed container' % run.backoff)

    def status(self):
        """Pod status as a kubelet would report it."""
        statuses = [run.status() for run in self.containers]
        flag = 'True' if all(s['ready'] for s in statuses) else 'False'
        conditions = [{'type': 'Initialized', 'status': 'True'},
                      {'type': 'ContainersReady', 'status': flag},
                      {'type': 'Ready', 'status': flag}]
        return {'phase': 'Running' if any(r.started_at for r in self.containers) else 'Pending',
                'conditions': conditions, 'containerStatuses': statuses}

    def report(self):
        """Write the pod status when it changed."""
        status = self.status()
        signature = json.dumps(status, sort_keys=True)
        if signature == self.reported:
            return
        stamp = now_rfc3339()
        for cond in status['conditions']:
            cond['lastTransitionTime'] = stamp
            cond['lastProbeTime'] = None
        if self.reported is None:
            status['startTime'] = stamp
        try:
            self.api.patch_pod_status(self.namespace, self.name, status)
            self.reported = signature
        except Exception as exc:  # pylint: disable=broad-except
            LOG.warning('%s %s: status update failed: %s', self.cluster, self.label(), exc)

    def stop(self, grace=STOP_GRACE):
        """Stop every container and remove the pod directory (no restart after this)."""
        with self.lock:
            self.stopped = True
            self._stop(grace)

    def _stop(self, grace):
        entries = [run.entry for run in self.containers if run.entry]
        for entry in entries:
            LOG.info('%s %s: stopping %s pid %d', self.cluster, self.label(), entry['name'], entry['pid'])
        processes.stop_many(entries, grace=grace)
        for run in self.containers:
            run.proc = run.entry = None
        self.sandbox.remove()
