"""What ``bench/scale.py`` does to the world: the bench's own lab, ansible-playbook runs, reads of the hub.

The lab is the ordinary one (``python -m fleetlab``) in a directory of its own (``.cache/bench-lab``), so a demo
or test lab is never touched. Playbooks run with the project's ansible-playbook (the kubernetes.core baseline with
the benchmark virtualenv's), the lab's inventory, the bench_timer callback and one log file per run.
"""

import calendar
import json
import os
import resource
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import yaml

from scale_figures import lab_processes, load_timings

REPO_ROOT = Path(__file__).resolve().parents[1]
OUT_DIR = REPO_ROOT / '.cache' / 'bench'
LAB_DIR = Path(os.environ.get('FLEETOPS_BENCH_LAB_DIR', REPO_ROOT / '.cache' / 'bench-lab'))
COLLECTIONS = REPO_ROOT / '.cache' / 'collections'
KCORE_VENV = OUT_DIR / 'venv-kcore'
KCORE_REQUIREMENTS = REPO_ROOT / 'bench' / 'requirements-kcore.txt'
FLEET_NAMESPACE = 'fleet-default'
FLEET = ('fleet.cattle.io', 'v1alpha1')
KUBEFLEET = ('cluster.kubernetes-fleet.io', 'v1beta1')


def lab_env():
    """The environment with the bench lab's directory."""
    env = dict(os.environ)
    env['FLEETOPS_LAB_DIR'] = str(LAB_DIR)
    # The figures count Fleet check-in intervals and compare with earlier runs: the agents keep the timing they had
    # then (the test lab's shorter interval and lease retry would make a join fewer seconds but more intervals).
    env.setdefault('FLEETOPS_LAB_CHECKIN_INTERVAL', '15s')
    env.setdefault('FLEETOPS_LAB_ELECTION_RETRY_PERIOD', '')
    env['PYTHONPATH'] = os.pathsep.join(filter(None, [str(REPO_ROOT / 'lab'), env.get('PYTHONPATH')]))
    return env


def fleetlab(*args, capture=False):
    """``python -m fleetlab <args>`` on the bench lab; returns the CompletedProcess."""
    return subprocess.run([sys.executable, '-m', 'fleetlab'] + list(args), cwd=str(REPO_ROOT), env=lab_env(),
                          check=False, text=True, stdout=subprocess.PIPE if capture else None)


def lab_report():
    """``fleetlab status --json`` of the bench lab (status 'absent' when there is none)."""
    proc = fleetlab('status', '--json', capture=True)
    return json.loads(proc.stdout or '{"status": "absent"}')


def lab_up(members):
    """Start the bench lab unless it runs; returns (started by us, seconds)."""
    if lab_report().get('status') == 'running':
        return False, 0.0
    started = time.monotonic()
    if fleetlab('up', '--members', str(members)).returncode != 0:
        fleetlab('down')
        raise SystemExit('bench: the lab did not start (see its output above)')
    return True, time.monotonic() - started


def lab_down():
    """Stop the bench lab."""
    fleetlab('down')


def ensure_collection():
    """The collection as users get it (``make collection``: the built tarball installed into .cache/collections)."""
    subprocess.run(['make', '--no-print-directory', 'collection'], cwd=str(REPO_ROOT), check=True)


def pin_collection(destination):
    """Run the playbooks from here on with a copy of the installed collection at ``destination``: a long run (the
    soak) then keeps the code it started with while ``make collection`` installs a changed checkout for other work.
    Returns the commit the copy was built from."""
    global COLLECTIONS  # pylint: disable=global-statement
    ensure_collection()
    commit = git_commit()
    if destination.exists():
        shutil.rmtree(destination)
    shutil.copytree(COLLECTIONS / 'ansible_collections', destination / 'ansible_collections', symlinks=True)
    COLLECTIONS = destination
    return commit


