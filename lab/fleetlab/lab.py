"""Bring the lab up, report on it, tear it down."""

import contextlib
import fcntl
import os
import shutil
import sys
import threading
import time

from fleetlab import cluster as labcluster
from fleetlab import control as labcontrol
from fleetlab import hub as labhub
from fleetlab import processes
from fleetlab import state as labstate
from fleetlab import topology
from fleetlab.access import write_access_files
from fleetlab.paths import LabPaths
from fleetlab.processes import ComponentFailed, LabError

CONTROL_PLANE = ['etcd', 'kube-apiserver', 'kube-controller-manager', 'helm', 'kubectl']
AGENTS = ['fleetcontroller', 'fleetagent', 'hubagent', 'memberagent', 'authtoken']
STATE_ENTRIES = ['state.json', 'state.lock', 'kubeconfig', 'inventory.yml', 'logs', 'pki', 'etcd', 'pods', 'bin', 'work']
APISERVER_TIMEOUT = labcontrol.APISERVER_TIMEOUT


def _build():
    from fleetlab import build  # pylint: disable=import-outside-toplevel
    return build


def say(message):
    """Progress output of the CLI."""
    print(message, flush=True)


def lab_status(paths):
    """('absent'|'running'|'partial'|'dead', state, dead entries)."""
    current = labstate.load(paths)
    if current is None:
        return 'absent', None, []
    entries = [e for _c, e in labstate.all_processes(current)]
    dead = [e for e in entries if not processes.alive(e)]
    if not entries or len(dead) == len(entries):
        return 'dead', current, dead
    # agents come and go with their pods; only the lab's own processes decide
    core = [e for c, e in labstate.all_processes(current) if c is None] + \
        [e for c in current.get('clusters', {}).values() for e in c.get('processes', [])]
    core_dead = [e for e in core if not processes.alive(e)]
    return ('partial' if core_dead else 'running'), current, core_dead


def clean(paths, keep_logs=False):
    """Remove the lab's files (only the entries the lab creates)."""
    if not paths.root.exists():
        return
    for name in STATE_ENTRIES:
        if keep_logs and name == 'logs':
            continue
        target = paths.root / name
        if target.is_dir() and not target.is_symlink():
            shutil.rmtree(target, ignore_errors=True)
        elif target.exists() or target.is_symlink():
            target.unlink()
    try:
        paths.root.rmdir()
    except OSError:
        pass


def choose_ports(members, hubs=1):
    """etcd client/peer ports and one API server port per cluster (in ``topology.cluster_names`` order).

    ``FLEETOPS_LAB_BASE_PORT=P`` pins them: etcd P and P+1, hub P+2, memberN P+2+N, hub2 P+3+N; otherwise free
    ports are picked. A pinned port that is busy is an error naming its listener.
    """
    base = os.environ.get('FLEETOPS_LAB_BASE_PORT')
    count = topology.port_count(members, hubs)
    if base:
        ports = topology.pinned_ports(int(base), members, hubs)
        for port in ports:
            check_port_free(port, count)
        return ports
    return free_ports(count)


def check_port_free(port, count):
    """LabError naming the listener if the pinned ``port`` is busy."""
    if processes.port_busy(port):
        owner = processes.listener_of(port)
        raise LabError('port %d on 127.0.0.1 is busy%s; stop that process or choose another FLEETOPS_LAB_BASE_PORT '
                       '(the lab uses %d consecutive ports from it)' % (port, ' (%s)' % owner if owner else '', count))


def free_ports(count):
    """``count`` distinct free ports."""
    ports = []
    while len(ports) < count:
        port = processes.free_port()
        if port not in ports:
            ports.append(port)
    return ports


