"""Pure parts of the fleet-size benchmark (``bench/scale.py``): figures, targets, the table, task timings.

Nothing here touches a lab or starts a process, so ``tests/unit/test_bench_scale.py`` tests it directly.
Timing records are the JSON lines ``bench/callback_plugins/bench_timer.py`` writes, one per host and task:
``{"host", "task", "action", "start", "end", "status", "items", "args"}`` (times in seconds since the epoch).
"""

import json
import re

# The keys of .cache/bench/scale.json, in the order of the table (issue 9). All numbers except the last.
KEYS = (
    'rerun_seconds_per_member',
    'rerun_vs_kubernetes_core',
    'rerun_2_vs_kubernetes_core',
    'first_join_checkin_intervals',
    'parallel_join_ratio',
    'hub_100_seconds',
    'hub_relabel_100_seconds',
    'hub_1000_seconds',
    'lab_12_members_gib',
    'rotation_gap_intervals',
    'rerun_50ms_vs_loopback',
    'sliced_runs_ok',
)

# key -> (comparison, target): '<=' lower is better, '>=' higher is better, '==' must equal. Issue 33's goals.
TARGETS = {
    'rerun_seconds_per_member': ('<=', 0.25),
    'rerun_vs_kubernetes_core': ('>=', 10.0),
    'rerun_2_vs_kubernetes_core': ('>=', 4.0),  # paired runs over 2 members: what a small inventory sees
    'first_join_checkin_intervals': ('<=', 2.0),
    'parallel_join_ratio': ('<=', 1.3),
    'hub_100_seconds': ('<=', 12.0),
    'hub_relabel_100_seconds': ('<=', 4.0),
    'hub_1000_seconds': ('<=', 60.0),
    'lab_12_members_gib': ('<=', 8.0),
    'rotation_gap_intervals': ('<=', 1.5),  # Fleet's agent needs ~20 s from a stop to its first check-in (docs/performance.md)
    'rerun_50ms_vs_loopback': ('<=', 1.5),
    'sliced_runs_ok': ('==', True),
}

# Modules that run in the controller process and start no module process of their own.
CONTROLLER_ACTIONS = frozenset((
    'set_fact', 'assert', 'debug', 'set_stats', 'include_tasks', 'import_tasks', 'include_role', 'meta', 'fail',
    'include_vars', 'add_host', 'group_by', 'pause', 'validate_argument_spec',
    'step_args',  # the collection's own: works out the roles' arguments on the controller, runs no module
    # Their actions run the module's code in the controller on a local connection with the controller's Python, as the
    # bench lab's inventory has it (plugin_utils/controller_run.py IN_CONTROLLER); the count hook marks them in_controller.
    'fleet_agent', 'fleet_cluster', 'fleet_cluster_info', 'fleet_registration_token', 'fleet_status_info', 'hub_move_info',
    'hub_prepare', 'kubefleet_member_agent', 'kubefleet_member_cluster', 'kubefleet_member_cluster_info',
    'kubefleet_member_identity', 'member_info', 'member_lock',
))

FLEET_AGENT = 'fleetops.registration.fleet_agent'
FLEET_CLUSTER_INFO = 'fleetops.registration.fleet_cluster_info'
TOKEN = 'fleetops.registration.fleet_registration_token'
SUCCEEDED = ('ok', 'changed')

_DURATION = re.compile(r'(\d+(?:\.\d+)?)(ms|h|m|s)')
_UNITS = {'h': 3600.0, 'm': 60.0, 's': 1.0, 'ms': 0.001}


def parse_duration(text):
    """A Go duration (``15s``, ``1m30s``, ``500ms``) or plain seconds as float seconds."""
    text = str(text).strip()
    if re.fullmatch(r'\d+(\.\d+)?', text):
        return float(text)
    parts = _DURATION.findall(text)
    if not parts or ''.join(n + u for n, u in parts) != text:
        raise ValueError('not a duration: %r' % text)
    return sum(float(number) * _UNITS[unit] for number, unit in parts)