def ensure_kcore_venv():
    """The benchmark virtualenv with the `ansible` package (kubernetes.core inside); returns its ansible-playbook."""
    playbook = KCORE_VENV / 'bin' / 'ansible-playbook'
    stamp = KCORE_VENV / '.installed'
    if playbook.exists() and stamp.exists() and stamp.stat().st_mtime >= KCORE_REQUIREMENTS.stat().st_mtime:
        return playbook
    print('== installing the kubernetes.core baseline into %s (the `ansible` package from PyPI)' % KCORE_VENV, flush=True)
    base = getattr(sys, '_base_executable', sys.executable)
    subprocess.run([base, '-m', 'venv', str(KCORE_VENV)], check=True)
    subprocess.run([str(KCORE_VENV / 'bin' / 'pip'), 'install', '--quiet', '-r', str(KCORE_REQUIREMENTS)], check=True)
    stamp.touch()
    return playbook


def inventory():
    """The lab's inventory (path, parsed)."""
    path = LAB_DIR / 'inventory.yml'
    with open(path) as handle:
        return path, yaml.safe_load(handle)


def hosts_of(parsed, group):
    """Host names of a group of the lab inventory, member2 after member1 and before member10."""
    hosts = list((((parsed.get('all') or {}).get('children') or {}).get(group) or {}).get('hosts') or {})
    return sorted(hosts, key=lambda name: (len(name), name))


def _children_cpu():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


class Playbook:
    """One ansible-playbook run, started now and finished with ``wait()``."""

    def __init__(self, label, playbook, inv, limit=None, extra_vars=None,  # pylint: disable=too-many-arguments
                 forks=12, ansible_playbook=None, env=None, extra_args=(), wrapper=()):
        OUT_DIR.mkdir(parents=True, exist_ok=True)
        logs = OUT_DIR / 'logs'
        logs.mkdir(exist_ok=True)
        self.label = label
        self.log = logs / (label + '.log')
        self.timings = logs / (label + '.timings.jsonl')
        if self.timings.exists():
            self.timings.unlink()
        # wrapper: an argv prefix the run starts under (the latency stage's ``ip netns exec <namespace>``)
        argv = list(wrapper) + [str(ansible_playbook or Path(sys.executable).with_name('ansible-playbook')), '-i', str(inv),
                                str(playbook), '--forks', str(forks)]
        if limit:
            argv += ['--limit', ','.join(limit)]
        for key, value in (extra_vars or {}).items():
            argv += ['-e', '%s=%s' % (key, value)]
        argv += list(extra_args)
        run_env = dict(os.environ)
        run_env.update({'ANSIBLE_COLLECTIONS_PATH': str(COLLECTIONS), 'ANSIBLE_CALLBACK_PLUGINS': str(REPO_ROOT / 'bench' / 'callback_plugins'),
                        'ANSIBLE_CALLBACKS_ENABLED': 'bench_timer', 'FLEETOPS_BENCH_TIMINGS': str(self.timings),
                        'ANSIBLE_NOCOLOR': '1', 'ANSIBLE_FORCE_COLOR': '0'})
        run_env.update(env or {})
        self.started = time.monotonic()
        self.started_epoch = time.time()
        self.cpu_before = _children_cpu()
        self.cpu = None
        with open(self.log, 'w') as handle:
            self.proc = subprocess.Popen(argv, cwd=str(REPO_ROOT), env=run_env, stdout=handle, stderr=subprocess.STDOUT)
        self.seconds = None
        self.rc = None

    def wait(self):
        """Wait for the run; returns self with rc, seconds and records (the callback's timings)."""
        self.rc = self.proc.wait()
        self.seconds = time.monotonic() - self.started
        # CPU of ansible-playbook, its workers, module processes and Helm (all reaped descendants); with runs
        # in parallel it mixes theirs, so only sequential runs report it.
        self.cpu = _children_cpu() - self.cpu_before
        return self

    @property
    def records(self):
        """The bench_timer records of the run."""
        if not self.timings.exists():
            return []
        with open(self.timings) as handle:
            return load_timings(handle)

    def tail(self, lines=25):
        """The end of the run's output."""
        with open(self.log) as handle:
            return ''.join(handle.readlines()[-lines:])


