"""A chaos soak: random faults against a live fleet, a plain join_cluster after each, judged by reads of its own.

``make soak N=<rounds> SEED=<n> [ONLY=<round>]`` starts a lab of its own (``.cache/soak-lab``: a hub and three
members, both fleet managers, a Fleet Bundle and a KubeFleet placement on every member), joins the members, then plays
N rounds. Each round takes, from the seed and its number alone (so ``ONLY`` replays it), one or two fault kinds of
bench/soak_faults.py (in turn from the seed's cycles through the catalogue: every kind once before any twice), a
member for each and a moment (before the run, and for kinds that act during it a random task of the run), then runs
a plain ``join_cluster.yml`` - a second one if the first did not converge - and a third that must change nothing.
bench/soak_judge.py judges by its own reads. The table per kind and ``.cache/soak/soak.json`` say how many converged
in one run, in two, never; what was left behind; how long a placed workload was ever absent. A round that is not ok,
or whose first run failed, keeps the lab's logs written during it (``.cache/soak/failed-rounds/seed-S-round-R``).
The runs use a copy of the collection as installed at the start (``.cache/soak/collections``). ``make soak-ci``, the
end of ``make test``, plays a fixed seed's first rounds.
"""

import argparse
import contextlib
import json
import os
import re
import shutil
import sys
import threading
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO_ROOT = BENCH.parent
os.environ.setdefault('FLEETOPS_BENCH_LAB_DIR', str(REPO_ROOT / '.cache' / 'soak-lab'))
os.environ['FLEETOPS_LAB_DIR'] = os.environ['FLEETOPS_BENCH_LAB_DIR']
os.environ.setdefault('FLEETOPS_LAB_CHECKIN_INTERVAL', '5s')  # the test lab's, not the bench's 15 s: shorter rounds
os.environ.setdefault('FLEETOPS_LAB_ELECTION_RETRY_PERIOD', '2s')
os.environ.setdefault('FLEETOPS_TEST_FAILURES', str(REPO_ROOT / '.cache' / 'soak' / 'failed-rounds'))
for path in (BENCH, REPO_ROOT / 'tests', REPO_ROOT / 'lab'):
    sys.path.insert(0, str(path))

# pylint: disable=wrong-import-position
import fleet_workloads as workloads  # noqa: E402
import lab_logs  # noqa: E402
import scale_lab as labctl  # noqa: E402
import scale_netns as netns  # noqa: E402
import soak_judge as judge  # noqa: E402
from process_tree import kill_tree  # noqa: E402
from soak_faults import CATALOGUE, FLEET, MEMBERS, RUN_VARS, choose, round_delay_ms  # noqa: E402
from soak_judge import secret_files, verdict  # noqa: E402

OUT = REPO_ROOT / '.cache' / 'soak'
JOIN = REPO_ROOT / 'playbooks' / 'join_cluster.yml'
RECAP = re.compile(r'^(?P<host>\S+)\s*:\s*ok=\d+\s+changed=(?P<changed>\d+)\s+unreachable=\d+\s+failed=(?P<failed>\d+)', re.M)


