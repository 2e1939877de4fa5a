"""The bench's hub-side stages (``bench/scale.py``): clusters that exist only as hub objects, at 100 and at 1,000.

Each size is three ansible-playbook runs over a generated inventory (the lab's ``hub`` group and a group of N hosts,
one per cluster, with ``fleetops_labels``): ``predefine_clusters.yml`` (creates N Fleet Clusters and N MemberClusters),
the same playbook after the inventory's labels changed (relabels all of them), and ``cluster_status.yml``. Every run
goes through ``bench/count_hook``, so each pass also says how many module processes and API requests it cost; the
rules that turn the runs into figures (and refuse failed ones) are ``scale_hub_figures.hub_passes``.
"""

import os
import time
from concurrent.futures import ThreadPoolExecutor

import yaml

import scale_figures as figures
import scale_hub_figures as hub_figures
import scale_lab as labctl

SELECTOR = 'bench=hub100'
GROUP = 'bench_hub_only'
PREDEFINE = 'playbooks/predefine_clusters.yml'
STATUS = 'playbooks/cluster_status.yml'
# Requests side by side when the bench removes its objects (not timed).
CLEANUP_WORKERS = 8
# Before each timed run the hub's own processes (API server, etcd, Fleet's controllers, KubeFleet's hub agent) must have
# finished with the previous one: under this many CPU seconds per second, for SETTLED_FOR seconds in a row, at most
# SETTLE_LIMIT seconds. Otherwise a relabel is timed against Fleet still handling the Clusters just created.
SETTLED_CPU = 0.3
SETTLED_FOR = 2
SETTLE_LIMIT = 180
# A pass over N clusters sets off the hub's own work on each (Fleet's namespace, agent bundle and status updates,
# KubeFleet's namespace and RBAC): at 1,000 that outlasts SETTLE_LIMIT, and the next pass would be timed against it.
SETTLE_SECONDS_PER_CLUSTER = 0.6
# The same before a timed no-change re-run, over every process of the lab: a 12-member lab at rest takes ~0.4 CPU s
# per second; right after a join its agents and controllers take most of both CPUs for a while.
LAB_SETTLED_CPU = 0.8
LAB_SETTLE_LIMIT = 120


def inventory(bench, count, round_):
    """The ``count``-host inventory of hub-side clusters: the lab's hub host and a group of clusters only the hub knows,
    labelled as a user's inventory would label them (``bench-round`` changes between the two passes)."""
    with open(bench.inventory) as handle:
        lab = yaml.safe_load(handle)
    hosts = {'edge-%04d' % i if count > 999 else 'edge-%03d' % i:
             {'fleetops_labels': {'bench': 'hub100', 'site': 'site-%d' % (i % 10), 'bench-round': str(round_)}}
             for i in range(1, count + 1)}
    data = {'all': {'vars': lab['all'].get('vars', {}), 'children': {'hub': lab['all']['children']['hub'], GROUP: {'hosts': hosts}}}}
    labctl.OUT_DIR.mkdir(parents=True, exist_ok=True)
    path = labctl.OUT_DIR / ('hub%d-inventory-%d.yml' % (count, round_))
    fd = os.open(str(path), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, 'w') as handle:
        yaml.safe_dump(data, handle, sort_keys=False)
    return path


def remove_objects(hub):
    """Delete the bench's Clusters and MemberClusters (finalizers cleared: no agent will ever acknowledge these
    leaves), a few requests side by side; returns how many were left before."""
    clusters = [c['metadata']['name'] for c in hub.fleet_clusters(SELECTOR)]
    members = [m['metadata']['name'] for m in hub.member_clusters(SELECTOR)]

    def quietly(call, *args):
        try:
            call(*args)
        except Exception:  # pylint: disable=broad-except
            pass  # already gone

    def member(name):
        quietly(hub.custom.patch_cluster_custom_object, *labctl.KUBEFLEET, 'memberclusters', name, {'metadata': {'finalizers': None}})
        quietly(hub.custom.delete_cluster_custom_object, *labctl.KUBEFLEET, 'memberclusters', name)
    with ThreadPoolExecutor(CLEANUP_WORKERS) as pool:
        list(pool.map(lambda name: quietly(hub.custom.delete_namespaced_custom_object, *labctl.FLEET, labctl.FLEET_NAMESPACE,
                                           'clusters', name), clusters))
        list(pool.map(member, members))
    return len(clusters) + len(members)