def ratio(numerator, denominator):
    """numerator / denominator, or None when either is missing or the denominator is not positive."""
    if numerator is None or denominator is None or denominator <= 0:
        return None
    return numerator / denominator


# The raw measurements each figure is computed from: a figure is a measurement only when all of them are.
FIGURE_INPUTS = {
    'rerun_seconds_per_member': ('rerun_seconds', 'members'),
    'rerun_vs_kubernetes_core': ('kcore_seconds', 'rerun_seconds'),
    'rerun_2_vs_kubernetes_core': ('kcore_2_seconds', 'rerun_2_seconds'),
    'first_join_checkin_intervals': ('checkin_window_seconds', 'checkin_interval_seconds'),
    'parallel_join_ratio': ('join_batch_seconds', 'join_1_seconds'),
    'hub_100_seconds': ('hub_100_seconds',),
    'hub_relabel_100_seconds': ('hub_relabel_100_seconds',),
    'hub_1000_seconds': ('hub_1000_seconds',),
    'lab_12_members_gib': ('lab_rss_bytes',),
    'rotation_gap_intervals': ('rotation_heartbeat_gap_seconds', 'heartbeat_period_seconds', 'rotation_checkin_gap_seconds',
                               'checkin_interval_seconds'),
    'rerun_50ms_vs_loopback': ('rerun_50ms_seconds', 'rerun_loopback_seconds'),
    'sliced_runs_ok': ('sliced_ok',),
}
NOT_MEASURED = 'not measured in this run'


def verdict(key, value, reason=None):
    """PASS when ``value`` meets the key's target, OVER when not; FAIL when the run refused the figure, n/a when its
    stage did not run."""
    if value is None:
        return 'n/a' if reason in (None, NOT_MEASURED) else 'FAIL'
    op, target = TARGETS[key]
    if op == '<=':
        return 'PASS' if value <= target else 'OVER'
    if op == '>=':
        return 'PASS' if value >= target else 'OVER'
    return 'PASS' if value == target else 'OVER'


def longest_gap(contacts):
    """The longest time between two consecutive contacts (epoch seconds, any order, repeats and None ignored); None
    with fewer than two."""
    times = sorted(set(c for c in contacts if c is not None))
    return max(later - earlier for earlier, later in zip(times, times[1:])) if len(times) > 1 else None


def worst_ratio(*pairs):
    """The largest numerator / denominator of ``pairs``, None when any of them is not a measurement."""
    ratios = [ratio(numerator, denominator) for numerator, denominator in pairs]
    return None if any(r is None for r in ratios) else max(ratios)