def wait_all(runs, poll=0.2):
    """Wait for concurrent runs, each timed to its own end; returns them."""
    pending = list(runs)
    while pending:
        for run in list(pending):
            if run.proc.poll() is not None:
                run.wait()
                pending.remove(run)
        if pending:
            time.sleep(poll)
    return list(runs)


def run_playbook(*args, **kwargs):
    """Start a playbook and wait for it; says so when it failed."""
    run = Playbook(*args, **kwargs).wait()
    print('   %-28s rc=%d  %6.1f s  CPU %6.1f s  (log %s)' % (run.label, run.rc, run.seconds, run.cpu, os.path.relpath(run.log, REPO_ROOT)),
          flush=True)
    if run.rc != 0:
        print(run.tail(), flush=True)
    return run


class Hub:
    """Reads of the lab hub through the kubernetes client (the benchmark's own, not the collection's)."""

    def __init__(self, context='hub'):
        from kubernetes import client, config  # pylint: disable=import-outside-toplevel
        api = config.new_client_from_config(config_file=str(LAB_DIR / 'kubeconfig'), context=context)
        self.api = api
        self.custom = client.CustomObjectsApi(api)
        self.core = client.CoreV1Api(api)

    def metrics(self):
        """The API server's ``/metrics`` text (the lab's admin may read it)."""
        method, url, headers = self.api.param_serialize('GET', '/metrics', auth_settings=['BearerToken'])[:3]
        response = self.api.call_api(method, url, header_params=headers)
        response.read()
        return response.data.decode()

    def fleet_clusters(self, selector=None):
        """Fleet Clusters in fleet-default."""
        return self.custom.list_namespaced_custom_object(*FLEET, FLEET_NAMESPACE, 'clusters', label_selector=selector or '')['items']

    def member_clusters(self, selector=None):
        """KubeFleet MemberClusters."""
        return self.custom.list_cluster_custom_object(*KUBEFLEET, 'memberclusters', label_selector=selector or '')['items']

    def registration_tokens(self):
        """Names of the ClusterRegistrationTokens in fleet-default."""
        items = self.custom.list_namespaced_custom_object(*FLEET, FLEET_NAMESPACE, 'clusterregistrationtokens')['items']
        return [item['metadata']['name'] for item in items]

    def checkin_interval(self):
        """Fleet's agentCheckinInterval as configured on the hub (ConfigMap fleet-controller), as text."""
        cm = self.core.read_namespaced_config_map('fleet-controller', 'cattle-fleet-system')
        return json.loads((cm.data or {}).get('config') or '{}').get('agentCheckinInterval')

    def joined_state(self, names):
        """{name: True when its Fleet Cluster has a check-in and its MemberCluster is Joined}."""
        seen = {c['metadata']['name']: bool(((c.get('status') or {}).get('agent') or {}).get('lastSeen')) for c in self.fleet_clusters()}
        joined = {}
        for member in self.member_clusters():
            conditions = (member.get('status') or {}).get('conditions') or []
            joined[member['metadata']['name']] = any(c.get('type') == 'Joined' and c.get('status') == 'True' for c in conditions)
        return {name: seen.get(name, False) and joined.get(name, False) for name in names}

    def contacts(self, name):
        """``(KubeFleet heartbeat, Fleet check-in, heartbeatPeriodSeconds)`` the hub records for member ``name``."""
        member = self.custom.get_cluster_custom_object(*KUBEFLEET, 'memberclusters', name)
        agents = [a for a in (member.get('status') or {}).get('agentStatus') or [] if a.get('type') == 'MemberAgent']
        cluster = self.custom.get_namespaced_custom_object(*FLEET, FLEET_NAMESPACE, 'clusters', name)
        return (agents[0].get('lastReceivedHeartbeat') if agents else None, ((cluster.get('status') or {}).get('agent') or {}).get('lastSeen'),
                (member.get('spec') or {}).get('heartbeatPeriodSeconds'))

    def present(self, names):
        """Names that have a Fleet Cluster or a MemberCluster on the hub."""
        existing = {c['metadata']['name'] for c in self.fleet_clusters()} | {m['metadata']['name'] for m in self.member_clusters()}
        return [name for name in names if name in existing]

    def delete_labelled(self, selector):
        """Delete the Clusters and MemberClusters with a label (benchmark objects without agents; finalizers cleared)."""
        for cluster in self.fleet_clusters(selector):
            self.custom.delete_namespaced_custom_object(*FLEET, FLEET_NAMESPACE, 'clusters', cluster['metadata']['name'])
        for member in self.member_clusters(selector):
            name = member['metadata']['name']
            self.custom.delete_cluster_custom_object(*KUBEFLEET, 'memberclusters', name)
            # No agent will ever acknowledge the leave of a member that never joined; the hub would wait 15 min.
            try:
                self.custom.patch_cluster_custom_object(*KUBEFLEET, 'memberclusters', name, {'metadata': {'finalizers': None}})
            except Exception:  # pylint: disable=broad-except
                pass  # already gone


