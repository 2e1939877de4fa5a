"""The bench against its committed baseline (``bench/baseline.json``): what moved since the figures were last accepted.

The baseline is updated on purpose (``bench/scale.py --save-baseline`` after a run whose figures a change means to
keep), never by an ordinary run, so a regression shows in the run that causes it. Pure: tested in
``tests/unit/test_bench_baseline.py``.
"""

import json

from scale_figures import KEYS, TARGETS, format_value

# A change smaller than this share of the baseline is noise on a 2-CPU machine shared with a 12-member lab.
NOISE = 0.05


def load(path):
    """The baseline file: ``{'run': {...}, 'figures': {key: value}}``; None when there is none yet."""
    try:
        with open(path, encoding='utf-8') as handle:
            return json.load(handle)
    except FileNotFoundError:
        return None


def movement(key, before, now):
    """``(change, word)``: the relative change and whether it is better, worse or the same, by the key's target."""
    if before is None or now is None:
        return None, 'n/a'
    if isinstance(before, bool) or isinstance(now, bool):
        return None, 'same' if before == now else ('better' if now == TARGETS[key][1] else 'worse')
    if before == 0:
        return None, 'same' if now == 0 else 'n/a'
    change = (now - before) / abs(before)
    if abs(change) < NOISE:
        return change, 'same'
    lower_is_better = TARGETS[key][0] == '<='
    return change, 'better' if (change < 0) == lower_is_better else 'worse'


def compare(figures, baseline):
    """One row per figure: ``{'key', 'baseline', 'now', 'change', 'moved'}``."""
    before = (baseline or {}).get('figures', {})
    rows = []
    for key in KEYS:
        change, moved = movement(key, before.get(key), figures.get(key))
        rows.append({'key': key, 'baseline': before.get(key), 'now': figures.get(key), 'change': change, 'moved': moved})
    return rows


def format_comparison(rows, baseline):
    """The comparison as a table, headed by the run the baseline came from."""
    run = (baseline or {}).get('run') or {}
    head = '   against bench/baseline.json (%s, %s)' % (run.get('date', 'no date'), run.get('commit', 'no commit'))
    table = [('figure', 'baseline', 'now', 'change', 'moved')]
    for row in rows:
        change = 'n/a' if row['change'] is None else '%+.0f%%' % (100 * row['change'])
        table.append((row['key'], format_value(row['baseline']), format_value(row['now']), change, row['moved']))
    widths = [max(len(line[i]) for line in table) for i in range(5)]
    lines = ['  '.join(cell.ljust(widths[i]) for i, cell in enumerate(line)).rstrip() for line in table]
    lines.insert(1, '  '.join('-' * w for w in widths))
    return '\n'.join([head] + lines)


def regressions(rows):
    """The figures that moved the wrong way."""
    return [row['key'] for row in rows if row['moved'] == 'worse']


def new_baseline(figures, run):
    """The baseline a run's figures make: only measured figures (a null stays null), and where they came from."""
    return {'run': run, 'figures': {key: figures.get(key) for key in KEYS}}
