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


def metric(verb, resource, subresource, code, count, name='apiserver_request_total'):
    labels = 'code="%s",component="apiserver",dry_run="",group="fleet.cattle.io",resource="%s",scope="resource",' % (code, resource)
    return '%s{%ssubresource="%s",verb="%s",version="v1alpha1"} %s' % (name, labels, subresource, verb, count)


METRICS = '\n'.join([
    '# HELP apiserver_request_total [STABLE] Counter of apiserver requests',
    metric('PUT', 'clusters', 'status', 200, '7'),
    metric('PUT', 'clusters', 'status', 409, '3'),
    metric('POST', 'clusters', '', 201, '1e+02'),
    metric('WATCH', 'pods', '', 200, '40'),
    'apiserver_request_duration_seconds_sum{component="apiserver",resource="clusters",verb="POST"} 3.5',
])


def test_served_requests_add_up_every_code_and_leave_watches_and_other_metrics_out():
    assert sf.served_requests(METRICS) == {'PUT clusters/status': 10, 'POST clusters': 100}


def test_served_between_counts_only_what_grew_most_first():
    before = {'PUT clusters/status': 10, 'POST clusters': 100, 'GET leases': 5}
    after = {'PUT clusters/status': 1710, 'POST clusters': 200, 'GET leases': 5, 'POST namespaces': 100}
    expected = {'requests': 1900, 'top': [('PUT clusters/status', 1700), ('POST clusters', 100)]}
    assert sf.served_between(before, after, top=2) == expected


def test_served_rows_split_the_hubs_requests_into_ours_and_its_controllers_reaction():
    runs = [{'label': 'hub100-predefine', 'seconds': 6.0, 'hub_cpu_seconds': 10.5, 'calls': {'requests': 210},
             'hub_cpu_by_process': {'kube-apiserver': 7.0, 'fleet-controller': 2.5, 'etcd': 1.0},
             'served': {'requests': 900, 'top': [('PUT clusters/status', 300), ('POST events', 200)]},
             'served_after': {'requests': 2500, 'top': [('POST events', 400), ('PUT clusters/status', 100)]}},
            {'label': 'hub100-status', 'seconds': 1.0, 'calls': {'requests': 5}, 'served': {'requests': 3, 'top': []}},
            {'label': 'hub100-relabel', 'seconds': 4.0, 'calls': {}, 'served': None}]
    rows = sf.served_rows(runs)
    counts = [(r['ours'], r['hub_own'], r['served'], r['after']) for r in rows]
    assert counts == [(210, 690, 900, 2500), (5, 0, 3, None), (None, None, None, None)]
    assert rows[0]['top'] == [('POST events', 600), ('PUT clusters/status', 400)]
    text = sf.format_served(runs)
    assert text.splitlines()[1].split()[:7] == ['hub100-predefine', '6.0', '10.5', '210', '690', '900', '2500']
    assert text.splitlines()[2].split()[:3] == ['hub100-status', '1.0', 'n/a']
    assert 'POST events 600' in text
    assert text.splitlines()[-1].split(':', 1)[1].strip() == 'kube-apiserver 7.0, fleet-controller 2.5, etcd 1.0'


def test_cpu_used_is_per_process_name_most_first_and_leaves_idle_and_vanished_processes_out():
    before = {10: 5.0, 11: 2.0, 12: 1.0, 13: 4.0}
    after = {10: 9.25, 11: 2.01, 12: 3.0}
    names = {10: 'kube-apiserver', 11: 'etcd', 12: 'fleet-controller', 13: 'gone'}
    assert sf.cpu_used(before, after, names) == {'kube-apiserver': 4.2, 'fleet-controller': 2.0}
    assert list(sf.cpu_used(before, after, names)) == ['kube-apiserver', 'fleet-controller']


def test_hub_share_spreads_the_cpu_over_the_machines_cpus_against_the_passes_time():
    runs = [{'seconds': 94.0, 'hub_cpu_seconds': 157.2, 'cpu_seconds': 30.0}, {'seconds': 71.6, 'hub_cpu_seconds': 114.1, 'cpu_seconds': 20.9},
            {'seconds': 11.4, 'hub_cpu_seconds': 0.9, 'cpu_seconds': 11.4}]
    share = sf.hub_share(runs, 2)
    assert share == {'seconds': 177.0, 'hub_cpu': 272.2, 'ours_cpu': 62.3, 'hub_seconds': 136.1, 'floor_seconds': 167.2, 'share': 0.77}
    line = sf.format_hub_share(share, 2)
    assert "177.0 s the hub's processes used 272.2 CPU s (all of the 2 CPUs for 136.1 s, 77 % of the time)" in line
    assert line.endswith("the runs' own 62.3 CPU s: this work needs 167.2 s on 2 CPUs")


@pytest.mark.parametrize('runs, cpus', [([], 2), ([{'seconds': 5.0, 'hub_cpu_seconds': 4.0, 'cpu_seconds': 1.0}, {'seconds': 1.0, 'cpu_seconds': 1.0}], 2),
                                        ([{'seconds': 5.0, 'hub_cpu_seconds': 4.0}], 2),
                                        ([{'seconds': 5.0, 'hub_cpu_seconds': 4.0, 'cpu_seconds': 1.0}], 0)])
def test_hub_share_is_none_without_every_passs_cpu_readings(runs, cpus):
    assert sf.hub_share(runs, cpus) is None
    assert 'not read' in sf.format_hub_share(None, cpus)