def hub_processes():
    """``{pid: short name}`` of the lab hub's processes and the shared etcd (``fleetlab status``)."""
    report = labctl.lab_report()
    procs = ((report.get('clusters') or {}).get('hub') or {}).get('processes') or []
    return {p['pid']: p.get('name', '?').split('/')[-1].replace('hub ', '')
            for p in procs + [s for s in report.get('shared') or [] if s.get('name') == 'etcd'] if p.get('pid')}


def lab_pids():
    """Every process of the lab: each cluster's (API server, controllers, agents) and the shared ones."""
    report = labctl.lab_report()
    procs = [p for cluster in (report.get('clusters') or {}).values() for p in cluster.get('processes') or []]
    return [p['pid'] for p in procs + list(report.get('shared') or []) if p.get('pid')]


def cpu_by_pid(pids):
    """``{pid: user+system CPU seconds so far}`` (a process gone is left out)."""
    seconds = {}
    for pid in pids:
        try:
            with open('/proc/%d/stat' % pid) as handle:
                fields = handle.read().rsplit(')', 1)[1].split()
        except OSError:
            continue
        seconds[pid] = (int(fields[11]) + int(fields[12])) / float(os.sysconf('SC_CLK_TCK'))
    return seconds


def cpu_seconds(pids):
    """Summed user+system CPU seconds of ``pids`` so far (a process gone counts 0)."""
    return sum(cpu_by_pid(pids).values())


def settle(pids, label, what='hub', cpu=SETTLED_CPU, limit=SETTLE_LIMIT):
    """Wait (not timed) until ``pids`` are quiet; prints how long it took. Returns the seconds waited."""
    started = time.monotonic()
    quiet, last = 0, cpu_seconds(pids)
    while quiet < SETTLED_FOR and time.monotonic() - started < limit:
        time.sleep(1)
        now = cpu_seconds(pids)
        quiet = quiet + 1 if now - last < cpu else 0
        last = now
    waited = time.monotonic() - started
    print('   %s settled before %s after %.0f s%s (not timed)' % (what, label, waited, '' if quiet >= SETTLED_FOR else ', NOT quiet yet'),
          flush=True)
    return waited


def settle_lab(label):
    """settle() over every process of the lab, before a timed re-run."""
    return settle(lab_pids(), label, what='lab', cpu=LAB_SETTLED_CPU, limit=LAB_SETTLE_LIMIT)


def counted_play(bench, label, playbook, inv, extra_vars, previous=None, settle_limit=SETTLE_LIMIT):
    """A run with bench/count_hook on, and the count hook's records of its module processes. The hub's API server
    says what it served during the run (``served``: ours and what its own controllers sent) and, on ``previous``,
    what it served after that run until it had settled (``served_after``); ``hub_cpu_seconds`` is what the hub's
    processes used during the run (on N CPUs, N times the run's seconds is all of the machine)."""
    calls = labctl.OUT_DIR / 'logs' / ('%s-calls.jsonl' % label)
    if calls.exists():
        calls.unlink()
    hook = str(labctl.REPO_ROOT / 'bench' / 'count_hook')
    env = {'FLEETOPS_BENCH_CALLS': str(calls), 'PYTHONPATH': os.pathsep.join(filter(None, [hook, os.environ.get('PYTHONPATH')]))}
    names = hub_processes()
    settled = settle(list(names), label, limit=settle_limit)
    before = hub_figures.served_requests(bench.hub.metrics())
    if previous is not None:
        previous['served_after'] = hub_figures.served_between(previous.pop('served_at_end'), before)
    hub_cpu = cpu_by_pid(names)
    run = bench.play(label, playbook, inv=inv, extra_vars=extra_vars, env=env)
    hub_cpu = hub_figures.cpu_used(hub_cpu, cpu_by_pid(names), names)
    after = hub_figures.served_requests(bench.hub.metrics())
    processes = figures.load_timings(open(calls)) if calls.exists() else []
    return {'label': run.label, 'rc': run.rc, 'seconds': run.seconds, 'cpu_seconds': round(run.cpu, 1), 'calls': hub_figures.hub_call_counts(processes),
            'modules': hub_figures.module_seconds(run.records), 'settle_seconds': settled,
            'served': hub_figures.served_between(before, after), 'served_at_end': after,
            'hub_cpu_seconds': round(sum(hub_cpu.values()), 1), 'hub_cpu_by_process': hub_cpu}