def compute_figures(m):
    """The figures of scale.json from raw measurements (a dict; any of them may be missing).

    rerun_seconds: wall time of the no-change re-run over all members; members: how many;
    kcore_seconds: the kubernetes.core baseline over the same members; rerun_2_seconds / kcore_2_seconds: the two over
    the first 2 members, in pairs; checkin_window_seconds: a first join's
    agent install to check-in; checkin_interval_seconds: the hub's agentCheckinInterval;
    join_1_seconds / join_batch_seconds: first join of 1 member / of the batch in one run;
    hub_100_seconds, hub_relabel_100_seconds, hub_1000_seconds (``hub_passes``); lab_rss_bytes; sliced_ok;
    rotation_heartbeat_gap_seconds / rotation_checkin_gap_seconds: the
    longest time without a KubeFleet heartbeat / a Fleet check-in around a credential rotation, and
    heartbeat_period_seconds, the MemberCluster's heartbeatPeriodSeconds (1.0 or less: no interval missed);
    rerun_50ms_seconds / rerun_loopback_seconds: the no-change re-run with a 50 ms round trip to every API server /
    the same re-run on the loopback, run in pairs (latency stage).
    """
    def rounded(value, digits=2):
        return None if value is None else round(value, digits)
    members = m.get('members')
    figures = {
        'rerun_seconds_per_member': rounded(ratio(m.get('rerun_seconds'), members), 3),
        'rerun_vs_kubernetes_core': rounded(ratio(m.get('kcore_seconds'), m.get('rerun_seconds'))),
        'rerun_2_vs_kubernetes_core': rounded(ratio(m.get('kcore_2_seconds'), m.get('rerun_2_seconds'))),
        'first_join_checkin_intervals': rounded(ratio(m.get('checkin_window_seconds'), m.get('checkin_interval_seconds'))),
        'parallel_join_ratio': rounded(ratio(m.get('join_batch_seconds'), m.get('join_1_seconds'))),
        'hub_100_seconds': rounded(m.get('hub_100_seconds'), 1),
        'hub_relabel_100_seconds': rounded(m.get('hub_relabel_100_seconds'), 1),
        'hub_1000_seconds': rounded(m.get('hub_1000_seconds'), 1),
        'lab_12_members_gib': rounded(None if m.get('lab_rss_bytes') is None else m['lab_rss_bytes'] / 2 ** 30),
        'rotation_gap_intervals': rounded(worst_ratio((m.get('rotation_heartbeat_gap_seconds'), m.get('heartbeat_period_seconds')),
                                                      (m.get('rotation_checkin_gap_seconds'), m.get('checkin_interval_seconds')))),
        'rerun_50ms_vs_loopback': rounded(ratio(m.get('rerun_50ms_seconds'), m.get('rerun_loopback_seconds'))),
        'sliced_runs_ok': m.get('sliced_ok'),
    }
    return {key: figures[key] for key in KEYS}


def refusal(label, rc, changed=0, expect_no_change=False):
    """Why a playbook run is no measurement, or None when it is one: it failed, or a no-change run changed something.
    A run that fails early is fast, so its time would flatter every figure it enters."""
    if rc != 0:
        return '%s exited %s' % (label, rc)
    if expect_no_change and changed:
        return '%s changed %d task(s) where none should change' % (label, changed)
    return None


def changed_tasks(records):
    """Tasks (per host) a run reported changed."""
    return sum(1 for rec in records if rec.get('status') == 'changed')


def fastest(attempts, expect_no_change=False):
    """(seconds, label, reason) of repeated runs, each ``{'label', 'rc', 'seconds', 'changed'}``: the fastest one's
    time when every attempt is a measurement; otherwise no time, and the reasons (one bad attempt refuses all)."""
    if not attempts:
        return None, None, 'no run'
    reasons = [why for why in (refusal(a['label'], a['rc'], a.get('changed', 0), expect_no_change) for a in attempts) if why]
    if reasons:
        return None, None, '; '.join(reasons)
    best = min(attempts, key=lambda a: a['seconds'])
    return best['seconds'], best['label'], None


def checkin_interval(text):
    """(seconds, reason) of the hub's agentCheckinInterval; no default is assumed when the hub reports none."""
    if text is None or str(text).strip() == '':
        return None, 'the hub reports no agentCheckinInterval'
    try:
        return parse_duration(text), None
    except ValueError:
        return None, 'the hub\'s agentCheckinInterval %r is not a duration' % (text,)


def lab_processes(report):
    """[(cluster/name, process entry)] of every process ``fleetlab status --json`` lists: shared ones, clusters', agents'."""
    procs = [('shared/' + p['name'], p) for p in report.get('shared') or []]
    for cluster, entry in sorted((report.get('clusters') or {}).items()):
        procs += [('%s/%s' % (cluster, p['name']), p) for p in entry.get('processes') or []]
    return procs


