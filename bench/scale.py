"""Fleet-size benchmark (``make bench``, issue 9): the collection at 12 members and 100 hub clusters.

Starts a lab of its own (``FLEETOPS_LAB_DIR=.cache/bench-lab``, ``python -m fleetlab up --members 12``), runs the
stages below on it, prints a table (figure, value, target, PASS/OVER), writes ``.cache/bench/scale.json`` (exactly
the keys of ``scale_figures.KEYS``, then which runs each figure came from or why it is null) and stops the lab. It
exits 0 whatever the figures are: it measures, it does not judge. A failed or changing run is no measurement: its
figures are null with the reason (verdict FAIL). Every figure is this run's: a stage run alone reports only its own.
This run's raw measurements go to ``.cache/bench/raw.json``, the output of each ansible-playbook run and its
per-host task timings to ``.cache/bench/logs/``.

Stages (``--only first,batch`` runs some; ``--members 4`` a smaller lab for development; ``--keep-lab`` leaves it up):
  first    first join of one fresh member (join_cluster.yml --limit hub,member1), where its time goes
  batch    first join of up to 8 fresh members in one run (parallel_join_ratio = batch / first)
  sliced   3 concurrent join_cluster.yml runs with disjoint --limit slices (AWX job slicing)
  memory   resident memory of the lab with every member joined
  rerun    no-change re-run over all members, and over 1 and 4 (how the cost grows)
  kcore    the same checks as a plain kubernetes.core playbook (bench/kubernetes_core_rerun.yml)
  count    module processes, API round trips and Helm runs per member of a no-change re-run
  latency  the no-change re-run with a 50 ms round trip to every API server, in pairs with loopback runs (needs root:
           it makes a network namespace of its own)
  rotate   a credential rotation of one member in both managers: the longest gap in heartbeats and check-ins
  hub100   100 Fleet Clusters + 100 MemberClusters predefined, relabelled (playbooks/predefine_clusters.yml) and listed
  hub1000  the same with 1,000 of each (and 100, when hub100 did not run), the cost per cluster at both sizes
"""

import argparse
import os
import sys
import time


import baseline as bench_baseline
import scale_figures as figures
import scale_hub as hub_stages
import scale_lab as labctl
import scale_netns as netns
import scale_timeline as timeline

STAGES = ('first', 'batch', 'sliced', 'memory', 'rerun', 'kcore', 'count', 'latency', 'rotate', 'hub100', 'hub1000')
JOIN = 'playbooks/join_cluster.yml'
LEAVE = 'playbooks/leave_cluster.yml'
# The raw measurements each stage makes: a stage that raised makes none of them.
STAGE_KEYS = {'first': ('join_1_seconds', 'checkin_window_seconds', 'checkin_interval_seconds'), 'batch': ('join_batch_seconds',),
              'sliced': ('sliced_ok',), 'memory': ('lab_rss_bytes',), 'rerun': ('rerun_seconds',),
              'kcore': ('kcore_seconds', 'rerun_2_seconds', 'kcore_2_seconds'),
              'count': (), 'latency': ('rerun_50ms_seconds', 'rerun_loopback_seconds'),
              'rotate': ('rotation_heartbeat_gap_seconds', 'rotation_checkin_gap_seconds', 'heartbeat_period_seconds'),
              'hub100': ('hub_100_seconds', 'hub_relabel_100_seconds'), 'hub1000': ('hub_1000_seconds',)}