class Starter:
    """One ``up``: records every process in state.json as soon as it starts, so a failure tears down all."""

    def __init__(self, paths, members, with_controllers, hubs=1):
        self.paths = paths
        self.members = members
        self.hubs = hubs
        self.with_controllers = with_controllers
        self.state = None
        self.watch = []   # (name, Popen, log) checked while waiting
        self.runner_proc = None

    def save(self):
        """Persist the state."""
        with labstate.locked(self.paths):
            current = labstate.load(self.paths)
            if current is not None:
                # keep what the runner wrote
                for name, cluster in current.get('clusters', {}).items():
                    if name in self.state['clusters']:
                        self.state['clusters'][name]['agents'] = cluster.get('agents', [])
            labstate.save(self.paths, self.state)

    def check_runner(self):
        """Raise if the agent runner exited."""
        if self.runner_proc is not None and self.runner_proc.poll() is not None:
            raise ComponentFailed('agent runner', 'exited with status %s' % self.runner_proc.returncode, self.paths.log('runner'))

    def up(self):
        """Start everything; returns the state."""
        started = time.monotonic()
        binaries, build = self._binaries()
        ports = choose_ports(self.members, self.hubs)
        clean(self.paths)
        for directory in (self.paths.root, self.paths.logs, self.paths.work, self.paths.pki):
            directory.mkdir(parents=True, exist_ok=True)
        os.chmod(self.paths.root, 0o700)
        clusters = self._start_control_plane(binaries, build, ports, started)
        write_access_files(self.paths, clusters, binaries)
        if self.with_controllers:
            self._start_controllers(clusters, binaries, build)
        else:
            self._wait_kcm(clusters)
        self.state['ready_seconds'] = round(time.monotonic() - started, 1)
        self.save()
        return self.state

    def _binaries(self):
        """(name -> path of every binary the lab needs, the build module); builds what is missing."""
        names = CONTROL_PLANE + (AGENTS if self.with_controllers else [])
        choose_ports(self.members, self.hubs)  # a pinned port that is busy fails before any build
        build = _build()
        binaries = {k: str(v) for k, v in build.ensure_binaries(names, log=lambda m: say('  ' + m)).items()}
        missing = [n for n in names if n not in binaries]
        if missing:
            raise LabError('binaries missing after build: %s (run: PYTHONPATH=lab python -m fleetlab build)' % ', '.join(missing))
        return binaries, build

    def _start_control_plane(self, binaries, build, ports, started):
        """etcd, then every API server (waited for), then the controller managers (not waited for)."""
        etcd = labcluster.Etcd(self.paths, binaries['etcd'], ports[0], ports[1])
        hubs = topology.hub_names(self.hubs)
        clusters = [labcluster.Cluster(self.paths, name, 'hub' if name in hubs else 'member', port, etcd.url, binaries)
                    for name, port in zip(topology.cluster_names(self.members, self.hubs), ports[2:])]
        self.state = {'version': labstate.VERSION, 'members': self.members, 'hubs': self.hubs, 'lab_dir': str(self.paths.root),
                      'kubeconfig': str(self.paths.kubeconfig), 'inventory': str(self.paths.inventory),
                      'controllers': self.with_controllers, 'binaries': binaries,
                      'image_binaries': dict(build.IMAGE_BINARIES) if self.with_controllers else {},
                      'clusters': {c.name: {'role': c.role, 'context': c.name, 'url': c.url, 'port': c.port,
                                            'etcd_prefix': c.etcd_prefix, 'ca_file': str(c.pki.ca_cert),
                                            'processes': [], 'agents': []} for c in clusters}}
        for c in clusters:
            c.prepare()
        proc = etcd.start()
        self.state['etcd'] = processes.record('etcd', proc, port=etcd.client_port, peer_port=etcd.peer_port)
        self.save()
        self.watch = [('etcd', proc, etcd.log)]
        processes.wait_until(etcd.healthy, 30, 'etcd health', self.watch)
        self._start_each(clusters, 'kube-apiserver', lambda c: (c.start_apiserver(), c.apiserver_log))
        for c in clusters:
            processes.wait_until(c.apiserver_ready, APISERVER_TIMEOUT, '%s API server /readyz' % c.name,
                                 [w for w in self.watch if w[0] == '%s kube-apiserver' % c.name] + self.watch[:1])
        say('  API servers ready (%.1fs)' % (time.monotonic() - started))
        self._start_each(clusters, 'kube-controller-manager', lambda c: (c.start_kcm(), c.kcm_log))
        return clusters

    def _start_each(self, clusters, process, start):
        for c in clusters:
            proc, log = start(c)
            self.state['clusters'][c.name]['processes'].append(processes.record(process, proc))
            self.watch.append(('%s %s' % (c.name, process), proc, log))
        self.save()

    def _start_controllers(self, clusters, binaries, build):
        """The agent runner, Fleet and KubeFleet on every hub, member CRDs; waits for the hubs' controllers."""
        self.start_runner()
        tools = labhub.Tools(self.paths, binaries)
        hubs = [c for c in clusters if c.role == 'hub']
        members = [c for c in clusters if c.role != 'hub']
        errors = []
        threads = [threading.Thread(target=self._guard, args=(errors, labhub.prepare_member, tools, m, build))
                   for m in members]
        for thread in threads:
            thread.start()
        self._wait_kcm(hubs)
        for hub in hubs:
            labhub.install_hub_controllers(tools, hub, build)
        for thread in threads:
            thread.join()
        if errors:
            raise errors[0]
        self._wait_kcm(members)
        for hub in hubs:
            labhub.wait_hub_controllers(tools, hub, APISERVER_TIMEOUT, self._check_all)

    @staticmethod
    def _guard(errors, func, *args):
        try:
            func(*args)
        except Exception as exc:  # pylint: disable=broad-except
            errors.append(exc)

    def _check_all(self):
        self.check_runner()
        for name, proc, log in self.watch:
            if proc.poll() is not None:
                raise ComponentFailed(name, 'exited with status %s' % proc.returncode, log)

    def _wait_kcm(self, clusters):
        for c in clusters:
            mine = [w for w in self.watch if w[0] in ('%s kube-controller-manager' % c.name, '%s kube-apiserver' % c.name)]
            processes.wait_until(c.kcm_ready, APISERVER_TIMEOUT, '%s controller manager (default ServiceAccount)' % c.name, mine)

    def start_runner(self):
        """Start the agent runner (``python -m fleetlab runner``)."""
        self.runner_proc = labcontrol.spawn_runner(self.paths)
        self.state['runner'] = processes.record('runner', self.runner_proc)
        self.save()


