"""Pure parts of the bench's hub-side stages (``bench/scale_hub.py``): when a size's runs make figures, and the cost
per cluster at each size. Tested in ``tests/unit/test_bench_hub.py``; the refusal of a failed run is
``scale_figures.refusal``, as for every other stage.
"""

import re

from scale_figures import CONTROLLER_ACTIONS, refusal, short_action

HUB_PASSES = ('predefine', 'relabel', 'status')
_SERVED = re.compile(r'^apiserver_request_total\{(?P<labels>[^}]*)\} (?P<count>\S+)$')
_LABEL = re.compile(r'(\w+)="([^"]*)"')


def served_requests(metrics_text):
    """What the API server has served since it started, from its ``/metrics`` text: ``{'VERB resource[/sub]': count}``
    over every response code. Watches are left out: one is a connection held open, not a request made."""
    served = {}
    for line in metrics_text.splitlines():
        match = _SERVED.match(line)
        if not match:
            continue
        labels = dict(_LABEL.findall(match.group('labels')))
        if labels.get('verb') == 'WATCH':
            continue
        key = '%s %s' % (labels.get('verb'), '/'.join(filter(None, (labels.get('resource'), labels.get('subresource')))))
        served[key] = served.get(key, 0) + int(float(match.group('count')))
    return served


def served_between(before, after, top=6):
    """Requests served between two ``served_requests`` readings: ``{'requests': n, 'top': [(key, n), ...]}``."""
    delta = {key: after[key] - before.get(key, 0) for key in after if after[key] > before.get(key, 0)}
    ranked = sorted(delta.items(), key=lambda pair: (-pair[1], pair[0]))
    return {'requests': sum(delta.values()), 'top': ranked[:top]}


def hub_call_counts(processes):
    """A counted run's module processes and API requests (the count hook's records): ``{'processes', 'requests',
    'by_method': {GET: n, ...}, 'by_module': {module: {'processes', 'requests'}}}``."""
    counts = {'processes': 0, 'requests': 0, 'by_method': {}, 'by_module': {}}
    for proc in processes:
        module = counts['by_module'].setdefault(proc.get('module') or '?', {'processes': 0, 'requests': 0})
        requests = proc.get('requests') or []
        module['processes'] += 1
        module['requests'] += len(requests)
        counts['processes'] += 1
        counts['requests'] += len(requests)
        for method, _target, _path in requests:
            counts['by_method'][method] = counts['by_method'].get(method, 0) + 1
    return counts


def module_seconds(records):
    """Seconds of each task that ran a module (controller-side actions left out), in run order: ``[(task, s)]``."""
    return [(rec.get('task'), round(rec['end'] - rec['start'], 2)) for rec in records
            if rec.get('status') != 'skipped' and short_action(rec.get('action')) not in CONTROLLER_ACTIONS]


def hub_passes(result):
    """The figures of one size of hub-side clusters: ``{'seconds', 'relabel_seconds', 'refused'}``.

    result: ``{'count', 'listed': (Clusters, MemberClusters) carrying the relabel, 'runs': [predefine, relabel, status]}``,
    each run ``{'label', 'rc', 'seconds'}``. A run that failed, a pass missing, or a hub that does not show every cluster
    relabelled in both managers is no measurement: both times are None and ``refused`` says why.
    """
    runs = result.get('runs') or []
    count = result.get('count')
    reasons = [why for why in (refusal(run['label'], run['rc']) for run in runs) if why]
    if len(runs) != len(HUB_PASSES):
        reasons.append('%d of the %d runs (%s) ran' % (len(runs), len(HUB_PASSES), ', '.join(HUB_PASSES)))
    listed = tuple(result.get('listed') or (0, 0))
    if listed != (count, count):
        reasons.append('%d Clusters and %d MemberClusters relabelled of %s' % (listed + (count,)))
    if reasons:
        return {'seconds': None, 'relabel_seconds': None, 'refused': '; '.join(reasons)}
    return {'seconds': sum(run['seconds'] for run in runs), 'relabel_seconds': runs[1]['seconds'], 'refused': None}


def hub_cost_rows(results):
    """Per size and pass: seconds, ms per cluster, module processes and API requests per cluster (None when refused)."""
    rows = []
    for result in results:
        count, measured = result['count'], hub_passes(result)['refused'] is None
        for name, run in zip(HUB_PASSES, result.get('runs') or []):
            calls = run.get('calls') or {}
            rows.append({'clusters': count, 'pass': name, 'seconds': run['seconds'] if measured else None,
                         'ms_per_cluster': 1000.0 * run['seconds'] / count if measured else None,
                         'processes': calls.get('processes'), 'requests': calls.get('requests'),
                         'requests_per_cluster': None if calls.get('requests') is None else calls['requests'] / count})
    return rows