class Bench:
    """Shared state of one benchmark invocation."""

    def __init__(self, args):
        self.args = args
        self.inventory, parsed = labctl.inventory()
        self.hub_host = labctl.hosts_of(parsed, 'hub')[0]
        self.members = labctl.hosts_of(parsed, 'members')
        self.plan = figures.plan_members(self.members)
        self.raw = {}
        self.refused = {}
        self.sources = {}
        self.hub = labctl.Hub()

    def record(self, sources, **values):
        """Keep this run's raw measurements and the runs they came from (written to raw.json at the end)."""
        self.raw.update(values)
        self.sources.update({key: list(sources) for key in values})

    def refuse(self, reason, *keys):
        """Raw measurements this run did not make: null, with the reason, in every figure they enter."""
        print('   REFUSED %s: %s' % (', '.join(keys), reason), flush=True)
        self.raw.update(dict.fromkeys(keys))
        self.refused.update(dict.fromkeys(keys, reason))

    def play(self, label, playbook=JOIN, limit=None, **kwargs):
        """Run a playbook on the lab inventory with the bench's forks."""
        kwargs.setdefault('forks', self.args.forks)
        return labctl.run_playbook(label, labctl.REPO_ROOT / playbook, kwargs.pop('inv', self.inventory), limit=limit, **kwargs)

    def fresh(self, names):
        """Make members fresh for a first join: a member already on the hub leaves first (not timed)."""
        present = self.hub.present(names)
        if present:
            print('   %s already joined: leaving first (not timed)' % ', '.join(present), flush=True)
            self.play('setup-leave', LEAVE, limit=present)

    def joined(self):
        """Join every member not joined yet (not timed), for the stages that need a joined fleet; returns
        {member: joined} as the hub sees it afterwards."""
        state = self.hub.joined_state(self.members)
        missing = [name for name, ok in state.items() if not ok]
        if missing:
            print('   joining %s first (not timed)' % ', '.join(missing), flush=True)
            self.play('setup-join', limit=[self.hub_host] + missing)
            state = self.hub.joined_state(self.members)
        return state

    def joined_or_refuse(self, *keys):
        """Whether every member is joined; refuses ``keys`` when not (a re-run of a half-joined fleet measures a join)."""
        missing = sorted(name for name, ok in self.joined().items() if not ok)
        if missing:
            self.refuse('the setup join left %s not joined' % ', '.join(missing), *keys)
        return not missing


def stage_first(bench):
    """First join of one fresh member, and where the Fleet agent's install-to-check-in goes."""
    member = bench.plan['first'][0]
    bench.fresh([member])
    run = bench.play('first-join', limit=[bench.hub_host, member])
    records = run.records
    window = figures.checkin_windows(records).get(member)
    interval, no_interval = figures.checkin_interval(bench.hub.checkin_interval())
    print('   %s: whole join %.1f s; Fleet agent install to a check-in the hub has seen %s s; agentCheckinInterval %s s'
          % (member, run.seconds, 'n/a' if window is None else '%.1f' % window, 'n/a' if interval is None else '%.0f' % interval))
    print('   task times of %s (longest first):' % member)
    for name, seconds in sorted(figures.task_breakdown(records, member), key=lambda row: -row[1])[:8]:
        print('     %6.1f s  %s' % (seconds, name))
    print_timeline(member, records)
    bench.record([run.label], join_1_seconds=run.seconds, checkin_window_seconds=window,
                 first_join_tasks=figures.task_breakdown(records, member),
                 first_join_epoch=[run.started_epoch, run.started_epoch + run.seconds])
    bench.record(['hub ConfigMap cattle-fleet-system/fleet-controller'], checkin_interval_seconds=interval)
    failed = figures.refusal(run.label, run.rc)
    if failed:
        bench.refuse(failed, 'join_1_seconds', 'checkin_window_seconds')
    elif window is None:
        bench.refuse('%s has no fleet_agent install of %s that succeeded with its wait' % (run.label, member), 'checkin_window_seconds')
    if no_interval:
        bench.refuse(no_interval, 'checkin_interval_seconds')


def print_timeline(member, records):
    """The first join's Fleet agent install to check-in, from the playbook's task times and the lab's logs."""
    agent_tasks = [r for r in records if r['host'] == member and r.get('status') != 'skipped'
                   and r.get('action') in (figures.FLEET_AGENT, figures.FLEET_CLUSTER_INFO)]
    installs = [r for r in agent_tasks if r['action'] == figures.FLEET_AGENT and (r.get('args') or {}).get('state', 'present') == 'present']
    if not installs:
        return
    start = installs[0]['start']
    end = max(r['end'] for r in agent_tasks)
    events = [(r['start'], 'ansible', 'task starts: %s' % figures.short_action(r['action'])) for r in agent_tasks if r['start'] >= start]
    events += [(r['end'], 'ansible', 'task ends: %s' % figures.short_action(r['action'])) for r in agent_tasks if r['start'] >= start]
    logs = labctl.LAB_DIR / 'logs'
    with open(logs / 'runner.log') as handle:
        events += timeline.runner_events(handle, member)
    for path in sorted((logs / member).glob('cattle-fleet-system.*.fleet-agent.log')):
        with open(path) as handle:
            events += timeline.agent_events(handle, path.name.split('.')[1])
    print('   timeline of %s from the fleet_agent install (lab logs: agent runner and Fleet agents):' % member)
    for line in timeline.format_timeline(events, start, (start, end)).splitlines():
        print('     ' + line)