class Fleet:
    """The soak lab as faults and the judge reach it: admin clients per context, lab components, the round's runs."""

    def __init__(self, members):
        from kubernetes import client, config  # pylint: disable=import-outside-toplevel
        self.members, self._client, self._config, self._apis = members, client, config, {}
        self.kubeconfig = labctl.LAB_DIR / 'kubeconfig'
        self.stopping = threading.Event()
        self.notes, self.runs, self.scratch, self.not_applied = [], [], None, []
        self.wrapper = ()  # the argv prefix of the round's runs (a delayed network namespace)

    # -- clients (workloads.py takes ``lab.api_client``) ----------------------------------------------------------
    def api_client(self, context):
        if context not in self._apis:
            self._apis[context] = self._config.new_client_from_config(config_file=str(self.kubeconfig), context=context)
        return self._apis[context]

    def core(self, context):
        return self._client.CoreV1Api(self.api_client(context))

    def apps(self, context):
        return self._client.AppsV1Api(self.api_client(context))

    def custom(self, context):
        return self._client.CustomObjectsApi(self.api_client(context))

    def coordination(self, context):
        return self._client.CoordinationV1Api(self.api_client(context))

    def read_or_none(self, read):
        try:
            return read()
        except self._client.ApiException as exc:
            if exc.status == 404:
                return None
            raise

    def ignore_404(self, call):
        self.read_or_none(call)

    def component(self, action, name):
        proc = labctl.fleetlab('component', action, name, capture=True)
        self.note('%s %s: rc %d' % (action, name, proc.returncode))

    def frozen(self):
        """Lab components frozen now (an agent the collection should have replaced)."""
        from fleetlab import control, state  # pylint: disable=import-outside-toplevel
        from fleetlab.paths import LabPaths  # pylint: disable=import-outside-toplevel
        return sorted(c['name'] for c in control.listing(state.load(LabPaths()) or {}) if c['state'] == 'frozen')

    def note(self, text):
        self.notes.append('%s %s' % (time.strftime('%H:%M:%S'), text))

    # -- runs --------------------------------------------------------------------------------------------------------
    def start_run(self, label):
        scratch = self.scratch
        env = {'TMPDIR': str(scratch), 'ANSIBLE_LOCAL_TEMP': str(scratch / 'local'), 'ANSIBLE_REMOTE_TEMP': str(scratch / 'remote')}
        run = labctl.Playbook(label, JOIN, labctl.LAB_DIR / 'inventory.yml', extra_vars=RUN_VARS, env=env, wrapper=self.wrapper)
        self.runs.append(run)
        return run

    def kill_run(self):
        run = self.runs[0]
        if run.proc.poll() is not None:
            raise RuntimeError('the run had ended')
        killed = kill_tree(run.proc.pid)
        self.note('killed the run (%d processes)' % len(killed))

    def start_second_run(self):
        self.start_run(self.runs[0].label + '-alongside')
        self.note('started a second run alongside')


def recap(run):
    text = Path(run.log).read_text(errors='replace')
    return dict((m.group('host'), {'changed': int(m.group('changed')), 'failed': int(m.group('failed'))}) for m in RECAP.finditer(text))


def tasks_started(log):
    """How many tasks the run has started: the TASK headers in its output so far."""
    try:
        with open(log) as handle:
            return sum(line.startswith('TASK [') for line in handle)
    except OSError:
        return 0


def _during(fleet, kind, member, task, log):
    """Apply ``kind`` as the run starts its ``task``-th task (a second of the run missed most of them once the runs
    took a few seconds; the order of the tasks is the same in a replay)."""
    while tasks_started(log) < task:
        if fleet.stopping.wait(0.05):
            fleet.note('%s during: the run ended before its task %d' % (kind.name, task))
            fleet.not_applied.append(kind.name)
            return
    try:
        kind.during(fleet, member)
    except Exception as exc:  # pylint: disable=broad-except  # a fault that could not be applied is noted, not fatal
        fleet.note('%s during: %r' % (kind.name, exc))
        fleet.not_applied.append(kind.name)


def play_faulted_run(fleet, number, faults):
    """Apply the faults, run the join (with what its faults add), heal what a run cannot; the run's recap."""
    for kind, member, _delay in faults:
        if kind.before:
            try:
                kind.before(fleet, member)
                fleet.note('%s before on %s' % (kind.name, member))
            except Exception as exc:  # pylint: disable=broad-except  # e.g. what it acts on is gone: noted, not fatal
                fleet.note('%s before on %s could not be applied: %r' % (kind.name, member, exc))
                fleet.not_applied.append(kind.name)
    settle = max([kind.settle for kind, _member, _delay in faults] + [0])
    if settle:
        time.sleep(settle)
    run = fleet.start_run('soak-%d-run1' % number)
    threads = [threading.Thread(target=_during, args=(fleet, kind, member, task, run.log), daemon=True)
               for kind, member, task in faults if kind.during]
    for thread in threads:
        thread.start()
    run.wait()
    fleet.stopping.set()
    for thread in threads:
        thread.join(120)
    for other in fleet.runs[1:]:
        other.wait()
    fleet.stopping.clear()
    for kind, member, _delay in faults:
        if kind.heal:
            kind.heal(fleet, member)
    return recap(run)


def still_frozen(fleet):
    """The agent processes still frozen once a deleted pod's would have ended: the lab stops a deleted pod's processes
    with SIGKILL after its grace period (as a kubelet does), so a frozen agent the collection replaced may still be
    there for that long after the runs; one frozen past it is an agent the collection left running."""
    from fleetlab.supervisor import STOP_GRACE  # pylint: disable=import-outside-toplevel
    deadline = time.monotonic() + STOP_GRACE + 5
    while True:
        frozen = [name for name in fleet.frozen() if '/' in name]
        if not frozen or time.monotonic() > deadline:
            return frozen
        time.sleep(1)


