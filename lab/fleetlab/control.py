"""Named lab components: list, stop, kill, freeze, thaw and start them; heal a lab that is partly down.

Names come from the state file (``state.json``): ``etcd`` and ``runner`` (shared by all clusters),
``<cluster>/<process>`` for a cluster's control plane (``hub/kube-apiserver``,
``member1/kube-controller-manager``) and ``<cluster>/<namespace>/<pod>/<container>`` for the agent
processes the runner realised from a pod (``member1/fleet-system/member-agent-5f7c9-x2x8q/member-agent``).
Short forms: ``<cluster>-apiserver`` and ``<cluster>-controller-manager``. A name may be an
``fnmatch`` pattern (``member1/fleet-system/member-agent-*/member-agent``) that names one component.

``stop`` is SIGTERM then SIGKILL after a grace period, ``kill`` SIGKILL, ``freeze`` SIGSTOP and
``thaw`` SIGCONT, each to the component's whole process group. ``start`` starts a stopped
control-plane component or the runner again from the state file, with its ports, certificates and
data, and waits until it is ready; for an agent it thaws a frozen one (the runner restarts agents
that exit, as a kubelet restarts containers). ``heal`` does that for every component that is down or
frozen: what ``up`` runs on a partially running lab.
"""

import fnmatch
import os
import signal
import sys
import time

from fleetlab import cluster as labcluster
from fleetlab import processes
from fleetlab import state as labstate
from fleetlab.processes import LabError

APISERVER_TIMEOUT = float(os.environ.get('FLEETOPS_LAB_START_TIMEOUT', '180'))
# A server started right after a kill can find its port held for a moment (the killed server's socket not yet gone,
# or a client connection whose ephemeral local port happens to be it): it is started again for this long.
PORT_RETRY_SECONDS = 60.0
ALIASES = {'-apiserver': 'kube-apiserver', '-controller-manager': 'kube-controller-manager'}
# start order when healing: storage, then API servers, then what talks to them
START_ORDER = {'etcd': 0, 'kube-apiserver': 1, 'kube-controller-manager': 2, 'runner': 3}


def process_state(entry):
    """'running', 'frozen' (SIGSTOP) or 'down' for a recorded process."""
    if not processes.alive(entry):
        return 'down'
    try:
        with open('/proc/%d/stat' % entry['pid'], encoding='ascii', errors='replace') as handle:
            stat = handle.read()
    except OSError:
        return 'down'
    return 'frozen' if stat[stat.rfind(')') + 2:].split()[0] in ('T', 't') else 'running'


def components(state):
    """Every component of the lab: dicts with name, kind (shared/control-plane/agent), cluster, process, entry."""
    result = []
    for key in ('etcd', 'runner'):
        if state.get(key):
            result.append({'name': key, 'kind': 'shared', 'cluster': None, 'process': key, 'entry': state[key]})
    for cluster, data in state.get('clusters', {}).items():
        for entry in data.get('processes', []):
            result.append({'name': '%s/%s' % (cluster, entry['name']), 'kind': 'control-plane', 'cluster': cluster,
                           'process': entry['name'], 'entry': entry})
        for entry in data.get('agents', []):
            result.append({'name': '%s/%s' % (cluster, entry['name']), 'kind': 'agent', 'cluster': cluster,
                           'process': entry.get('container'), 'entry': entry})
    return result


def canonical(name):
    """The state-file name for a short form (``hub-apiserver`` -> ``hub/kube-apiserver``)."""
    if '/' not in name:
        for suffix, process in ALIASES.items():
            if name.endswith(suffix) and len(name) > len(suffix):
                return '%s/%s' % (name[:-len(suffix)], process)
    return name


def resolve(state, name):
    """The one component ``name`` (exact, short form or pattern) names; LabError listing the names otherwise."""
    wanted = canonical(name)
    every = components(state)
    found = [c for c in every if c['name'] == wanted] or [c for c in every if fnmatch.fnmatchcase(c['name'], wanted)]
    if len(found) > 1:
        alive = [c for c in found if processes.alive(c['entry'])]
        found = alive if len(alive) == 1 else found
    if len(found) == 1:
        return found[0]
    known = ', '.join(c['name'] for c in every)
    if not found:
        raise LabError('no lab component named "%s"; the lab has: %s' % (name, known))
    raise LabError('"%s" names %d components (%s); give the full name' % (name, len(found), ', '.join(c['name'] for c in found)))


def _signal_group(entry, sig):
    if not processes.ours(entry):
        return False
    try:
        os.killpg(entry.get('pgid') or entry['pid'], sig)
    except ProcessLookupError:
        return False
    return True


def stop(component, grace=10.0):
    """SIGTERM (after SIGCONT, so a frozen one can act on it), SIGKILL after ``grace``."""
    _signal_group(component['entry'], signal.SIGCONT)
    processes.stop(component['entry'], grace=grace)


def kill(component):
    """SIGKILL to the component's process group (no chance to clean up), then reap it."""
    _signal_group(component['entry'], signal.SIGKILL)
    processes.stop(component['entry'], grace=0)


def freeze(component, timeout=10.0):
    """SIGSTOP: the process stays, answers nothing, holds its connections and leases. Returns once /proc shows it
    stopped: the signal is delivered asynchronously, and on a loaded machine a many-threaded API server still reads
    as running for a moment after kill() returned."""
    if not _signal_group(component['entry'], signal.SIGSTOP):
        raise LabError('%s is not running; nothing to freeze' % component['name'])
    processes.wait_until(lambda: process_state(component['entry']) != 'running', timeout,
                         '%s to stop after SIGSTOP' % component['name'], interval=0.05)