def stage_batch(bench):
    """First join of the batch (up to 8 fresh members) in one run."""
    batch = bench.plan['batch']
    if len(batch) < 2:
        print('   skipped: needs at least 6 members in the lab (--members)')
        return
    bench.fresh(batch)
    run = bench.play('batch-join-%d' % len(batch), limit=[bench.hub_host] + batch)
    windows = figures.checkin_windows(run.records)
    print('   %d members: whole join %.1f s; agent install to check-in %s' % (
        len(batch), run.seconds, ', '.join('%.0f' % windows[h] for h in sorted(windows)) or 'n/a'))
    bench.record([run.label], join_batch_seconds=run.seconds, join_batch_members=len(batch))
    failed = figures.refusal(run.label, run.rc)
    if failed:
        bench.refuse(failed, 'join_batch_seconds')


def stage_sliced(bench):
    """3 concurrent join_cluster.yml runs, disjoint --limit slices (the hub host in the first, as AWX slicing does)."""
    slices = bench.plan['slices']
    if len(slices) < 3:
        print('   skipped: needs at least 4 members in the lab')
        return
    bench.fresh(slices)
    limits = [[bench.hub_host, slices[0]], [slices[1]], [slices[2]]]
    started = [labctl.Playbook('slice-%d' % (i + 1), labctl.REPO_ROOT / JOIN, bench.inventory, limit=limit, forks=bench.args.forks)
               for i, limit in enumerate(limits)]
    runs = labctl.wait_all(started)
    for run in runs:
        print('   %-10s rc=%d %6.1f s' % (run.label, run.rc, run.seconds))
    leftover = [name for name in bench.hub.registration_tokens() if name.startswith('fleetops-join-')]
    ok, reasons = figures.sliced_ok([{'rc': r.rc, 'records': r.records} for r in runs], leftover, bench.hub.joined_state(slices))
    for reason in reasons:
        print('   NOT OK: %s' % reason)
    bench.record([run.label for run in runs], sliced_ok=ok, sliced_reasons=reasons)


def stage_memory(bench):
    """Resident memory of the lab, every member joined (both agents running on each): a figure only of a running
    12-member lab whose processes are all alive (lab_12_members_gib names the size)."""
    joined = bench.joined()
    report = labctl.lab_report()
    rss, why_not = figures.lab_memory_bytes(report, joined, members=12)
    pss, count = labctl.lab_pss(report)
    print('   %d live processes: RSS sum %s GiB (the figure), PSS sum %.2f GiB (shared pages counted once)'
          % (count, 'n/a' if rss is None else '%.2f' % (rss / 2 ** 30), pss / 2 ** 30))
    bench.record(['fleetlab status --json'], lab_rss_bytes=rss, lab_pss_bytes=pss, lab_members=report.get('members'))
    if why_not:
        bench.refuse(why_not, 'lab_rss_bytes')


def stage_rerun(bench):
    """No-change re-run over every member, then over 1 and 4 members (with the hub play each time), once the lab has
    settled from the joins before it (a re-run meets a fleet at rest); a re-run that failed or changed something is no
    re-run time."""
    if not bench.joined_or_refuse('rerun_seconds'):
        return
    runs, cpu, labels, refused = {}, {}, {}, {}
    settled = hub_stages.settle_lab('the re-runs')
    for count in [len(bench.members)] + [n for n in (1, 4) if n < len(bench.members)]:
        limit = None if count == len(bench.members) else [bench.hub_host] + bench.members[:count]
        attempts = [bench.play(repeat_label('rerun-%d' % count, attempt, bench.args.repeat), limit=limit)
                    for attempt in range(bench.args.repeat)]
        seconds, labels[count], refused[count] = figures.fastest(
            [{'label': r.label, 'rc': r.rc, 'seconds': r.seconds, 'changed': figures.changed_tasks(r.records)} for r in attempts],
            expect_no_change=True)
        if seconds is not None:
            runs[count] = seconds
            cpu[count] = next(r.cpu for r in attempts if r.label == labels[count])
    print(figures.format_scaling(runs))
    print('   CPU seconds of each re-run (ansible-playbook, modules, Helm): %s' % ', '.join('%d members %.1f' % kv for kv in sorted(cpu.items())))
    everyone = len(bench.members)
    bench.record([labels[everyone]] if labels[everyone] else [], rerun_seconds=runs.get(everyone), members=everyone,
                 rerun_settle_seconds=settled,
                 rerun_scaling={str(k): v for k, v in runs.items()}, rerun_cpu={str(k): v for k, v in cpu.items()},
                 rerun_refused={str(k): v for k, v in refused.items() if v})
    if refused[everyone]:
        bench.refuse(refused[everyone], 'rerun_seconds')