def judged(fleet, since):
    # The judge asks for a Fleet check-in after the round's start, which an agent makes every 5 s here (Fleet keeps
    # whole seconds): a judgement sooner than that after a fast round found none from agents that were fine (seed 2960
    # rounds 24 and 25, whose runs took 3 s each).
    time.sleep(max(0.0, since + judge.CHECK_IN_WAIT - time.time()))
    problems = judge.converged(fleet, since)
    frozen = still_frozen(fleet)
    if frozen:
        problems.setdefault('lab', []).append('agent process still frozen: %s' % ', '.join(frozen))
    # What a killed run left (its locks, its token) is for the next plain run to tidy, not for the idempotency
    # re-run: a round is converged once nothing is left either (seed 7301 round 22).
    if not problems:
        left = judge.leftovers(fleet)
        if left:
            problems['hub'] = ['left behind: %s' % ', '.join(left)]
    return problems


@contextlib.contextmanager
def round_network(fleet, faults):
    """The round's runs, for its duration, behind a relay that delays every API request (a latency fault), else
    on the loopback as they are."""
    one_way = round_delay_ms(faults)
    if not one_way:
        yield
        return
    urls = [entry['url'] for entry in labctl.lab_report().get('clusters', {}).values() if entry.get('url')]
    with netns.DelayedNetwork(urls, one_way_ms=one_way) as network:
        fleet.wrapper = network.wrapper()
        fleet.note('the runs cross a %g ms one-way relay to %d API servers' % (one_way, len(network.endpoints)))
        try:
            yield
        finally:
            fleet.wrapper = ()


def play_round(fleet, seed, number, placed):
    faults = choose(seed, number)
    fleet.notes, fleet.runs, fleet.not_applied = [], [], []
    fleet.scratch = OUT / ('round-%d' % number)
    shutil.rmtree(fleet.scratch, ignore_errors=True)
    fleet.scratch.mkdir(parents=True)
    since = time.time()
    watch = judge.WorkloadWatch(fleet, placed)
    watch.start()
    with round_network(fleet, faults):
        return _judged_round(fleet, seed, number, faults, since, watch)


def _judged_round(fleet, seed, number, faults, since, watch):
    first = play_faulted_run(fleet, number, faults)
    problems, runs = judged(fleet, since), 1
    changed = set(host for host, counts in first.items() if counts['changed'] and host in fleet.members)
    if problems:
        fleet.runs = []
        second = fleet.start_run('soak-%d-run2' % number).wait()
        changed.update(host for host, counts in recap(second).items() if counts['changed'] and host in fleet.members)
        problems, runs = judged(fleet, since), 2
    idempotent = None
    if not problems:
        fleet.runs = []
        again = fleet.start_run('soak-%d-rerun' % number).wait()
        idempotent = again.rc == 0 and all(host['changed'] == 0 for host in recap(again).values())
    absences = watch.finish()
    holding, others = secret_files(fleet.scratch)
    left = (judge.leftovers(fleet) if not problems else []) + ['controller file holding a secret: %s' % f for f in holding]
    removes = any(kind.removes for kind, _member, _delay in faults)
    return {
        'round': number, 'seed': seed, 'started': since,
        'faults': [{'kind': kind.name, 'member': member, 'at_task': task if kind.during else None} for kind, member, task in faults],
        'first_run': first, 'changed_members': sorted(changed), 'untouched_changed': sorted(changed - touched(fleet, faults)),
        'runs': runs if not problems else None, 'problems': problems, 'idempotent': idempotent,
        'leftovers': left, 'other_controller_files': len(others),
        'absent_seconds': dict(('%s %s' % key, value) for key, value in absences.items()),
        'absence_by_design': removes, 'missing_at_end': watch.missing_now(), 'notes': fleet.notes,
        'not_applied': sorted(set(fleet.not_applied)),
    }


def touched(fleet, faults):
    """The members a round's faults reach: the one each names, every member for a fault on the hub itself."""
    return set(fleet.members) if any(kind.hub_wide for kind, _m, _d in faults) else set(m for _k, m, _d in faults)


