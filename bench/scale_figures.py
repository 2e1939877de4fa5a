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
    'first_join_checkin_intervals',
    'parallel_join_ratio',
    'hub_100_seconds',
    'lab_12_members_gib',
    'sliced_runs_ok',
)

# key -> (comparison, target): '<=' lower is better, '>=' higher is better, '==' must equal.
TARGETS = {
    'rerun_seconds_per_member': ('<=', 0.5),
    'rerun_vs_kubernetes_core': ('>=', 4.0),
    'first_join_checkin_intervals': ('<=', 3.0),
    'parallel_join_ratio': ('<=', 1.5),
    'hub_100_seconds': ('<=', 20.0),
    'lab_12_members_gib': ('<=', 8.0),
    'sliced_runs_ok': ('==', True),
}

# Modules that run in the controller process and start no module process of their own.
CONTROLLER_ACTIONS = frozenset((
    'set_fact', 'assert', 'debug', 'set_stats', 'include_tasks', 'import_tasks', 'include_role', 'meta', 'fail',
    'include_vars', 'add_host', 'group_by', 'pause', 'validate_argument_spec',
))

FLEET_AGENT = 'fleetops.registration.fleet_agent'
FLEET_CLUSTER_INFO = 'fleetops.registration.fleet_cluster_info'
TOKEN = 'fleetops.registration.fleet_registration_token'

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


def verdict(key, value):
    """PASS when ``value`` meets the key's target, OVER when not, n/a when it was not measured."""
    if value is None:
        return 'n/a'
    op, target = TARGETS[key]
    if op == '<=':
        return 'PASS' if value <= target else 'OVER'
    if op == '>=':
        return 'PASS' if value >= target else 'OVER'
    return 'PASS' if value == target else 'OVER'


def compute_figures(m):
    """The figures of scale.json from raw measurements (a dict; any of them may be missing).

    rerun_seconds: wall time of the no-change re-run over all members; members: how many;
    kcore_seconds: the kubernetes.core baseline over the same members; checkin_window_seconds: a first join's
    agent install to check-in; checkin_interval_seconds: the hub's agentCheckinInterval;
    join_1_seconds / join_batch_seconds: first join of 1 member / of the batch in one run;
    hub_100_seconds; lab_rss_bytes; sliced_ok.
    """
    def rounded(value, digits=2):
        return None if value is None else round(value, digits)
    members = m.get('members')
    figures = {
        'rerun_seconds_per_member': rounded(ratio(m.get('rerun_seconds'), members), 3),
        'rerun_vs_kubernetes_core': rounded(ratio(m.get('kcore_seconds'), m.get('rerun_seconds'))),
        'first_join_checkin_intervals': rounded(ratio(m.get('checkin_window_seconds'), m.get('checkin_interval_seconds'))),
        'parallel_join_ratio': rounded(ratio(m.get('join_batch_seconds'), m.get('join_1_seconds'))),
        'hub_100_seconds': rounded(m.get('hub_100_seconds'), 1),
        'lab_12_members_gib': rounded(None if m.get('lab_rss_bytes') is None else m['lab_rss_bytes'] / 2 ** 30),
        'sliced_runs_ok': m.get('sliced_ok'),
    }
    return {key: figures[key] for key in KEYS}


def merge_figures(previous, current):
    """scale.json after a partial run: figures measured now replace earlier ones; the keys are exactly KEYS."""
    merged = {key: (previous or {}).get(key) for key in KEYS}
    merged.update({key: value for key, value in current.items() if key in merged and value is not None})
    return merged


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


def format_table(figures, measured_now=None):
    """The table (figure, value, target, PASS/OVER); figures carried over from an earlier run are marked."""
    rows = [('figure', 'value', 'target', 'verdict')]
    for key in KEYS:
        value = figures.get(key)
        mark = '' if measured_now is None or key in measured_now or value is None else ' (earlier run)'
        rows.append((key, format_value(value) + mark, format_target(key), verdict(key, value)))
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    lines = ['  '.join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip() for row in rows]
    lines.insert(1, '  '.join('-' * w for w in widths))
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
    without one, the fleet_agent task's own end. Hosts without a fleet_agent install (state present) are left out.
    """
    windows = {}
    by_host = {}
    for rec in sorted(records, key=lambda r: r.get('start', 0)):
        by_host.setdefault(rec['host'], []).append(rec)
    for host, recs in by_host.items():
        for i, rec in enumerate(recs):
            if rec.get('action') != FLEET_AGENT or rec.get('status') == 'skipped':
                continue
            if (rec.get('args') or {}).get('state', 'present') != 'present':
                continue
            end = rec['end']
            for later in recs[i + 1:]:
                if later.get('action') == FLEET_CLUSTER_INFO and later.get('status') != 'skipped':
                    end = later['end']
                    break
            windows[host] = end - rec['start']
            break
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

    processes: the count hook's records; cluster_urls: {cluster: 'https://127.0.0.1:<port>'} ('hub' is the hub).
    """
    where = {url.split('://', 1)[-1].rstrip('/'): ('hub' if name == 'hub' else 'member') for name, url in cluster_urls.items()}
    modules = {}
    for proc in processes:
        row = modules.setdefault(proc.get('module') or '?', {'processes': 0, 'hub_requests': 0, 'member_requests': 0, 'helm_runs': 0,
                                                             'seconds': 0.0, 'cpu': 0.0})
        row['processes'] += 1
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

    def line(name, row, fmt):
        return '%-32s ' % name + ' '.join(fmt % row[key] for key in CALL_COLUMNS)
    for name in sorted(summary['modules']):
        lines.append(line(name, summary['modules'][name], '%8d'))
    lines.append(line('total', summary['total'], '%8.0f'))
    if summary.get('per_member', {}).get('processes') is not None:
        lines.append(line('per member (total / %d)' % summary['members'], summary['per_member'], '%8.1f'))
    return '\n'.join(lines)