def lab_memory_bytes(report, joined, members=12):
    """(summed RSS of the lab's processes, reason): a figure only for a running lab of ``members`` members, every one
    joined (``joined``: {member: bool}) and every process alive and running (a dead one would count as 0 bytes)."""
    if report.get('status') != 'running':
        return None, 'the lab is %s, not running' % report.get('status')
    if report.get('members') != members:
        return None, 'the lab has %s members, the figure is of %d' % (report.get('members'), members)
    not_joined = sorted(name for name, ok in joined.items() if not ok)
    if len(joined) != members or not_joined:
        return None, 'not every member joined (%s)' % (', '.join(not_joined) or '%d of %d checked' % (len(joined), members))
    procs = lab_processes(report)
    down = [name for name, p in procs if not p.get('alive') or p.get('state') != 'running']
    if not procs or down:
        return None, 'lab processes not running: %s' % (', '.join(down) or 'none listed')
    return sum(p['rss'] for _name, p in procs), None


def figure_report(raw, refused=None, sources=None):
    """This run's figures only: ``{'figures', 'sources', 'reasons'}``.

    raw: this run's measurements; refused: {raw key: why it is no measurement}; sources: {raw key: the playbook
    runs (or reads) it came from}. A figure with a refused input is None with that reason; one whose inputs this run
    did not measure is None, ``NOT_MEASURED``; every other figure names the runs it came from.
    """
    refused, sources = refused or {}, sources or {}
    figures = compute_figures({key: value for key, value in raw.items() if key not in refused})
    from_runs, reasons = {}, {}
    for key in KEYS:
        inputs = FIGURE_INPUTS[key]
        why = [refused[name] for name in inputs if name in refused]
        if why:
            figures[key] = None
            reasons[key] = '; '.join(dict.fromkeys(why))
        elif figures[key] is None:
            reasons[key] = NOT_MEASURED
        else:
            from_runs[key] = sorted({label for name in inputs for label in sources.get(name, ())})
    return {'figures': figures, 'sources': from_runs, 'reasons': reasons}


def scale_json(report, run):
    """scale.json: the figures (the keys of KEYS, this run's only), then which runs each came from or why it is null."""
    data = dict(report['figures'])
    data['bench_run'] = run
    data['from_runs'] = {key: report['sources'].get(key) for key in KEYS}
    data['null_because'] = {key: report['reasons'][key] for key in KEYS if key in report['reasons']}
    return data


def format_value(value):
    """A figure as the table shows it."""
    if value is None:
        return 'n/a'
    if isinstance(value, bool):
        return 'yes' if value else 'NO'
    return '%.2f' % value if isinstance(value, float) else str(value)


def format_target(key):
    """A key's target as text."""
    op, target = TARGETS[key]
    if isinstance(target, bool):
        return 'yes' if target else 'no'
    return '%s %g' % (op, target)


def format_table(report):
    """The table (figure, value, target, verdict, from): each figure's runs, or why it is null."""
    rows = [('figure', 'value', 'target', 'verdict', 'from')]
    for key in KEYS:
        value, reason = report['figures'].get(key), report['reasons'].get(key)
        where = ', '.join(report['sources'].get(key) or ()) if reason is None else reason
        rows.append((key, format_value(value), format_target(key), verdict(key, value, reason), where))
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    lines = ['  '.join([cell.ljust(widths[i]) for i, cell in enumerate(row[:4])] + [row[4]]).rstrip() for row in rows]
    lines.insert(1, '  '.join(['-' * w for w in widths] + ['----']))
    return '\n'.join(lines)


def plan_members(names):
    """Which fresh members each join stage uses: 1 first join, the last 3 as slices, up to 8 between as the batch.

    With fewer than 12 members the batch shrinks (and the sliced stage needs at least 4 members in all).
    """
    names = list(names)
    first = names[:1]
    slices = names[-3:] if len(names) >= 4 else []
    rest = names[1:len(names) - len(slices)]
    return {'first': first, 'batch': rest[:8], 'slices': slices}


