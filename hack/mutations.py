"""Mutation check of the pure decision code (``make test-mutations``, not part of make test).

cosmic-ray (PyPI) mutates staged copies of the collection (``.cache/mutation/w<N>``, so the checkout is never touched)
and runs unit tests against each mutant; a mutant the tests do not notice survives. Only the decision code is
mutated: the managers' rules.py, their decide() and its reason helpers, helm.ReleasePlan, labels, times and parsing
(TARGETS); mutants elsewhere in those files are skipped before the run.

Speed: each target file is a session of its own whose test command runs only the unit test files (of TESTS) that
execute that file's target lines, found by tracing each test file once before the run; and WORKERS sessions run at
once, each worker on its own staged copy (cosmic-ray's local distributor runs one mutant at a time and mutates the
files in place). Prints the score per file and every surviving mutant (its diff); the full report is in
.cache/mutation/report.txt. docs/testing.md has the score.
"""

import ast
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from cosmic_ray.work_db import WorkDB, use_db
from cosmic_ray.work_item import WorkerOutcome, WorkResult

REPO = Path(__file__).resolve().parents[1]
STAGE = REPO / '.cache' / 'mutation'
WORKERS = int(os.environ.get('MUTATION_WORKERS', '2'))
PACKAGE = Path('ansible_collections') / 'fleetops' / 'registration'
BIN = Path(sys.executable).parent

# file -> the functions/classes (qualified names) to mutate, or None for the whole file
TARGETS = {
    'plugins/module_utils/_rancher_fleet/rules.py': None,
    'plugins/module_utils/_kubefleet/rules.py': None,
    'plugins/module_utils/_rancher_fleet/judge.py': None,
    'plugins/module_utils/_kubefleet/views.py': ('heartbeat_problem',),
    'plugins/module_utils/_kubefleet/judge.py': None,
    'plugins/module_utils/findings.py': None,
    'plugins/module_utils/helm.py': ('ReleasePlan',),
    'plugins/module_utils/labels.py': None,
    'plugins/module_utils/times.py': None,
    'plugins/module_utils/parsing.py': None,
}
# '%' in that code only formats strings (a mutant to '|' or '**' is a TypeError, not a decision), and 'is' for '=='
# (or 'is not' for '!=') on the interned strings and small ints it compares is the same decision.
EXCLUDED_OPERATORS = ('core/ReplaceBinaryOperator_Mod_.*', 'core/ReplaceComparisonOperator_Eq_Is$', 'core/ReplaceComparisonOperator_NotEq_IsNot$')
# The unit tests that may exercise that code (pure, no subprocess); each file's session runs those that do.
TESTS = ('test_fleet_rules', 'test_fleet_plans', 'test_fleet_managers', 'test_kubefleet_logic', 'test_kubefleet_manager',
         'test_shared_logic', 'test_parsing', 'test_hub_logic', 'test_member_state', 'test_batch', 'test_member_batch',
         'test_role_filters', 'test_inventory_mapping', 'test_decision_boundaries', 'test_rule_tables', 'test_diagnosis_rules')


def line_ranges(source, names):
    """[(first, last line)] of the named top-level functions/classes and Class.method definitions in ``source``."""
    ranges = []
    for node in ast.parse(source).body:
        found = [node] if getattr(node, 'name', None) in names else []
        if isinstance(node, ast.ClassDef):
            found += [sub for sub in node.body if '%s.%s' % (node.name, getattr(sub, 'name', '')) in names]
        ranges += [(item.lineno, item.end_lineno) for item in found]
    missing = set(names) - {n.name for n in ast.walk(ast.parse(source)) if hasattr(n, 'name')} - {
        name for name in names if '.' in name and name.split('.')[1] in {n.name for n in ast.walk(ast.parse(source)) if hasattr(n, 'name')}}
    if missing:
        raise SystemExit('mutation targets not found: %s' % ', '.join(sorted(missing)))
    return ranges


def collections(worker):
    """The collections path of a worker's staged copy."""
    return STAGE / ('w%d' % worker) / 'collections'


def copy_of(worker, path):
    return collections(worker) / PACKAGE / path


def target_ranges(path):
    """The line ranges of a target file's decision code, or None for the whole file."""
    names = TARGETS[path]
    return None if names is None else line_ranges((REPO / path).read_text(), names)