def passes(bench, count):
    """Predefine, relabel and status over ``count`` hub-side clusters: ``{'count', 'runs': [...], 'listed': (n, n)}``."""
    left = remove_objects(bench.hub)
    if left:
        print('   removed %d objects an earlier run left (not timed)' % left, flush=True)
    group = {'fleetops_predefine_group': GROUP}
    prefix = 'hub%d' % count
    limit = max(SETTLE_LIMIT, SETTLE_SECONDS_PER_CLUSTER * count)
    runs = []
    for name, playbook, inv, extra_vars in (('predefine', PREDEFINE, inventory(bench, count, 1), group),
                                            ('relabel', PREDEFINE, inventory(bench, count, 2), group),
                                            ('status', STATUS, inventory(bench, count, 2), {'fleetops_status_label_selector': SELECTOR})):
        runs.append(counted_play(bench, '%s-%s' % (prefix, name), playbook, inv, extra_vars,
                                 previous=runs[-1] if runs else None, settle_limit=limit))
    runs[-1].pop('served_at_end')
    print(hub_figures.format_served(runs), flush=True)
    cpus = os.cpu_count() or 1
    share = hub_figures.hub_share(runs, cpus)
    print(hub_figures.format_hub_share(share, cpus), flush=True)
    relabelled = SELECTOR + ',bench-round=2'
    listed = (len(bench.hub.fleet_clusters(relabelled)), len(bench.hub.member_clusters(relabelled)))
    result = {'count': count, 'runs': runs, 'listed': listed, 'hub_share': share}
    outcome = hub_figures.hub_passes(result)
    print('   %d hub-side clusters: %s s (%s); relabelled on the hub: %d Clusters, %d MemberClusters%s'
          % (count, 'n/a' if outcome['seconds'] is None else '%.1f' % outcome['seconds'],
             ', '.join('%s %.1f s' % (run['label'], run['seconds']) for run in runs), listed[0], listed[1],
             '' if outcome['refused'] is None else '; REFUSED: ' + outcome['refused']), flush=True)
    remove_objects(bench.hub)
    return result


def record(bench, result, seconds_key, relabel_key=None):
    """Keep a size's figures (refused, with the reason, when a run failed or the hub does not show the relabel)."""
    outcome = hub_figures.hub_passes(result)
    bench.record([run['label'] for run in result['runs']], **{seconds_key: outcome['seconds']})
    values = {seconds_key: outcome['seconds']}
    if relabel_key:
        values[relabel_key] = outcome['relabel_seconds']
        bench.record([run['label'] for run in result['runs'] if run['label'].endswith('-relabel')], **{relabel_key: outcome['relabel_seconds']})
    if outcome['refused']:
        bench.refuse(outcome['refused'], *values)


def stage_hub100(bench):
    """100 Fleet Clusters and 100 MemberClusters: predefined with labels, relabelled, listed by cluster_status."""
    count = bench.args.hub_clusters
    result = passes(bench, count)
    bench.raw.setdefault('hub_passes', {})[str(count)] = result
    record(bench, result, 'hub_100_seconds', 'hub_relabel_100_seconds')
    if count != 100:
        bench.refuse('ran with --hub-clusters %d, the figure is of 100' % count, 'hub_100_seconds', 'hub_relabel_100_seconds')


def stage_hub1000(bench):
    """The same at 1,000 (and at 100 when hub100 did not run in this run), then the cost per cluster at each size."""
    done = bench.raw.setdefault('hub_passes', {})
    if '100' not in done:
        done['100'] = passes(bench, 100)
        record(bench, done['100'], 'hub_100_seconds', 'hub_relabel_100_seconds')
    done['1000'] = passes(bench, 1000)
    record(bench, done['1000'], 'hub_1000_seconds')
    print(hub_figures.format_hub_costs([done[size] for size in ('100', '1000')]), flush=True)