def repeat_label(label, attempt, repeat):
    """A run's label (and log name) among ``repeat`` attempts, so each attempt keeps its own log."""
    return label if repeat == 1 else '%s.%d' % (label, attempt + 1)


def stage_kcore(bench):
    """The kubernetes.core baseline over every member, same inventory and forks."""
    playbook = labctl.ensure_kcore_venv()
    if not bench.joined_or_refuse('kcore_seconds'):
        return
    if 'rerun_seconds' not in bench.raw:  # this run's own re-run, never an earlier run's
        stage_rerun(bench)
    hub_stages.settle_lab('the kubernetes.core re-runs')
    attempts = [bench.play(repeat_label('kcore-rerun', attempt, bench.args.repeat), 'bench/kubernetes_core_rerun.yml', ansible_playbook=playbook)
                for attempt in range(bench.args.repeat)]
    seconds, label, refused = figures.fastest([{'label': r.label, 'rc': r.rc, 'seconds': r.seconds} for r in attempts])
    ours = bench.raw.get('rerun_seconds')
    shown = ['n/a' if value is None else '%.1f' % value for value in (seconds, ours)]
    print('   kubernetes.core: %s s for %d members (ours %s s)' % (shown[0], len(bench.members), shown[1]))
    bench.record([label] if label else [], kcore_seconds=seconds)
    if refused:
        bench.refuse(refused, 'kcore_seconds')
    kcore_pairs(bench, playbook, bench.members[:2])


def kcore_pairs(bench, playbook, members):
    """Ours and the kubernetes.core playbook over ``members`` alone (ours with the hub play), in alternating pairs;
    the fastest of each counts."""
    ours, theirs = [], []
    for attempt in range(max(2, bench.args.repeat)):
        ours.append(bench.play('rerun-%d.%d' % (len(members), attempt + 1), limit=[bench.hub_host] + members))
        theirs.append(bench.play('kcore-rerun-%d.%d' % (len(members), attempt + 1), 'bench/kubernetes_core_rerun.yml',
                                 ansible_playbook=playbook, limit=members))
        print('   pair %d over %d members: ours %.1f s, kubernetes.core %.1f s' % (attempt + 1, len(members), ours[-1].seconds,
                                                                                   theirs[-1].seconds), flush=True)
    record_fastest(bench, 'rerun_2_seconds', ours)
    record_fastest(bench, 'kcore_2_seconds', theirs, expect_no_change=False)


def record_fastest(bench, key, runs, expect_no_change=True):
    """Record the fastest of ``runs`` as ``key``, or refuse it (a failed run, or a no-change run that changed something)."""
    seconds, label, refused = figures.fastest(
        [{'label': r.label, 'rc': r.rc, 'seconds': r.seconds, 'changed': figures.changed_tasks(r.records)} for r in runs],
        expect_no_change=expect_no_change)
    bench.record([label] if label else [], **{key: seconds})
    if refused:
        bench.refuse(refused, key)


def stage_count(bench):
    """Module processes, API round trips and Helm runs of a no-change re-run, through bench/count_hook."""
    bench.joined()
    calls = labctl.OUT_DIR / 'logs' / 'count-calls.jsonl'
    if calls.exists():
        calls.unlink()
    hook = str(labctl.REPO_ROOT / 'bench' / 'count_hook')
    env = {'FLEETOPS_BENCH_CALLS': str(calls), 'PYTHONPATH': os.pathsep.join(filter(None, [hook, os.environ.get('PYTHONPATH')]))}
    run = bench.play('count-rerun', env=env)
    processes = figures.load_timings(open(calls)) if calls.exists() else []
    urls = {m: c['url'] for m, c in labctl.lab_report().get('clusters', {}).items()}
    summary = figures.call_summary(processes, urls, len(bench.members))
    print(figures.format_calls(summary))
    per_host = figures.module_processes(run.records)
    print('   module processes per host (callback): %s' % ', '.join('%s %d' % (h, per_host[h]) for h in sorted(per_host)))
    tasks = figures.tasks_per_host(run.records)
    print('   tasks per host (run_once ones on the host they ran on): %s' % ', '.join('%s %d' % (h, tasks[h]) for h in sorted(tasks)))
    bench.record([run.label], rerun_calls=summary, rerun_calls_rc=run.rc, rerun_tasks_per_host=tasks)