def load_timings(lines):
    """Timing records from JSON lines (blank and broken lines skipped)."""
    records = []
    for line in lines:
        line = line.strip()
        if not line:
            continue
        try:
            records.append(json.loads(line))
        except ValueError:
            continue
    return records


def short_action(action):
    """``fleetops.registration.fleet_agent`` -> ``fleet_agent``; ``ansible.builtin.set_fact`` -> ``set_fact``."""
    return (action or '').rsplit('.', 1)[-1]


def tasks_per_host(records):
    """``{host: tasks}``: the tasks each host went through (skipped ones too: each still costs Ansible a worker), a
    ``run_once`` task counted for the host it ran on. Meta tasks (``end_role``) run in the strategy and are not counted."""
    counts = {}
    for rec in records:
        counts[rec['host']] = counts.get(rec['host'], 0) + 1
    return counts


def module_processes(records):
    """Module processes per host: every non-skipped task that is not a controller-side action.

    A loop starts one per item, an ``until`` task one per attempt.
    """
    counts = {}
    for rec in records:
        if rec.get('status') == 'skipped' or short_action(rec.get('action')) in CONTROLLER_ACTIONS:
            continue
        runs = max(1, int(rec.get('items') or 0)) * max(1, int(rec.get('attempts') or 0))
        counts[rec['host']] = counts.get(rec['host'], 0) + runs
    return counts


def checkin_windows(records):
    """Per host: seconds from the start of its fleet_agent install to the end of the check-in wait that follows.

    The wait is the next fleet_cluster_info task of that host (the role's wait for the granted registration);
    without one, the fleet_agent task's own end. Only an install that succeeded counts, and only when its wait
    succeeded too; hosts without one are left out.
    """
    windows = {}
    by_host = {}
    for rec in sorted(records, key=lambda r: r.get('start', 0)):
        by_host.setdefault(rec['host'], []).append(rec)
    for host, recs in by_host.items():
        installs = [i for i, rec in enumerate(recs) if rec.get('action') == FLEET_AGENT and rec.get('status') != 'skipped'
                    and (rec.get('args') or {}).get('state', 'present') == 'present']
        if not installs:
            continue
        install = recs[installs[0]]
        waits = [later for later in recs[installs[0] + 1:] if later.get('action') == FLEET_CLUSTER_INFO and later.get('status') != 'skipped']
        last = waits[0] if waits else install
        if install.get('status') in SUCCEEDED and last.get('status') in SUCCEEDED:
            windows[host] = last['end'] - install['start']
    return windows


def task_breakdown(records, host=None):
    """(task name, seconds) for one host (or the longest host per task), in run order, skipped tasks left out."""
    rows = {}
    order = []
    for rec in sorted(records, key=lambda r: r.get('start', 0)):
        if rec.get('status') == 'skipped' or (host is not None and rec['host'] != host):
            continue
        name = rec.get('task') or rec.get('action')
        if name not in rows:
            order.append(name)
            rows[name] = 0.0
        rows[name] = max(rows[name], rec['end'] - rec['start'])
    return [(name, rows[name]) for name in order]


def tokens_of_run(records):
    """(created, revoked) registration token names of one run, from its fleet_registration_token tasks."""
    created, revoked = set(), set()
    for rec in records:
        if rec.get('action') != TOKEN or rec.get('status') not in ('ok', 'changed'):
            continue
        for args in rec.get('item_args') or [rec.get('args') or {}]:
            name = args.get('name')
            if not name:
                continue
            (revoked if args.get('state') == 'absent' else created).add(name)
    return created, revoked