class ContactSampler(threading.Thread):
    """Reads a member's last heartbeat and check-in every half second until stopped, then until the hub has recorded
    one of each after the stop (so the gap a run leaves is closed) or ``settle`` seconds have passed."""

    def __init__(self, hub, name, settle=180):
        super().__init__(daemon=True)
        self.hub, self.name, self.settle = hub, name, settle
        self.heartbeats, self.checkins, self.period = set(), set(), None
        self.stopped = threading.Event()
        self.stopped_at = None

    def run(self):
        while True:
            heartbeat, checkin, self.period = self.hub.contacts(self.name)
            self.heartbeats.add(heartbeat)
            self.checkins.add(checkin)
            if self.stopped.is_set() and (self._heard_after() or time.time() > self.stopped_at + self.settle):
                return
            time.sleep(0.5)

    def _heard_after(self):
        def after(stamps):
            return any(epoch(stamp) and epoch(stamp) > self.stopped_at for stamp in stamps)
        return after(self.heartbeats) and after(self.checkins)

    def finish(self):
        """Stop sampling once both agents were heard from after now; returns (heartbeat epochs, check-in epochs)."""
        self.stopped_at = time.time()
        self.stopped.set()
        self.join()
        return [epoch(s) for s in self.heartbeats], [epoch(s) for s in self.checkins]


def epoch(stamp):
    """An RFC 3339 UTC timestamp as epoch seconds (None stays None)."""
    if not stamp:
        return None
    return calendar.timegm(time.strptime(stamp.split('.')[0].rstrip('Z'), '%Y-%m-%dT%H:%M:%S'))


def lab_pss(report):
    """(summed PSS, process count) of the lab's live processes (shared pages counted once); the RSS figure is
    scale_figures.lab_memory_bytes."""
    pids = [p['pid'] for _name, p in lab_processes(report) if p.get('alive')]
    pss = 0
    for pid in pids:
        try:
            with open('/proc/%d/smaps_rollup' % pid) as handle:
                for line in handle:
                    if line.startswith('Pss:'):
                        pss += int(line.split()[1]) * 1024
                        break
        except OSError:
            continue
    return pss, len(pids)


def write_json(path, data, sort_keys=True):
    """Write JSON (trailing newline)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, 'w') as handle:
        json.dump(data, handle, indent=2, sort_keys=sort_keys)
        handle.write('\n')


def git_commit():
    """The checkout's commit (with ``-dirty`` when it has changes), for the record of a saved baseline."""
    described = subprocess.run(['git', 'describe', '--always', '--dirty', '--abbrev=12'], cwd=str(REPO_ROOT), check=False,
                               text=True, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    return described.stdout.strip() or 'unknown'