# One-way delay of the latency stage: a 50 ms round trip.
LATENCY_ONE_WAY_MS = 25


def stage_latency(bench):
    """The no-change re-run over every member with a 50 ms round trip to every API server (ansible-playbook in a
    network namespace where each API server is one delayed hop away: bench/scale_netns.py), in pairs with the same
    re-run on the loopback, loopback first; the figure is the fastest delayed run over the fastest loopback run."""
    keys = STAGE_KEYS['latency']
    if not bench.joined_or_refuse(*keys):
        return
    urls = [entry['url'] for entry in labctl.lab_report().get('clusters', {}).values() if entry.get('url')]
    pairs = max(2, bench.args.repeat)
    loopback, delayed = [], []
    hub_stages.settle_lab('the re-runs with and without delay')
    with netns.DelayedNetwork(urls, one_way_ms=LATENCY_ONE_WAY_MS) as network:
        host, port = network.endpoints[0]
        print('   namespace %s: %d API servers behind a %d ms one-way relay; a TLS handshake takes %.0f ms there, %.0f ms on the loopback'
              % (network.name, len(network.endpoints), LATENCY_ONE_WAY_MS, 1000 * network.probe(), 1000 * netns.loopback_probe(host, port)),
              flush=True)
        for attempt in range(pairs):
            loopback.append(bench.play('rerun-loopback.%d' % (attempt + 1)))
            delayed.append(bench.play('rerun-50ms.%d' % (attempt + 1), wrapper=network.wrapper()))
            print('   pair %d: %.1f s with 50 ms, %.1f s on the loopback (ratio %.2f)'
                  % (attempt + 1, delayed[-1].seconds, loopback[-1].seconds, delayed[-1].seconds / loopback[-1].seconds), flush=True)
    record_fastest(bench, 'rerun_50ms_seconds', delayed)
    record_fastest(bench, 'rerun_loopback_seconds', loopback)


# The hub-side stages live in bench/scale_hub.py.
stage_hub100 = hub_stages.stage_hub100
stage_hub1000 = hub_stages.stage_hub1000