def sliced_ok(runs, leftover_tokens, members_ok):
    """Whether concurrent sliced runs were clean; returns (ok, reasons).

    runs: [{'rc': exit code, 'records': timing records}] per slice; leftover_tokens: registration tokens still on the
    hub afterwards; members_ok: {member: bool} each slice member checked in and joined.
    """
    reasons = []
    owned = []
    for index, run in enumerate(runs):
        if run.get('rc') != 0:
            reasons.append('slice %d exited %s' % (index + 1, run.get('rc')))
        owned.append(tokens_of_run(run.get('records') or []))
    for index, (_created, revoked) in enumerate(owned):
        for other, (created_other, _revoked) in enumerate(owned):
            if other != index and revoked & created_other:
                reasons.append('slice %d revoked token(s) of slice %d: %s' % (index + 1, other + 1, ', '.join(sorted(revoked & created_other))))
    if leftover_tokens:
        reasons.append('registration tokens left on the hub: %s' % ', '.join(sorted(leftover_tokens)))
    for member, ok in sorted(members_ok.items()):
        if not ok:
            reasons.append('%s did not end checked in and joined' % member)
    return not reasons, reasons


def format_scaling(seconds_by_members):
    """Re-run wall time at each member count, with the cost per member and per added member."""
    lines = ['members  seconds  per member  per added member']
    previous = None
    for count in sorted(seconds_by_members):
        seconds = seconds_by_members[count]
        added = '' if previous is None else '%.2f' % ((seconds - previous[1]) / (count - previous[0]))
        lines.append('%7d  %7.1f  %10.2f  %s' % (count, seconds, seconds / count, added))
        previous = (count, seconds)
    return '\n'.join(lines).rstrip()


CALL_COLUMNS = ('processes', 'hub_requests', 'member_requests', 'helm_runs', 'seconds', 'cpu')


def call_summary(processes, cluster_urls, members):
    """Per module of a counted re-run: processes, API requests to the hub and to members, Helm runs; and per member.

    processes: the count hook's records (one ``in_controller`` is no module process: a module's code run in a worker of
    ansible-playbook); cluster_urls: {cluster: 'https://127.0.0.1:<port>'} ('hub' is the hub).
    """
    where = {url.split('://', 1)[-1].rstrip('/'): ('hub' if name == 'hub' else 'member') for name, url in cluster_urls.items()}
    modules = {}
    for proc in processes:
        row = modules.setdefault(proc.get('module') or '?', {'processes': 0, 'hub_requests': 0, 'member_requests': 0, 'helm_runs': 0,
                                                             'seconds': 0.0, 'cpu': 0.0})
        row['processes'] += 0 if proc.get('in_controller') else 1
        row['helm_runs'] += len(proc.get('helm') or [])
        row['seconds'] += max(0.0, (proc.get('end') or 0) - (proc.get('start') or 0))
        row['cpu'] += (proc.get('cpu') or 0.0) + (proc.get('children_cpu') or 0.0)
        for _method, target, _path in proc.get('requests') or []:
            row['%s_requests' % where.get(target, 'member')] += 1
    total = {key: sum(row[key] for row in modules.values()) for key in CALL_COLUMNS}
    per_member = {key: (value / members if members else None) for key, value in total.items()}
    return {'modules': modules, 'total': total, 'per_member': per_member, 'members': members}


def format_calls(summary):
    """The counted re-run as a table, one row per module, then the total and the total per member."""
    lines = ['%-32s ' % 'module' + ' '.join('%8s' % title for title in ('procs', 'hub API', 'mem API', 'helm', 'wall s', 'CPU s'))]

    def line(name, row, count_format):
        # seconds keep their hundredths: a module run in the controller takes a fraction of one
        return '%-32s ' % name + ' '.join(('%8.2f' if key in ('seconds', 'cpu') else count_format) % row[key] for key in CALL_COLUMNS)
    for name in sorted(summary['modules']):
        lines.append(line(name, summary['modules'][name], '%8d'))
    lines.append(line('total', summary['total'], '%8.0f'))
    if summary.get('per_member', {}).get('processes') is not None:
        lines.append(line('per member (total / %d)' % summary['members'], summary['per_member'], '%8.1f'))
    return '\n'.join(lines)
