"""The hub-side stages' pure parts (bench/scale_hub_figures.py): when the runs of a size are a measurement, and the
cost per cluster at each size."""

import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), 'bench'))

import scale_hub_figures as sf  # noqa: E402  pylint: disable=wrong-import-position


def hub_result(count, seconds=(2.0, 1.0, 0.5), rcs=(0, 0, 0), listed=None):
    calls = {'processes': 3, 'requests': 2 * count + 10}
    runs = [{'label': 'hub%d-%s' % (count, name), 'rc': rc, 'seconds': s, 'calls': calls}
            for name, s, rc in zip(sf.HUB_PASSES, seconds, rcs)]
    return {'count': count, 'runs': runs, 'listed': (count, count) if listed is None else listed}


def test_hub_passes_sum_the_three_runs_and_keep_the_relabel_apart():
    assert sf.hub_passes(hub_result(100)) == {'seconds': 3.5, 'relabel_seconds': 1.0, 'refused': None}


@pytest.mark.parametrize('result,reason', [
    (hub_result(100, rcs=(0, 2, 0)), 'hub100-relabel exited 2'),
    (hub_result(100, listed=(100, 99)), '100 Clusters and 99 MemberClusters relabelled of 100'),
    (dict(hub_result(1000), runs=hub_result(1000)['runs'][:2]), '2 of the 3 runs (predefine, relabel, status) ran'),
])
def test_hub_passes_refuse_a_failed_run_a_missing_pass_or_a_relabel_the_hub_does_not_show(result, reason):
    assert sf.hub_passes(result) == {'seconds': None, 'relabel_seconds': None, 'refused': reason}


def test_hub_costs_show_the_cost_per_cluster_at_each_size_and_no_time_of_a_refused_size():
    text = sf.format_hub_costs([hub_result(100, seconds=(2.0, 1.0, 0.5)), hub_result(1000, seconds=(20.0, 9.0, 4.0), rcs=(0, 0, 1))])
    rows = [line.split() for line in text.splitlines()]
    assert rows[0] == ['clusters', 'pass', 'seconds', 'ms/clu', 'processes', 'requests', 'req/clu']
    assert rows[1] == ['100', 'predefine', '2.0', '20.0', '3', '210', '2.10']
    assert rows[4] == ['1000', 'predefine', 'n/a', 'n/a', '3', '2010', '2.01']
    assert rows[7] == ['100', 'all', '3.5', '35.0']
    assert rows[8][:4] == ['1000', 'all', 'n/a', 'n/a'] and text.endswith('refused: hub1000-status exited 1')


def test_hub_call_counts_per_module_and_method():
    processes = [{'module': 'fleet_cluster', 'requests': [['GET', 'h:1', '/a'], ['PATCH', 'h:1', '/a/x']]},
                 {'module': 'hub_prepare', 'requests': [['GET', 'h:1', '/b']]}]
    assert sf.hub_call_counts(processes) == {
        'processes': 2, 'requests': 3, 'by_method': {'GET': 2, 'PATCH': 1},
        'by_module': {'fleet_cluster': {'processes': 1, 'requests': 2}, 'hub_prepare': {'processes': 1, 'requests': 1}}}
