"""Unit tests of the bench's comparison with its committed baseline (bench/baseline.py, bench/baseline.json)."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), 'bench'))

import baseline as bb  # noqa: E402  pylint: disable=wrong-import-position
import scale_figures as sf  # noqa: E402  pylint: disable=wrong-import-position

BASELINE_FILE = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), 'bench', 'baseline.json')


def rows_by_key(figures, baseline):
    return {row['key']: row for row in bb.compare(figures, {'figures': baseline})}


def test_lower_is_better_figures_that_grew_are_worse_and_higher_is_better_figures_that_fell_are_worse():
    rows = rows_by_key({'rerun_seconds_per_member': 0.8, 'rerun_vs_kubernetes_core': 3.0},
                       {'rerun_seconds_per_member': 0.4, 'rerun_vs_kubernetes_core': 6.0})
    assert rows['rerun_seconds_per_member']['moved'] == 'worse'
    assert round(rows['rerun_seconds_per_member']['change'], 2) == 1.0
    assert rows['rerun_vs_kubernetes_core']['moved'] == 'worse'
    assert bb.regressions(rows.values()) == ['rerun_seconds_per_member', 'rerun_vs_kubernetes_core']


def test_improvements_are_better_and_small_changes_are_noise():
    rows = rows_by_key({'hub_100_seconds': 10.0, 'parallel_join_ratio': 1.48, 'rerun_vs_kubernetes_core': 12.0},
                       {'hub_100_seconds': 20.0, 'parallel_join_ratio': 1.47, 'rerun_vs_kubernetes_core': 5.0})
    assert rows['hub_100_seconds']['moved'] == 'better'
    assert rows['parallel_join_ratio']['moved'] == 'same'
    assert rows['rerun_vs_kubernetes_core']['moved'] == 'better'
    assert bb.regressions(rows.values()) == []


def test_a_figure_missing_on_either_side_is_not_compared():
    rows = rows_by_key({'first_join_checkin_intervals': None, 'lab_12_members_gib': 6.0},
                       {'first_join_checkin_intervals': 2.0})
    assert rows['first_join_checkin_intervals']['moved'] == 'n/a'
    assert rows['lab_12_members_gib']['moved'] == 'n/a'


def test_a_flag_that_fails_its_target_is_worse():
    assert rows_by_key({'sliced_runs_ok': False}, {'sliced_runs_ok': True})['sliced_runs_ok']['moved'] == 'worse'
    assert rows_by_key({'sliced_runs_ok': True}, {'sliced_runs_ok': False})['sliced_runs_ok']['moved'] == 'better'


def test_the_table_names_the_baseline_run_and_each_change():
    baseline = {'run': {'date': '2026-11-25', 'commit': 'abc'}, 'figures': {'hub_100_seconds': 20.0}}
    text = bb.format_comparison(bb.compare({'hub_100_seconds': 25.0}, baseline), baseline)
    assert '2026-11-25, abc' in text.splitlines()[0]
    row = [line for line in text.splitlines() if line.startswith('hub_100_seconds')][0]
    assert row.split() == ['hub_100_seconds', '20.00', '25.00', '+25%', 'worse']


def test_a_saved_baseline_keeps_every_key_and_a_null_stays_null():
    saved = bb.new_baseline({'rerun_seconds_per_member': 0.3}, {'date': 'd', 'commit': 'c'})
    assert list(saved['figures']) == list(sf.KEYS)
    assert saved['figures']['hub_100_seconds'] is None


def test_the_committed_baseline_has_every_figure_key_and_says_where_it_came_from():
    committed = bb.load(BASELINE_FILE)
    assert set(committed['figures']) == set(sf.KEYS)
    assert committed['run']['date'] and committed['run']['commit']
    assert bb.load(BASELINE_FILE + '.missing') is None