def print_report(rows):
    # a fault that could not be applied (what it acts on was gone, or the soak's own error) is not a try of its kind
    print('\n %-34s %5s %6s %6s %6s %9s %11s' % ('fault kind', 'tries', '1 run', '2 runs', 'never', 'leftovers', 'not applied'))
    for kind in CATALOGUE:
        drawn = [r for r in rows if kind.name in [f['kind'] for f in r['faults']]]
        mine = [r for r in drawn if kind.name not in r.get('not_applied', [])]
        if not drawn:
            continue
        counts = (sum(r['runs'] == 1 for r in mine), sum(r['runs'] == 2 for r in mine), sum(r['runs'] is None for r in mine),
                  sum(bool(r['leftovers']) for r in mine), len(drawn) - len(mine))
        print(' %-34s %5d %6d %6d %6d %9d %11d' % ((kind.name, len(mine)) + counts))
    bad = [r for r in rows if verdict(r) != 'ok']
    print('\n %d of %d rounds ok' % (len(rows) - len(bad), len(rows)))
    for row in rows:
        if row.get('not_applied'):
            print(' round %d: not applied: %s (its notes say why)' % (row['round'], ', '.join(row['not_applied'])))
    for row in bad:
        print(' round %d (%s): %s - %s; replay: make soak SEED=%d ONLY=%d' % (
            row['round'], ', '.join('%s on %s' % (f['kind'], f['member']) for f in row['faults']), verdict(row),
            json.dumps(row['problems'] or row['leftovers'] or row['absent_seconds'] or row['missing_at_end']), row['seed'], row['round']))


def set_up(fleet):
    """Every member joined, a Bundle and a placement on each (env=lab): the fleet the rounds start from."""
    setup = labctl.run_playbook('soak-setup-join', JOIN, labctl.LAB_DIR / 'inventory.yml', extra_vars=RUN_VARS)
    if setup.rc != 0:
        raise SystemExit('soak: the first join failed (log %s)' % setup.log)
    placed = []
    for name, place in (('soak-fleet', workloads.place_bundle), ('soak-kf', workloads.place_placement)):
        if fleet.read_or_none(lambda n=name: fleet.custom('hub').get_namespaced_custom_object(*FLEET, 'fleet-default', 'bundles', n)
                              if n == 'soak-fleet' else fleet.core('hub').read_namespace(n)) is None:
            place(fleet, name, {'env': 'lab'})
        placed.append((name, name))
    deadline = time.monotonic() + 240
    while True:
        missing = [(m, n) for m in fleet.members for _ns, n in placed
                   if fleet.read_or_none(lambda m=m, n=n: fleet.core(m).read_namespaced_config_map(n, n)) is None]
        if not missing:
            return placed
        if time.monotonic() > deadline:
            raise SystemExit('soak: the placed workloads did not reach %s' % missing)
        time.sleep(2)


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split('\n', maxsplit=1)[0])
    parser.add_argument('--rounds', type=int, default=20)
    parser.add_argument('--seed', type=int, default=1)
    parser.add_argument('--only', type=int, help='play only this round (a replay)')
    parser.add_argument('--keep-lab', action='store_true', help='leave the lab running afterwards')
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    OUT.mkdir(parents=True, exist_ok=True)
    commit = labctl.pin_collection(OUT / 'collections')
    started, _seconds = labctl.lab_up(MEMBERS)
    rows = []
    try:
        fleet = Fleet(['member%d' % n for n in range(1, MEMBERS + 1)])
        placed = set_up(fleet)
        for number in [args.only] if args.only else range(1, args.rounds + 1):
            print('round %d: %s' % (number, ', '.join('%s on %s' % (k.name, m) for k, m, _d in choose(args.seed, number))), flush=True)
            rows.append(play_round(fleet, args.seed, number, placed))
            print('   %s' % verdict(rows[-1]), flush=True)
            if verdict(rows[-1]) != 'ok' or rows[-1]['runs'] != 1:  # before the heal: the logs say why a run failed
                kept = lab_logs.keep('seed-%d-round-%d' % (args.seed, number), labctl.LAB_DIR, since=rows[-1]['started'])
                rows[-1]['lab_logs'] = os.path.relpath(kept, REPO_ROOT)
                print('   lab logs of the round kept in %s' % rows[-1]['lab_logs'], flush=True)
            labctl.write_json(OUT / 'soak.json', {'seed': args.seed, 'commit': commit, 'rounds': rows})
            if labctl.fleetlab('up', '--members', str(MEMBERS)).returncode != 0:  # heal for the next round
                raise SystemExit('soak: the lab could not be healed after round %d' % number)
        print_report(rows)
        print(' figures in %s' % os.path.relpath(OUT / 'soak.json', REPO_ROOT))
        return 1 if any(verdict(r) != 'ok' for r in rows) else 0
    finally:
        if started and not args.keep_lab:
            labctl.lab_down()


if __name__ == '__main__':
    sys.exit(main())
