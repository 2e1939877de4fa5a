"""Mutation check of the pure decision code (``make test-mutations``, not part of make test).

cosmic-ray (PyPI) mutates a staged copy of the collection (``.cache/mutation``, so the checkout is never touched)
and runs the unit tests of that code against each mutant; a mutant the tests do not notice survives. Only the
decision code is mutated: the managers' rules.py, their decide() and its reason helpers, helm.ReleasePlan, labels,
times and parsing (TARGETS); mutants elsewhere in those files are skipped before the run. Prints the score and
every surviving mutant (its diff); the full report is in .cache/mutation/report.txt. docs/testing.md has the score.
"""

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

from cosmic_ray.work_db import WorkDB, use_db
from cosmic_ray.work_item import WorkerOutcome, WorkResult

REPO = Path(__file__).resolve().parents[1]
STAGE = REPO / '.cache' / 'mutation'
COLLECTIONS = STAGE / 'collections'
COPY = COLLECTIONS / 'ansible_collections' / 'fleetops' / 'registration'
BIN = Path(sys.executable).parent

# file -> the functions/classes (qualified names) to mutate, or None for the whole file
TARGETS = {
    'plugins/module_utils/_rancher_fleet/rules.py': None,
    'plugins/module_utils/_kubefleet/rules.py': None,
    'plugins/module_utils/_rancher_fleet/manager.py': ('_release_reasons', '_agent_reasons', '_hub_reasons', '_wanted_reasons',
                                                       'RancherFleet.decide'),
    'plugins/module_utils/_kubefleet/manager.py': ('values_cover', 'heartbeat_problem', '_join_reasons', '_reregister_reasons',
                                                   '_install_reasons', '_upgrade_reasons', '_relabel_reasons', 'KubeFleet.decide'),
    'plugins/module_utils/helm.py': ('ReleasePlan',),
    'plugins/module_utils/labels.py': None,
    'plugins/module_utils/times.py': None,
    'plugins/module_utils/parsing.py': None,
}
# '%' in that code only formats strings (a mutant to '|' or '**' is a TypeError, not a decision), and 'is' for '=='
# (or 'is not' for '!=') on the interned strings and small ints it compares is the same decision.
EXCLUDED_OPERATORS = ('core/ReplaceBinaryOperator_Mod_.*', 'core/ReplaceComparisonOperator_Eq_Is$', 'core/ReplaceComparisonOperator_NotEq_IsNot$')
# The unit tests of that code: pure, no subprocess, about 2 s for all of them.
TESTS = ('test_fleet_rules', 'test_fleet_plans', 'test_fleet_managers', 'test_kubefleet_logic', 'test_kubefleet_manager',
         'test_shared_logic', 'test_parsing', 'test_hub_logic', 'test_member_state', 'test_batch', 'test_member_batch',
         'test_role_filters', 'test_inventory_mapping')


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


def stage():
    """A copy of the collection's plugins to mutate, and the cosmic-ray configuration; returns the config's path."""
    shutil.rmtree(STAGE, ignore_errors=True)
    shutil.copytree(REPO / 'plugins', COPY / 'plugins', ignore=shutil.ignore_patterns('__pycache__'))
    tests = ' '.join('tests/unit/%s.py' % name for name in TESTS)
    config = STAGE / 'cosmic-ray.toml'
    config.write_text('[cosmic-ray]\nmodule-path = [%s]\ntimeout = 60.0\nexcluded-modules = []\n'
                      'test-command = "%s -m pytest -x -q -p no:cacheprovider %s"\n\n[cosmic-ray.distributor]\nname = "local"\n\n'
                      '[cosmic-ray.filters.operators-filter]\nexclude-operators = [%s]\n'
                      % (', '.join('"%s"' % (COPY / path) for path in TARGETS), sys.executable, tests,
                         ', '.join('"%s"' % op for op in EXCLUDED_OPERATORS)))
    return config


def skip_outside_targets(session):
    """Mark the mutants outside TARGETS' functions and classes as skipped; returns how many remain."""
    ranges = {str(COPY / path): None if names is None else line_ranges((REPO / path).read_text(), names)
              for path, names in TARGETS.items()}
    with use_db(str(session), WorkDB.Mode.open) as db:
        outside = [item.job_id for item in db.pending_work_items
                   if any(ranges[str(m.module_path)] is not None
                          and not any(first <= m.start_pos[0] <= last for first, last in ranges[str(m.module_path)])
                          for m in item.mutations)]
        if outside:
            db.set_multiple_results(outside, WorkResult(output='outside the decision code', worker_outcome=WorkerOutcome.SKIPPED))
        return len(list(db.pending_work_items))


def summary(session):
    """(killed, survived, other, survivors as text) of a finished session."""
    killed, survived, other, lines = 0, 0, 0, []
    with use_db(str(session), WorkDB.Mode.open) as db:
        for item, result in db.completed_work_items:
            if result.worker_outcome == WorkerOutcome.SKIPPED:
                continue
            if result.worker_outcome != WorkerOutcome.NORMAL:
                other += 1
                lines.append('%s %s: %s' % (item.job_id, result.worker_outcome, (result.output or '')[-300:]))
                continue
            if result.test_outcome.name == 'KILLED':
                killed += 1
                continue
            survived += 1
            for mutation in item.mutations:
                lines.append('SURVIVED %s:%d %s #%d' % (os.path.relpath(str(mutation.module_path), str(COPY)), mutation.start_pos[0],
                                                        mutation.operator_name, mutation.occurrence))
            lines.append(result.diff or '')
    return killed, survived, other, '\n'.join(lines)


def run(*argv):
    """A cosmic-ray command; stops the check when it fails."""
    proc = subprocess.run([str(BIN / argv[0])] + [str(arg) for arg in argv[1:]], cwd=str(REPO), check=False)
    if proc.returncode != 0:
        raise SystemExit('%s failed (exit %d)' % (' '.join(map(str, argv)), proc.returncode))


def main():
    """Stage, initialise, filter, check the baseline, run every mutant, report."""
    os.environ.update({'FLEETOPS_MUTANT_COLLECTIONS': str(COLLECTIONS), 'ANSIBLE_COLLECTIONS_PATH': str(COLLECTIONS),
                       'PYTHONPATH': os.pathsep.join([str(REPO / 'tests'), str(REPO / 'lab')])})
    config = stage()
    session = STAGE / 'session.sqlite'
    run('cosmic-ray', 'init', config, session)
    run('cr-filter-operators', session, config)
    print('mutation check: %d mutants of the decision code (the rest of those files skipped)' % skip_outside_targets(session), flush=True)
    run('cosmic-ray', 'baseline', config)
    run('cosmic-ray', 'exec', config, session)
    killed, survived, other, text = summary(session)
    score = 100.0 * killed / max(1, killed + survived)
    report = 'score %.1f%%: %d mutants killed, %d survived, %d incompetent or timed out\n\n%s\n' % (score, killed, survived, other, text)
    (STAGE / 'report.txt').write_text(report)
    print(report)
    print('report: %s' % os.path.relpath(str(STAGE / 'report.txt'), str(REPO)))
    return 0


if __name__ == '__main__':
    sys.exit(main())