def format_hub_costs(results):
    """The cost per hub-side cluster at each size, so the slope shows (a flat ms/cluster: linear; rising: worse)."""
    lines = ['%8s  %-9s  %7s  %7s  %9s  %9s  %8s' % ('clusters', 'pass', 'seconds', 'ms/clu', 'processes', 'requests', 'req/clu')]

    def shown(value, fmt):
        return 'n/a' if value is None else fmt % value
    for row in hub_cost_rows(results):
        lines.append('%8d  %-9s  %7s  %7s  %9s  %9s  %8s' % (
            row['clusters'], row['pass'], shown(row['seconds'], '%.1f'), shown(row['ms_per_cluster'], '%.1f'),
            shown(row['processes'], '%d'), shown(row['requests'], '%d'), shown(row['requests_per_cluster'], '%.2f')))
    for result in results:
        outcome = hub_passes(result)
        lines.append('%8d  %-9s  %7s  %7s' % (result['count'], 'all', shown(outcome['seconds'], '%.1f'),
                                              shown(None if outcome['seconds'] is None else 1000.0 * outcome['seconds'] / result['count'], '%.1f'))
                     + ('' if outcome['refused'] is None else '  refused: ' + outcome['refused']))
    return '\n'.join(lines)


def cpu_used(before, after, names):
    """CPU seconds each process used between two ``{pid: seconds}`` readings, by name, most first (one decimal)."""
    used = {}
    for pid, seconds in after.items():
        name = names.get(pid, str(pid))
        used[name] = used.get(name, 0.0) + seconds - before.get(pid, seconds)
    return dict(sorted(((name, round(value, 1)) for name, value in used.items() if value >= 0.05), key=lambda pair: -pair[1]))


def served_rows(runs):
    """Per run: the requests the hub's API server served during it, how many were ours (the count hook's), the rest
    (its own controllers and agents, reacting), and what it served after the run until it had settled."""
    rows = []
    for run in runs:
        served = (run.get('served') or {}).get('requests')
        ours = (run.get('calls') or {}).get('requests')
        rows.append({'label': run['label'], 'seconds': run['seconds'], 'hub_cpu': run.get('hub_cpu_seconds'), 'ours': ours, 'served': served,
                     'hub_own': None if served is None or ours is None else max(served - ours, 0),
                     'after': (run.get('served_after') or {}).get('requests'),
                     'top': _most_served(run.get('served'), run.get('served_after'))})
    return rows


def _most_served(*readings):
    """The requests served most, over the run and the settling after it (each reading keeps its own top few)."""
    counts = {}
    for reading in readings:
        for key, count in (reading or {}).get('top') or []:
            counts[key] = counts.get(key, 0) + count
    return sorted(counts.items(), key=lambda pair: (-pair[1], pair[0]))


def format_served(runs):
    """What the hub served for each pass: ours against its controllers' own reaction to it."""
    header = ('run', 'seconds', 'hub CPU s', 'ours', 'hub\'s own', 'in all', 'after, settling')
    lines = ['   %-18s %7s  %9s  %6s  %9s  %8s  %13s' % header]

    def shown(value, fmt='%d'):
        return 'n/a' if value is None else fmt % value
    for row in served_rows(runs):
        lines.append('   %-18s %7.1f  %9s  %6s  %9s  %8s  %13s   %s' % (
            row['label'], row['seconds'], shown(row['hub_cpu'], '%.1f'), shown(row['ours']), shown(row['hub_own']), shown(row['served']),
            shown(row['after']), ', '.join('%s %d' % pair for pair in row['top'][:4])))
    for run in runs:
        if run.get('hub_cpu_by_process'):
            lines.append('   %-18s hub CPU s by process: %s' % (run['label'], ', '.join(
                '%s %.1f' % pair for pair in list(run['hub_cpu_by_process'].items())[:5])))
    return '\n'.join(lines)


def hub_share(runs, cpus):
    """What a size's passes took of the machine: ``{'seconds', 'hub_cpu', 'ours_cpu', 'hub_seconds', 'floor_seconds',
    'share'}``. ``hub_seconds`` is the CPU of the hub's processes spread over ``cpus`` (wall time the machine gave the
    hub alone; ``share`` of the passes' time), ``floor_seconds`` that of the hub's and the runs' own processes
    together: no run doing this work on this machine takes less. None when a pass has no CPU reading."""
    if not runs or cpus < 1 or any(run.get('hub_cpu_seconds') is None or run.get('cpu_seconds') is None for run in runs):
        return None
    seconds = sum(run['seconds'] for run in runs)
    hub_cpu = sum(run['hub_cpu_seconds'] for run in runs)
    ours_cpu = sum(run['cpu_seconds'] for run in runs)
    return {'seconds': round(seconds, 1), 'hub_cpu': round(hub_cpu, 1), 'ours_cpu': round(ours_cpu, 1),
            'hub_seconds': round(hub_cpu / cpus, 1), 'floor_seconds': round((hub_cpu + ours_cpu) / cpus, 1),
            'share': round(hub_cpu / cpus / seconds, 2) if seconds > 0 else None}


def format_hub_share(share, cpus):
    """The line the bench prints for ``hub_share``."""
    if share is None:
        return "   the CPU of the hub or of a run was not read for every pass"
    return ("   during these passes' %.1f s the hub's processes used %.1f CPU s (all of the %d CPUs for %.1f s, %d %% of "
            "the time) and the runs' own %.1f CPU s: this work needs %.1f s on %d CPUs" % (
                share['seconds'], share['hub_cpu'], cpus, share['hub_seconds'], round(100 * (share['share'] or 0)),
                share['ours_cpu'], share['floor_seconds'], cpus))
