"""Leave and join one member again and again, as users re-register a cluster: ``make stress-rejoin N=20``.

Each cycle runs leave_cluster.yml then join_cluster.yml for one member of a lab of its own (``.cache/stress-lab``,
hub + 1 member; FLEETOPS_BENCH_LAB_DIR moves it), every ``--restart-every``-th cycle with the hub's API server
killed and started again between the two (the order in which the fault suite once met a join that never checked in).
It reports each cycle's times and the Fleet agent's install-to-check-in window in check-in intervals, which must stay
within the bench's own limit for a first join (``first_join_checkin_intervals``); any failed run or slow check-in makes
the exit status 1. Not part of ``make test``: 20 cycles take about 25 minutes.
"""

import argparse
import os
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO_ROOT = BENCH.parent
os.environ.setdefault('FLEETOPS_BENCH_LAB_DIR', str(REPO_ROOT / '.cache' / 'stress-lab'))
sys.path.insert(0, str(BENCH))

import scale_figures as figures  # noqa: E402  pylint: disable=wrong-import-position
import scale_lab as labctl  # noqa: E402  pylint: disable=wrong-import-position

LEAVE, JOIN = 'playbooks/leave_cluster.yml', 'playbooks/join_cluster.yml'
MAX_INTERVALS = figures.TARGETS['first_join_checkin_intervals'][1]
RESULT = labctl.OUT_DIR / 'stress_rejoin.json'


def restart_hub_apiserver():
    """Kill the hub's API server and start it again (same port, PKI and data); seconds it took."""
    started = time.monotonic()
    for action in ('kill', 'start'):
        if labctl.fleetlab('component', action, 'hub-apiserver').returncode != 0:
            raise SystemExit('stress-rejoin: fleetlab component %s hub-apiserver failed' % action)
    return time.monotonic() - started


def cycle(number, member, hub_host, restart, interval):
    """One leave and join; the figures of the cycle."""
    inv = labctl.LAB_DIR / 'inventory.yml'
    row = {'cycle': number, 'restart': restart}
    leave = labctl.run_playbook('stress-leave-%d' % number, REPO_ROOT / LEAVE, inv, limit=[member])
    row.update(leave_rc=leave.rc, leave_seconds=round(leave.seconds, 1))
    if restart:
        row['restart_seconds'] = round(restart_hub_apiserver(), 1)
    join = labctl.run_playbook('stress-join-%d' % number, REPO_ROOT / JOIN, inv, limit=[hub_host, member])
    window = figures.checkin_windows(join.records).get(member)
    row.update(join_rc=join.rc, join_seconds=round(join.seconds, 1),
               checkin_window_seconds=None if window is None or join.rc != 0 else round(window, 1),
               join_log=os.path.relpath(join.log, REPO_ROOT))
    intervals = figures.ratio(row['checkin_window_seconds'], interval)
    row['checkin_intervals'] = None if intervals is None else round(intervals, 2)
    row['ok'] = leave.rc == 0 and join.rc == 0 and intervals is not None and intervals <= MAX_INTERVALS
    return row


def print_table(rows, interval):
    print('\n cycle  restart  leave s  join s  check-in s  intervals (limit %.1f of %.0f s)  verdict' % (MAX_INTERVALS, interval))
    for row in rows:
        print(' %5d  %-7s  %7.1f  %6.1f  %10s  %9s  %s' % (
            row['cycle'], 'yes' if row['restart'] else '', row['leave_seconds'], row['join_seconds'],
            '-' if row['checkin_window_seconds'] is None else row['checkin_window_seconds'],
            '-' if row['checkin_intervals'] is None else row['checkin_intervals'],
            'ok' if row['ok'] else 'FAIL (rc leave %d, join %d; log %s)' % (row['leave_rc'], row['join_rc'], row['join_log'])))
    windows = [r['checkin_window_seconds'] for r in rows if r['checkin_window_seconds'] is not None]
    if windows:
        print('\n check-in window: min %.1f s, median %.1f s, max %.1f s over %d cycles'
              % (min(windows), sorted(windows)[len(windows) // 2], max(windows), len(windows)))


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split('\n', maxsplit=1)[0])
    parser.add_argument('--cycles', type=int, default=20)
    parser.add_argument('--restart-every', type=int, default=5, help='restart the hub API server before every Nth join (0: never)')
    parser.add_argument('--keep-lab', action='store_true', help='leave the lab running afterwards')
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    labctl.ensure_collection()
    started, _seconds = labctl.lab_up(1)
    try:
        _path, parsed = labctl.inventory()
        member, hub_host = labctl.hosts_of(parsed, 'members')[0], labctl.hosts_of(parsed, 'hub')[0]
        interval = figures.parse_duration(labctl.Hub().checkin_interval() or '')
        if not interval:
            raise SystemExit('stress-rejoin: the hub reports no agentCheckinInterval (ConfigMap fleet-controller)')
        labctl.run_playbook('stress-setup-join', REPO_ROOT / JOIN, labctl.LAB_DIR / 'inventory.yml', limit=[hub_host, member])
        rows = []
        for number in range(1, args.cycles + 1):
            restart = bool(args.restart_every) and number % args.restart_every == 0
            rows.append(cycle(number, member, hub_host, restart, interval))
            labctl.write_json(RESULT, {'interval_seconds': interval, 'limit_intervals': MAX_INTERVALS, 'cycles': rows})
        print_table(rows, interval)
        print(' figures in %s' % os.path.relpath(RESULT, REPO_ROOT))
        failed = [r['cycle'] for r in rows if not r['ok']]
        if failed:
            print(' FAILED cycles: %s' % ', '.join(str(n) for n in failed))
        return 1 if failed else 0
    finally:
        if started and not args.keep_lab:
            labctl.lab_down()


if __name__ == '__main__':
    sys.exit(main())
