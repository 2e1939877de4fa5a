"""Lab benchmark (``make bench``): build time, warm start-up time and resident memory per cluster.

Targets: a warm ``lab up`` (hub + 2 members, binaries cached) is ready in under 60 s, and each
cluster needs under 1.5 GiB resident memory (its own processes plus an equal share of the shared
etcd and agent runner). Ratios below 1.0 meet the target.

If a lab is already running it is left alone: the bench says so and samples its memory instead
of timing a start. Run as ``PYTHONPATH=lab python bench/lab_up.py [--members N] [--settle S]``.
"""

import argparse
import os
import subprocess
import sys
import threading
import time

from fleetlab import build
from fleetlab import lab

START_TARGET_SECONDS = 60.0
MEMORY_TARGET_BYTES = 1.5 * 2 ** 30
SAMPLE_EVERY = 1.0
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def fleetlab(*args, timeout=900):
    """Run ``python -m fleetlab <args>`` from the repository; returns (exit code, seconds)."""
    env = dict(os.environ)
    env['PYTHONPATH'] = os.pathsep.join(filter(None, [os.path.join(REPO_ROOT, 'lab'), env.get('PYTHONPATH')]))
    started = time.monotonic()
    proc = subprocess.run([sys.executable, '-m', 'fleetlab'] + list(args), cwd=REPO_ROOT, env=env, timeout=timeout, check=False)
    return proc.returncode, time.monotonic() - started


class MemorySampler:
    """Polls ``lab.status_report()`` and keeps each cluster's peak resident memory."""

    def __init__(self):
        self.peak = {}        # cluster -> peak bytes of its own processes
        self.peak_shared = 0  # etcd + agent runner
        self.detail = {}      # cluster -> {process name: peak bytes}
        self.ready_seconds = None  # as ``up`` itself recorded it
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def sample(self):
        """Take one sample."""
        try:
            report = lab.status_report()
        except (OSError, ValueError, KeyError):  # state being rewritten, a process just exited
            return
        self.ready_seconds = report.get('ready_seconds') or self.ready_seconds
        self.peak_shared = max(self.peak_shared, sum(p.get('rss', 0) for p in report.get('shared', [])))
        for name, cluster in report.get('clusters', {}).items():
            self.peak[name] = max(self.peak.get(name, 0), cluster.get('rss', 0))
            procs = self.detail.setdefault(name, {})
            for proc in cluster.get('processes', []):
                procs[proc['name']] = max(procs.get(proc['name'], 0), proc.get('rss', 0))

    def _run(self):
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(SAMPLE_EVERY)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.sample()


def gib(value):
    """Bytes as GiB text."""
    return '%.2f GiB' % (value / 2 ** 30)


def verdict(ratio):
    """``ok`` under the target, ``OVER`` otherwise."""
    return 'ok' if ratio < 1.0 else 'OVER'


def bench_build():
    """Build what is missing (timed); otherwise report the recorded cold build times."""
    missing = build.missing_binaries()
    if missing:
        print('== cold build of %s' % ', '.join(missing))
        timings = {}
        started = time.monotonic()
        build.ensure_binaries(missing, timings=timings)
        for name, seconds in timings.items():
            print('  %-26s %6.0f s' % (name, seconds))
        print('  %-26s %6.0f s' % ('total', time.monotonic() - started))
        return
    recorded = build.recorded_build_times()
    print('== build: every binary is cached (nothing built)')
    if recorded:
        print('   last cold builds recorded on this machine (each reuses the Go build cache of those before it):')
        for name in build.BINARIES:
            if name in recorded:
                print('  %-26s %6.0f s  (%s)' % (name, recorded[name]['seconds'], recorded[name]['version']))


def bench_start(members, settle):
    """Time a warm ``up`` and sample memory; returns (start seconds or None, sampler)."""
    status = lab.status_report()['status']
    if status != 'absent':
        print('== a lab is already %s in %s: not timing a start; sampling its memory for %.0f s' % (status, lab.status_report()['lab_dir'], settle))
        with MemorySampler() as sampler:
            time.sleep(settle)
        return None, sampler
    print('== warm start: lab up --members %d' % members)
    with MemorySampler() as sampler:
        code, seconds = fleetlab('up', '--members', str(members))
        if code != 0:
            fleetlab('down')
            raise SystemExit('bench: lab up failed (exit %d); see its output above' % code)
        print('   settling %.0f s to catch the controllers\' peak memory' % settle)
        time.sleep(settle)
    fleetlab('down')
    return seconds, sampler


def report(seconds, sampler):
    """Print the results and their ratios to the targets."""
    print('== results')
    if seconds is not None:
        ratio = seconds / START_TARGET_SECONDS
        print('  warm start (hub + members ready): %6.1f s   target < %.0f s   ratio %.2f %s' % (seconds, START_TARGET_SECONDS, ratio, verdict(ratio)))
        if sampler.ready_seconds:
            print('    (of which `up` itself reports %.1f s from start to ready; the rest is the CLI starting and returning)' % sampler.ready_seconds)
    clusters = sorted(sampler.peak)
    if not clusters:
        print('  memory: no cluster processes seen')
        return
    share = sampler.peak_shared / len(clusters)
    print('  shared processes (etcd, agent runner) peak %s, %s charged to each cluster' % (gib(sampler.peak_shared), gib(share)))
    for name in clusters:
        total = sampler.peak[name] + share
        ratio = total / MEMORY_TARGET_BYTES
        top = sorted(sampler.detail.get(name, {}).items(), key=lambda item: -item[1])[:4]
        print('  %-8s peak %s (own %s)   target < %s   ratio %.2f %s' % (
            name, gib(total), gib(sampler.peak[name]), gib(MEMORY_TARGET_BYTES), ratio, verdict(ratio)))
        print('           largest: %s' % ', '.join('%s %.0f MiB' % (proc.rsplit('/', 1)[-1], rss / 2 ** 20) for proc, rss in top))


def main(argv=None):
    """Entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--members', type=int, default=2)
    parser.add_argument('--settle', type=float, default=30.0, help='seconds to keep sampling memory after ready (default 30)')
    args = parser.parse_args(argv)
    try:
        bench_build()
    except build.BuildError as exc:
        print('bench: %s' % exc, file=sys.stderr)
        return 1
    seconds, sampler = bench_start(args.members, args.settle)
    report(seconds, sampler)
    return 0


if __name__ == '__main__':
    sys.exit(main())