def stage():
    """A copy of the collection's plugins per worker, to mutate."""
    shutil.rmtree(STAGE, ignore_errors=True)
    for worker in range(WORKERS):
        shutil.copytree(REPO / 'plugins', collections(worker) / PACKAGE / 'plugins', ignore=shutil.ignore_patterns('__pycache__'))


# Run inside pytest's process: records the lines executed in the staged copy (module bodies included, so a mutant
# in a constant counts as exercised by every test file that imports it).
TRACER = """
import json, sys, threading, pytest
root, out = sys.argv[1], sys.argv[2]
seen = {}
def lines(frame, event, arg):
    if event == 'line':
        seen.setdefault(frame.f_code.co_filename, set()).add(frame.f_lineno)
    return lines
def calls(frame, event, arg):
    return lines if frame.f_code.co_filename.startswith(root) else None
sys.settrace(calls)
threading.settrace(calls)
code = pytest.main(['-q', '-p', 'no:cacheprovider'] + sys.argv[3:])
sys.settrace(None)
json.dump(dict((name, sorted(found)) for name, found in seen.items()), open(out, 'w'))
sys.exit(int(code))
"""


def exercised(env):
    """{test file: {staged file: set of executed lines}}, each unit test file run once under a line tracer."""
    found = {}
    for name in TESTS:
        out = STAGE / ('trace-%s.json' % name)
        proc = subprocess.run([sys.executable, '-c', TRACER, str(collections(0)), str(out), str(REPO / 'tests' / 'unit' / (name + '.py'))],
                              cwd=str(REPO), env=env, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise SystemExit('the unit tests %s fail without mutants:\n%s' % (name, proc.stdout[-3000:]))
        found[name] = dict((path, set(lines)) for path, lines in json.loads(out.read_text()).items())
    return found


def tests_for(path, found):
    """The test files (in TESTS order) that execute a target file's decision code."""
    staged, ranges = str(copy_of(0, path)), target_ranges(path)
    return [name for name in TESTS
            if any(ranges is None or any(first <= line <= last for first, last in ranges) for line in found[name].get(staged, ()))]


def configure(path, worker, tests):
    """A cosmic-ray configuration for one target file in a worker's copy; returns its path."""
    config = STAGE / ('%s.toml' % path.replace('/', '.'))
    command = '%s -m pytest -x -q -p no:cacheprovider %s' % (sys.executable, ' '.join(str(REPO / 'tests' / 'unit' / (name + '.py'))
                                                                                      for name in tests))
    config.write_text('[cosmic-ray]\nmodule-path = ["%s"]\ntimeout = 60.0\nexcluded-modules = []\ntest-command = "%s"\n\n'
                      '[cosmic-ray.distributor]\nname = "local"\n\n[cosmic-ray.filters.operators-filter]\nexclude-operators = [%s]\n'
                      % (copy_of(worker, path), command, ', '.join('"%s"' % op for op in EXCLUDED_OPERATORS)))
    return config


def skip_outside_targets(session, path):
    """Mark the mutants outside the file's target functions and classes as skipped; returns how many remain."""
    ranges = target_ranges(path)
    with use_db(str(session), WorkDB.Mode.open) as db:
        outside = [item.job_id for item in db.pending_work_items
                   if ranges is not None and not all(any(first <= m.start_pos[0] <= last for first, last in ranges)
                                                     for m in item.mutations)]
        if outside:
            db.set_multiple_results(outside, WorkResult(output='outside the decision code', worker_outcome=WorkerOutcome.SKIPPED))
        return len(list(db.pending_work_items))


def summary(session, path):
    """(killed, survived, other, survivors as text) of one finished session."""
    killed, survived, other, lines = 0, 0, 0, []
    with use_db(str(session), WorkDB.Mode.open) as db:
        for item, result in db.completed_work_items:
            if result.worker_outcome == WorkerOutcome.SKIPPED:
                continue
            if result.worker_outcome != WorkerOutcome.NORMAL:
                other += 1
                lines.append('%s %s %s: %s' % (path, item.job_id, result.worker_outcome, (result.output or '')[-300:]))
                continue
            if result.test_outcome.name == 'KILLED':
                killed += 1
                continue
            survived += 1
            for mutation in item.mutations:
                lines.append('SURVIVED %s:%d %s #%d' % (path, mutation.start_pos[0], mutation.operator_name, mutation.occurrence))
            lines.append(result.diff or '')
    return killed, survived, other, '\n'.join(lines)


def run(*argv):
    """A cosmic-ray command; stops the check when it fails."""
    proc = subprocess.run([str(BIN / argv[0])] + [str(arg) for arg in argv[1:]], cwd=str(REPO), check=False, stdout=subprocess.DEVNULL)
    if proc.returncode != 0:
        raise SystemExit('%s failed (exit %d)' % (' '.join(map(str, argv)), proc.returncode))


def worker_env(worker):
    """The environment of a worker's test runs: the unit tests import its staged copy."""
    return dict(os.environ, FLEETOPS_MUTANT_COLLECTIONS=str(collections(worker)), ANSIBLE_COLLECTIONS_PATH=str(collections(worker)),
                PYTHONPATH=os.pathsep.join([str(REPO / 'tests'), str(REPO / 'lab')]))


def session_of(path):
    return STAGE / ('%s.sqlite' % path.replace('/', '.'))


def init(path, worker, tests):
    """A session of the file's mutants in a worker's copy, the left-out operators and code filtered; returns its size."""
    config = configure(path, worker, tests)
    session_of(path).unlink(missing_ok=True)
    run('cosmic-ray', 'init', config, session_of(path))
    run('cr-filter-operators', session_of(path), config)
    return skip_outside_targets(session_of(path), path)


def plan():
    """Each target file's tests and session, the files spread over the workers by mutant count; [(worker, [paths])]."""
    found = exercised(worker_env(0))
    tests = dict((path, tests_for(path, found)) for path in TARGETS)
    for path, names in tests.items():
        if not names:
            raise SystemExit('no unit test of TESTS executes the decision code of %s' % path)
    sizes = dict((path, init(path, 0, tests[path])) for path in TARGETS)
    loads = [[0, worker, []] for worker in range(WORKERS)]
    for path in sorted(TARGETS, key=lambda p: -sizes[p]):
        load = min(loads)
        load[0] += sizes[path]
        load[2].append(path)
        if load[1] != 0:
            init(path, load[1], tests[path])
        print('  %-50s %4d mutants, tests: %s' % (path, sizes[path], ' '.join(tests[path])), flush=True)
    print('mutation check: %d mutants of the decision code on %d workers' % (sum(sizes.values()), WORKERS), flush=True)
    return [(worker, paths) for _load, worker, paths in loads if paths]


def execute(assignment):
    """Run each worker's sessions (baseline, then every mutant) at once; fails when a worker fails."""
    procs = []
    for worker, paths in assignment:
        steps = ' && '.join('%s baseline %s && %s exec %s %s' % (BIN / 'cosmic-ray', STAGE / ('%s.toml' % p.replace('/', '.')),
                                                                 BIN / 'cosmic-ray', STAGE / ('%s.toml' % p.replace('/', '.')), session_of(p))
                            for p in paths)
        with open(STAGE / ('worker-%d.log' % worker), 'w', encoding='utf-8') as log:
            procs.append((worker, subprocess.Popen(['bash', '-c', steps], cwd=str(REPO), env=worker_env(worker), stdout=log,
                                                   stderr=subprocess.STDOUT)))
    failed = [worker for worker, proc in procs if proc.wait() != 0]
    if failed:
        raise SystemExit('mutation worker(s) %s failed; see %s/worker-<N>.log' % (failed, STAGE))


def main():
    """Stage, trace, initialise and filter, run every mutant on the workers, report."""
    stage()
    execute(plan())
    rows, texts, total = [], [], [0, 0, 0]
    for path in TARGETS:
        killed, survived, other, text = summary(session_of(path), path)
        rows.append('  %-50s %4d killed %4d survived %3d other  %5.1f%%' % (path, killed, survived, other,
                                                                            100.0 * killed / max(1, killed + survived)))
        texts.append(text)
        total = [total[0] + killed, total[1] + survived, total[2] + other]
    score = 100.0 * total[0] / max(1, total[0] + total[1])
    report = ('score %.1f%%: %d mutants killed, %d survived, %d incompetent or timed out\n%s\n\n%s\n'
              % (score, total[0], total[1], total[2], '\n'.join(rows), '\n'.join(t for t in texts if t)))
    (STAGE / 'report.txt').write_text(report)
    print(report)
    print('report: %s' % os.path.relpath(str(STAGE / 'report.txt'), str(REPO)))
    return 0


if __name__ == '__main__':
    sys.exit(main())