def parse(argv):
    """Command line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog='\n'.join(__doc__.splitlines()[8:]))
    parser.add_argument('--members', type=int, default=12, help='members of the bench lab (default 12)')
    parser.add_argument('--only', default=','.join(STAGES), help='comma-separated stages (default all: %s)' % ','.join(STAGES))
    parser.add_argument('--forks', type=int, default=12, help='ansible forks for every run, ours and the baseline (default 12)')
    parser.add_argument('--repeat', type=int, default=1, help='runs of each re-run measurement; the fastest counts (default 1)')
    parser.add_argument('--hub-clusters', type=int, default=100, help='hub-side clusters of the hub100 stage (default 100; hub1000 runs 100 and 1,000)')
    parser.add_argument('--keep-lab', action='store_true', help='leave the bench lab running at the end')
    parser.add_argument('--save-baseline', action='store_true',
                        help='write this run\'s figures to bench/baseline.json (on purpose, when a change means to keep them)')
    args = parser.parse_args(argv)
    unknown = set(args.only.split(',')) - set(STAGES)
    if unknown:
        parser.error('unknown stage(s) %s; choose from %s' % (', '.join(sorted(unknown)), ', '.join(STAGES)))
    return args


def stage_rotate(bench):
    """A credential rotation of one joined member in both fleet managers (join_cluster.yml with
    fleetops_rotate_credentials), the hub sampled meanwhile: the longest time without a heartbeat (KubeFleet) and without
    a check-in (Fleet), against the heartbeat period and the check-in interval (goal: no interval missed)."""
    keys = STAGE_KEYS['rotate']
    member = bench.plan['first'][0]
    if not bench.joined_or_refuse(*keys):
        return
    sampler = labctl.ContactSampler(bench.hub, member)
    sampler.start()
    run = bench.play('rotate', limit=[member], extra_vars={'fleetops_rotate_credentials': 'true'})
    heartbeats, checkins = sampler.finish()
    interval, no_interval = figures.checkin_interval(bench.hub.checkin_interval())
    heartbeat_gap, checkin_gap = figures.longest_gap(heartbeats), figures.longest_gap(checkins)
    print('   %s: rotation %.1f s; longest gap: %s s between heartbeats (period %s s), %s s between check-ins (interval %s s)'
          % (member, run.seconds, heartbeat_gap, sampler.period, checkin_gap, interval))
    bench.record([run.label], rotation_heartbeat_gap_seconds=heartbeat_gap, rotation_checkin_gap_seconds=checkin_gap,
                 heartbeat_period_seconds=sampler.period)
    # read in this run too, so `--only rotate` reports rotation_gap_intervals without the first stage
    bench.record(['hub ConfigMap cattle-fleet-system/fleet-controller'], checkin_interval_seconds=interval)
    failed = figures.refusal(run.label, run.rc)
    if failed:
        bench.refuse(failed, *keys)
    if no_interval:
        bench.refuse(no_interval, 'checkin_interval_seconds')


def run_stages(bench, stages):
    """Run the chosen stages in their fixed order; a failing stage is reported and the next one runs."""
    for name in STAGES:
        if name not in stages:
            continue
        load = os.getloadavg()
        bench.raw.setdefault('load_average', {})[name] = load[0]
        bench.raw.setdefault('stages', []).append(name)
        print('== %s (load average %.1f %.1f %.1f on %d CPUs)' % ((name,) + load + (os.cpu_count() or 0,)), flush=True)
        try:
            globals()['stage_' + name](bench)
        except Exception as exc:  # pylint: disable=broad-except
            print('   stage %s failed: %s: %s' % (name, type(exc).__name__, exc), flush=True)
            bench.refuse('stage %s failed: %s: %s' % (name, type(exc).__name__, exc), *STAGE_KEYS[name])


def report(bench, started, started_utc):
    """Write raw.json and scale.json (this run's figures only), print the table."""
    run = {'started': started_utc, 'stages': bench.raw.get('stages', []), 'members': len(bench.members), 'forks': bench.args.forks,
           'repeat': bench.args.repeat, 'logs': os.path.relpath(labctl.OUT_DIR / 'logs', labctl.REPO_ROOT)}
    labctl.write_json(labctl.OUT_DIR / 'raw.json', {'bench_run': run, 'measurements': bench.raw, 'refused': bench.refused,
                                                    'sources': bench.sources})
    result = figures.figure_report(bench.raw, bench.refused, bench.sources)
    labctl.write_json(labctl.OUT_DIR / 'scale.json', figures.scale_json(result, run), sort_keys=False)
    print('== figures of this run only (started %s; %d members, forks %d, %d CPUs shared with other work, %.0f s in all;'
          ' "from" names the runs in %s)' % (started_utc, len(bench.members), bench.args.forks, os.cpu_count() or 0,
                                             time.monotonic() - started, run['logs']))
    print(figures.format_table(result))
    print('   written: %s' % os.path.relpath(labctl.OUT_DIR / 'scale.json', labctl.REPO_ROOT))
    against_baseline(result['figures'], run, bench.args.save_baseline)


def against_baseline(this_run, run, save):
    """Print what moved since bench/baseline.json; with ``save``, make this run the baseline."""
    path = labctl.REPO_ROOT / 'bench' / 'baseline.json'
    accepted = bench_baseline.load(path)
    if accepted is None:
        print('== no bench/baseline.json yet: nothing to compare with (--save-baseline makes one)')
    else:
        rows = bench_baseline.compare(this_run, accepted)
        print(bench_baseline.format_comparison(rows, accepted))
        worse = bench_baseline.regressions(rows)
        print('   %s' % ('moved the wrong way: ' + ', '.join(worse) if worse else 'nothing moved the wrong way'))
    if save:
        commit = labctl.git_commit()
        labctl.write_json(path, bench_baseline.new_baseline(this_run, dict(run, date=run['started'], commit=commit)),
                          sort_keys=False)
        print('   written: bench/baseline.json (this run is the baseline now; commit it with the change)')


def main(argv=None):
    """Entry point; exits 0 whatever the figures are."""
    args = parse(sys.argv[1:] if argv is None else argv)
    started = time.monotonic()
    started_utc = time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())
    labctl.ensure_collection()
    print('== lab: %s, %d members' % (labctl.LAB_DIR, args.members), flush=True)
    we_started, seconds = labctl.lab_up(args.members)
    print('   %s' % ('started in %.0f s' % seconds if we_started else 'already running: reused'), flush=True)
    try:
        bench = Bench(args)
        run_stages(bench, set(args.only.split(',')))
        report(bench, started, started_utc)
    finally:
        if not args.keep_lab:
            print('== stopping the bench lab', flush=True)
            labctl.lab_down()
    return 0


if __name__ == '__main__':
    sys.exit(main())