@contextlib.contextmanager
def exclusive(paths):
    """Serialise ``up`` and ``down`` of one lab directory (a flock on its parent directory)."""
    parent = paths.root.parent
    parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(parent, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def up(members=2, with_controllers=True, paths=None, hubs=1):
    """``up``: returns a process exit code (0 also when a lab already runs: nothing is changed then)."""
    ensure_up(members, with_controllers, paths, hubs)
    return 0


def ensure_up(members=2, with_controllers=True, paths=None, hubs=1):
    """Start a lab unless one runs (one with fewer hubs gains the missing ones); True if this call started it.

    Raises LabError."""
    topology.hub_names(hubs)  # 1 or 2
    paths = paths or LabPaths()
    with exclusive(paths):
        return _up(members, with_controllers, paths, hubs)


def _describe(hubs, members):
    return '%s + %d members' % (', '.join(topology.hub_names(hubs)), members)


def _up(members, with_controllers, paths, hubs=1):
    status, current, dead = lab_status(paths)
    if status == 'running' or (status == 'partial' and current.get('ready_seconds') is not None):
        return _heal(paths, current, members, hubs)
    if status == 'partial':
        names = ', '.join(sorted({e['name'] for e in dead}))
        raise LabError('a lab in %s is partially running and never finished starting (not running: %s); '
                       'run "python -m fleetlab down" first' % (paths.root, names))
    if status == 'dead':
        say('removing the state of a lab that no longer runs')
        _down(paths, quiet=True)
    say('starting lab: %s in %s' % (_describe(hubs, members), paths.root))
    starter = Starter(paths, members, with_controllers, hubs)
    try:
        result = starter.up()
    except BaseException:
        say('start failed; tearing down (logs kept in %s)' % paths.logs)
        _down(paths, quiet=True, keep_logs=True)
        raise
    say('lab ready in %.1fs' % result['ready_seconds'])
    say('  kubeconfig: %s (contexts: %s)' % (paths.kubeconfig, ', '.join(result['clusters'])))
    say('  inventory:  %s' % paths.inventory)
    say('  shell:      eval "$(PYTHONPATH=lab python -m fleetlab env)"')
    return True


def _heal(paths, current, members, hubs=1):
    """A lab that started once: start what is down and thaw what is frozen, with the same ports, PKI and data; then
    add the hubs it lacks (``--hubs 2`` on a one-hub lab), leaving everything else running."""
    try:
        acted = labcontrol.heal(paths, current, say=say)
    except LabError as exc:
        raise LabError('%s\nhealing the lab in %s failed; "python -m fleetlab down" then "up" starts a new one'
                       % (exc, paths.root)) from exc
    if acted:
        say('lab healed (%s) in %s' % (', '.join(acted), paths.root))
    have = current.get('hubs', 1)
    added = _add_hubs(paths, hubs) if hubs > have else []
    if not acted and not added:
        say('lab is already running (%s) in %s; nothing changed' % (_describe(have, current['members']), paths.root))
    if current['members'] != members:
        say('note: it has %d members, not %d; run "down" first to change that' % (current['members'], members))
    if hubs < have:
        say('note: it has %d hubs, not %d; run "down" first to change that' % (have, hubs))
    return False


def _add_hubs(paths, hubs):
    from fleetlab import hubs as labhubs  # pylint: disable=import-outside-toplevel
    started = time.monotonic()
    try:
        added = labhubs.add_hubs(paths, labstate.load(paths), hubs, _build(), say)
    except (LabError, RuntimeError) as exc:
        raise LabError('%s\nadding a hub to the lab in %s failed (logs in %s); "up --hubs %d" again finishes it, '
                       '"down" stops the whole lab' % (exc, paths.root, paths.logs, hubs)) from exc
    say('lab: %s added in %.1fs (kubeconfig contexts and inventory updated)' % (', '.join(added), time.monotonic() - started))
    return added


def down(paths=None, quiet=False, keep_logs=False):
    """``down``: stop every recorded process (runner first), remove the lab's files."""
    paths = paths or LabPaths()
    with exclusive(paths):
        return _down(paths, quiet, keep_logs)


def _down(paths, quiet=False, keep_logs=False):
    current = labstate.load(paths)
    if current is None and not paths.root.exists():
        if not quiet:
            say('no lab in %s' % paths.root)
        return 0
    current = current or {}
    if current.get('runner'):
        processes.stop(current['runner'], grace=30)
        current = labstate.load(paths) or current   # the runner recorded which agents it stopped
    clusters = current.get('clusters', {}).values()
    processes.stop_many([e for c in clusters for e in c.get('agents', [])], grace=5)
    # safety net: lab binaries still running inside the lab directory (e.g. after a runner crash)
    binaries = current.get('binaries') or {}
    agent_exes = [path for name, path in binaries.items() if name not in CONTROL_PLANE] + [sys.executable]
    _stop_leftovers(paths, agent_exes)
    processes.stop_many([e for c in clusters for e in c.get('processes', []) if e['name'] == 'kube-controller-manager'], grace=10)
    processes.stop_many([e for c in clusters for e in c.get('processes', [])], grace=15)
    if current.get('etcd'):
        processes.stop(current['etcd'], grace=15)
    _stop_leftovers(paths, list(binaries.values()) + [sys.executable])
    clean(paths, keep_logs=keep_logs)
    if not quiet:
        say('lab stopped; %s removed' % paths.root)
    return 0


def _stop_leftovers(paths, executables):
    stray = processes.leftovers(paths.root, executables) if paths.root.exists() else []
    for entry in stray:
        say('stopping leftover lab process %s (pid %d)' % (entry['name'], entry['pid']))
    processes.stop_many(stray, grace=5)


def component(action, name, paths=None):
    """``component ACTION NAME``: stop, kill, freeze, thaw or start one lab component; returns a message."""
    paths = paths or LabPaths()
    with exclusive(paths):
        return labcontrol.act(paths, action, name)


def rebuild(name, paths=None, new_ca=False):
    """``rebuild CLUSTER``: a member or a hub made again from nothing under the same name (a new kube-system UID)."""
    from fleetlab import rebuild as labrebuild  # pylint: disable=import-outside-toplevel
    paths = paths or LabPaths()
    with exclusive(paths):
        started = time.monotonic()
        deleted = labrebuild.rebuild(paths, name, _build(), new_ca=new_ca)
    return '%s rebuilt%s: %d objects removed, API server and controller manager started again (%.1fs)' % (
        name, ' with a new CA' if new_ca else '', deleted, time.monotonic() - started)


def _mib(value):
    return '%5.0f MiB' % (value / 2 ** 20)


def status_report(paths=None):
    """Dict describing the lab (for ``status --json`` and the bench)."""
    paths = paths or LabPaths()
    status, current, _dead = lab_status(paths)
    report = {'status': status, 'lab_dir': str(paths.root)}
    if current is None:
        return report
    report.update({'members': current.get('members'), 'hubs': current.get('hubs', 1), 'kubeconfig': current.get('kubeconfig'),
                   'inventory': current.get('inventory'), 'ready_seconds': current.get('ready_seconds'), 'clusters': {}})
    shared = []
    for key in ('etcd', 'runner'):
        entry = current.get(key)
        if entry:
            shared.append({'name': key, 'pid': entry['pid'], 'alive': processes.alive(entry),
                           'state': labcontrol.process_state(entry),
                           'rss': processes.group_rss_bytes(entry['pgid']) if processes.alive(entry) else 0})
    report['shared'] = shared
    report['components'] = labcontrol.listing(current)
    for name, cluster in current.get('clusters', {}).items():
        procs = []
        for kind in ('processes', 'agents'):
            for entry in cluster.get(kind, []):
                up_ = processes.alive(entry)
                procs.append({'name': entry['name'], 'kind': kind[:-2] if kind == 'processes' else 'agent', 'pid': entry['pid'],
                              'alive': up_, 'state': labcontrol.process_state(entry),
                              'rss': processes.rss_bytes(entry['pid']) if up_ else 0})
        report['clusters'][name] = {'role': cluster['role'], 'url': cluster['url'], 'context': cluster['context'], 'processes': procs,
                                    'rss': sum(p['rss'] for p in procs)}
    return report


def print_status(report):
    """Human-readable status."""
    if report['status'] == 'absent':
        say('no lab running (state dir %s)' % report['lab_dir'])
        return
    say('lab %s: %s, %s' % (report['status'], _describe(report.get('hubs', 1), report['members']), report['lab_dir']))
    say('  kubeconfig %s' % report['kubeconfig'])
    rows = [(p['name'], p) for p in report.get('shared', [])]
    rows += [(p['name'], p) for c in report['clusters'].values() for p in c['processes']]
    width = max([len(name) for name, _p in rows] + [10]) + 2

    def line(proc):
        shown = {'running': 'up    ', 'frozen': 'FROZEN'}.get(proc.get('state'), 'DOWN  ')
        return '    %s pid %-7d %s %s' % (proc['name'].ljust(width), proc['pid'], shown, _mib(proc['rss']))
    say('  shared')
    for proc in report.get('shared', []):
        say(line(proc))
    for name, cluster in report['clusters'].items():
        say('  %s  %s  (%s resident)' % (name, cluster['url'], _mib(cluster['rss']).strip()))
        for proc in cluster['processes']:
            say(line(proc))


def env_exports(paths=None):
    """Shell exports for using the lab: KUBECONFIG, PATH with .lab/bin (helm, kubectl), and the
    kubectl/helm discovery cache inside the lab directory so ``down`` removes it."""
    paths = paths or LabPaths()
    return 'export KUBECONFIG=%s\nexport KUBECACHEDIR=%s\nexport PATH=%s:"$PATH"\n' % (
        paths.kubeconfig, paths.work / 'kube-cache', paths.bin)