def thaw(component):
    """SIGCONT to a frozen component (no-op for a running one)."""
    if not _signal_group(component['entry'], signal.SIGCONT):
        raise LabError('%s is not running; start it instead ("component start %s")' % (component['name'], component['name']))


class Restarter:
    """Starts recorded components again exactly as ``up`` started them (same ports, PKI, data)."""

    def __init__(self, paths, state):
        self.paths = paths
        self.state = state
        binaries = state['binaries']
        etcd = state['etcd']
        self.etcd = labcluster.Etcd(paths, binaries['etcd'], etcd['port'], etcd['peer_port'])
        self.clusters = {name: labcluster.Cluster(paths, name, data['role'], data['port'], self.etcd.url, binaries)
                         for name, data in state['clusters'].items()}

    def start(self, component):
        """Start one component that is down and wait until it is ready; returns its new state entry."""
        process = component['process']
        if process == 'etcd':
            proc = self.etcd.start()
            processes.wait_until(self.etcd.healthy, 30, 'etcd health', [('etcd', proc, self.etcd.log)])
            entry = processes.record('etcd', proc, port=self.etcd.client_port, peer_port=self.etcd.peer_port)
        elif process == 'runner':
            proc = spawn_runner(self.paths)
            entry = processes.record('runner', proc)
        elif process in ('kube-apiserver', 'kube-controller-manager'):
            entry = self._start_cluster_process(self.clusters[component['cluster']], process)
        else:
            raise LabError('%s is an agent: the runner restarts it when it exits (thaw it if it is frozen)' % component['name'])
        self._record(component, entry)
        return entry

    def _start_cluster_process(self, cluster, process):
        deadline = time.monotonic() + PORT_RETRY_SECONDS
        while True:
            if process == 'kube-apiserver':
                proc, log, ready, what = cluster.start_apiserver(), cluster.apiserver_log, cluster.apiserver_ready, 'API server /readyz'
            else:
                proc, log, ready, what = cluster.start_kcm(), cluster.kcm_log, cluster.kcm_ready, 'controller manager'
            try:
                processes.wait_until(ready, APISERVER_TIMEOUT, '%s %s' % (cluster.name, what),
                                     [('%s %s' % (cluster.name, process), proc, log)])
                return processes.record(process, proc)
            except processes.ComponentFailed as exc:
                if 'address already in use' not in str(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(2)

    def _record(self, component, entry):
        def apply(current):
            if component['cluster'] is None:
                current[component['process']] = entry
                return
            entries = current['clusters'][component['cluster']]['processes']
            entries[:] = [entry if e['name'] == component['process'] else e for e in entries]
        self.state = labstate.update(self.paths, apply) or self.state


def spawn_runner(paths):
    """Start the agent runner (``python -m fleetlab runner``) for the lab in ``paths``; returns the Popen."""
    env = dict(os.environ)
    env['PYTHONPATH'] = os.pathsep.join([str(labcluster.__file__).rsplit('/fleetlab/', 1)[0]] +
                                        ([env['PYTHONPATH']] if env.get('PYTHONPATH') else []))
    env['FLEETOPS_LAB_DIR'] = str(paths.root)
    return processes.spawn('agent runner', [sys.executable, '-m', 'fleetlab', 'runner'], paths.log('runner'), env=env,
                           cwd=str(paths.root))


def heal_plan(state):
    """(components to start, components to thaw): what is down, in start order, and what is frozen.

    Agents are not started here: the runner restarts them (a fresh runner re-realises every pod).
    """
    down, frozen = [], []
    for component in components(state):
        status = process_state(component['entry'])
        if status == 'frozen':
            frozen.append(component)
        elif status == 'down' and component['kind'] != 'agent':
            down.append(component)
    down.sort(key=lambda c: START_ORDER.get(c['process'], 9))
    return down, frozen


def heal(paths, state, say=print):
    """Start what is down and thaw what is frozen; returns the names acted on."""
    down, frozen = heal_plan(state)
    for component in frozen:
        say('  thawing %s (pid %d)' % (component['name'], component['entry']['pid']))
        thaw(component)
    restarter = Restarter(paths, state) if down else None
    for component in down:
        say('  starting %s' % component['name'])
        entry = restarter.start(component)
        say('  %s running (pid %d)' % (component['name'], entry['pid']))
    return [c['name'] for c in frozen + down]


def act(paths, action, name):
    """Apply ``action`` (stop, kill, freeze, thaw, start) to the component ``name``; returns a message."""
    state = labstate.load(paths)
    if state is None:
        raise LabError('no lab in %s' % paths.root)
    component = resolve(state, name)
    status = process_state(component['entry'])
    if action == 'start':
        if status == 'frozen':
            thaw(component)
            return '%s thawed' % component['name']
        if status == 'running':
            return '%s is already running (pid %d)' % (component['name'], component['entry']['pid'])
        entry = Restarter(paths, state).start(component)
        return '%s started (pid %d)' % (component['name'], entry['pid'])
    handlers = {'stop': stop, 'kill': kill, 'freeze': freeze, 'thaw': thaw}
    if action not in handlers:
        raise LabError('unknown action "%s" (stop, kill, freeze, thaw, start)' % action)
    if status == 'down' and action in ('stop', 'kill'):
        return '%s is not running' % component['name']
    handlers[action](component)
    done = {'stop': 'stopped', 'kill': 'killed', 'freeze': 'frozen', 'thaw': 'thawed'}[action]
    return '%s: %s (pid %d)' % (component['name'], done, component['entry']['pid'])


def listing(state):
    """Components for ``status --json``: name, kind, cluster, pid and state (running/frozen/down)."""
    return [{'name': c['name'], 'kind': c['kind'], 'cluster': c['cluster'], 'pid': c['entry'].get('pid'),
             'state': process_state(c['entry'])} for c in components(state)]
