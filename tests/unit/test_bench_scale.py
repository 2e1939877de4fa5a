"""Unit tests of the benchmark's pure parts (bench/scale_figures.py): figures, table, JSON keys, timings."""

import json
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), 'bench'))

import scale_figures as sf  # noqa: E402  pylint: disable=wrong-import-position

ISSUE_KEYS = ['rerun_seconds_per_member', 'rerun_vs_kubernetes_core', 'rerun_2_vs_kubernetes_core', 'first_join_checkin_intervals', 'parallel_join_ratio',
              'hub_100_seconds', 'hub_relabel_100_seconds', 'hub_1000_seconds', 'lab_12_members_gib', 'rotation_gap_intervals',
              'rerun_50ms_vs_loopback', 'sliced_runs_ok']


def rec(host, action, start, end, status='ok', task=None, **extra):
    return dict({'host': host, 'action': action, 'start': start, 'end': end, 'status': status, 'task': task or action}, **extra)


def test_keys_are_exactly_the_issue_keys_and_each_has_a_target():
    assert list(sf.KEYS) == ISSUE_KEYS
    assert set(sf.TARGETS) == set(ISSUE_KEYS)


def test_compute_figures_from_measurements():
    got = sf.compute_figures({'rerun_seconds': 30.0, 'members': 12, 'kcore_seconds': 60.0, 'checkin_window_seconds': 97.0,
                              'checkin_interval_seconds': 15.0, 'join_1_seconds': 100.0, 'join_batch_seconds': 180.0,
                              'hub_100_seconds': 123.456, 'hub_relabel_100_seconds': 3.04, 'hub_1000_seconds': 55.55,
                              'lab_rss_bytes': 6 * 2 ** 30, 'sliced_ok': True,
                              'rotation_heartbeat_gap_seconds': 30.0, 'heartbeat_period_seconds': 60,
                              'rotation_checkin_gap_seconds': 21.0, 'rerun_50ms_seconds': 9.0, 'rerun_loopback_seconds': 6.0,
                              'rerun_2_seconds': 1.6, 'kcore_2_seconds': 7.0})
    assert list(got) == ISSUE_KEYS
    assert got == {'rerun_seconds_per_member': 2.5, 'rerun_vs_kubernetes_core': 2.0, 'rerun_2_vs_kubernetes_core': 4.38,
                   'first_join_checkin_intervals': 6.47,
                   'parallel_join_ratio': 1.8, 'hub_100_seconds': 123.5, 'hub_relabel_100_seconds': 3.0, 'hub_1000_seconds': 55.5,
                   'lab_12_members_gib': 6.0, 'rotation_gap_intervals': 1.4,
                   'rerun_50ms_vs_loopback': 1.5, 'sliced_runs_ok': True}
    json.dumps(got)  # serialisable as scale.json


def test_the_longest_gap_in_contacts_and_the_worse_of_two_ratios():
    assert sf.longest_gap([100, 130, None, 100, 115, 190]) == 60
    assert sf.longest_gap([100, None]) is None
    assert sf.worst_ratio((30, 60), (21, 15)) == 1.4
    assert sf.worst_ratio((30, 60), (None, 15)) is None


def test_compute_figures_leaves_unmeasured_ones_empty():
    got = sf.compute_figures({'rerun_seconds': 30.0})  # no member count, so no per-member figure
    assert list(got) == ISSUE_KEYS
    assert all(value is None for value in got.values())


@pytest.mark.parametrize('key,value,expected', [
    ('rerun_seconds_per_member', 0.25, 'PASS'), ('rerun_seconds_per_member', 0.26, 'OVER'),
    ('rerun_vs_kubernetes_core', 10.0, 'PASS'), ('rerun_vs_kubernetes_core', 9.9, 'OVER'),
    ('rerun_2_vs_kubernetes_core', 4.0, 'PASS'), ('rerun_2_vs_kubernetes_core', 3.9, 'OVER'),
    ('sliced_runs_ok', True, 'PASS'), ('sliced_runs_ok', False, 'OVER'), ('hub_100_seconds', None, 'n/a'),
])
def test_verdict(key, value, expected):
    assert sf.verdict(key, value) == expected


def test_verdict_of_a_refused_figure_is_fail_and_of_an_unmeasured_one_na():
    assert sf.verdict('rerun_seconds_per_member', None, 'rerun-12 exited 2') == 'FAIL'
    assert sf.verdict('rerun_seconds_per_member', None, sf.NOT_MEASURED) == 'n/a'


def test_table_has_a_row_per_key_with_target_verdict_and_where_it_came_from():
    report = sf.figure_report({'rerun_seconds': 30.0, 'members': 12, 'sliced_ok': False, 'join_1_seconds': 10.0},
                              refused={'join_batch_seconds': 'batch-join-8 exited 2'},
                              sources={'rerun_seconds': ['rerun-12'], 'members': [], 'sliced_ok': ['slice-1', 'slice-2']})
    lines = sf.format_table(report).splitlines()
    assert lines[0].split() == ['figure', 'value', 'target', 'verdict', 'from']
    rows = {line.split()[0]: line for line in lines[2:]}
    assert list(rows) == ISSUE_KEYS
    assert rows['rerun_seconds_per_member'].split()[1:] == ['2.50', '<=', '0.25', 'OVER', 'rerun-12']
    assert rows['sliced_runs_ok'].split()[1:] == ['NO', 'yes', 'OVER', 'slice-1,', 'slice-2']
    assert rows['parallel_join_ratio'].split()[1:5] == ['n/a', '<=', '1.3', 'FAIL']
    assert rows['parallel_join_ratio'].endswith('batch-join-8 exited 2')
    assert rows['hub_100_seconds'].split()[1:] == ['n/a', '<=', '12', 'n/a'] + sf.NOT_MEASURED.split()


def test_figure_report_has_only_this_runs_figures_each_with_its_runs_or_reason():
    raw = {'rerun_seconds': 6.0, 'members': 12, 'kcore_seconds': 40.0, 'checkin_interval_seconds': 15.0,
           'checkin_window_seconds': None}
    report = sf.figure_report(raw, refused={'checkin_window_seconds': 'first-join exited 2'},
                              sources={'rerun_seconds': ['rerun-12.2'], 'kcore_seconds': ['kcore-rerun'], 'members': [],
                                       'checkin_interval_seconds': ['hub ConfigMap']})
    assert report['figures'] == {'rerun_seconds_per_member': 0.5, 'rerun_vs_kubernetes_core': 6.67, 'rerun_2_vs_kubernetes_core': None,
                                 'first_join_checkin_intervals': None,
                                 'parallel_join_ratio': None, 'hub_100_seconds': None, 'hub_relabel_100_seconds': None,
                                 'hub_1000_seconds': None, 'lab_12_members_gib': None,
                                 'rotation_gap_intervals': None, 'rerun_50ms_vs_loopback': None, 'sliced_runs_ok': None}
    assert report['sources'] == {'rerun_seconds_per_member': ['rerun-12.2'], 'rerun_vs_kubernetes_core': ['kcore-rerun', 'rerun-12.2']}
    assert report['reasons'] == {'first_join_checkin_intervals': 'first-join exited 2', 'parallel_join_ratio': sf.NOT_MEASURED,
                                 'rerun_2_vs_kubernetes_core': sf.NOT_MEASURED,
                                 'hub_100_seconds': sf.NOT_MEASURED, 'hub_relabel_100_seconds': sf.NOT_MEASURED,
                                 'hub_1000_seconds': sf.NOT_MEASURED, 'lab_12_members_gib': sf.NOT_MEASURED,
                                 'rotation_gap_intervals': sf.NOT_MEASURED, 'rerun_50ms_vs_loopback': sf.NOT_MEASURED,
                                 'sliced_runs_ok': sf.NOT_MEASURED}


def test_a_refused_input_nulls_every_figure_it_enters_even_with_a_value_left_in_raw():
    raw = {'rerun_seconds': 3.0, 'members': 12, 'kcore_seconds': 40.0}  # a fast failed re-run would flatter both figures
    report = sf.figure_report(raw, refused={'rerun_seconds': 'rerun-12 exited 2'})
    assert report['figures']['rerun_seconds_per_member'] is None and report['figures']['rerun_vs_kubernetes_core'] is None
    assert report['reasons']['rerun_seconds_per_member'] == report['reasons']['rerun_vs_kubernetes_core'] == 'rerun-12 exited 2'


def test_scale_json_names_the_bench_run_the_runs_of_each_figure_and_why_others_are_null():
    report = sf.figure_report({'hub_100_seconds': 30.0}, sources={'hub_100_seconds': ['hub100-predefine', 'hub100-status']})
    data = sf.scale_json(report, {'started': '2026-01-01T00:00:00Z', 'stages': ['hub100']})
    assert list(data)[:len(ISSUE_KEYS)] == ISSUE_KEYS and data['hub_100_seconds'] == 30.0
    assert data['bench_run'] == {'started': '2026-01-01T00:00:00Z', 'stages': ['hub100']}
    assert data['from_runs']['hub_100_seconds'] == ['hub100-predefine', 'hub100-status']
    assert data['from_runs']['rerun_seconds_per_member'] is None
    assert set(data['null_because']) == set(ISSUE_KEYS) - {'hub_100_seconds'}
    json.dumps(data)


@pytest.mark.parametrize('rc,changed,expect_no_change,reason', [
    (0, 0, True, None), (0, 3, False, None), (2, 0, False, 'rerun-12 exited 2'),
    (0, 3, True, 'rerun-12 changed 3 task(s) where none should change'), (4, 1, True, 'rerun-12 exited 4'),
])
def test_refusal_of_a_failed_or_changing_run(rc, changed, expect_no_change, reason):
    assert sf.refusal('rerun-12', rc, changed, expect_no_change) == reason


def test_fastest_never_picks_a_failed_or_changing_attempt():
    good = [{'label': 'r.1', 'rc': 0, 'seconds': 6.0, 'changed': 0}, {'label': 'r.2', 'rc': 0, 'seconds': 5.0, 'changed': 0}]
    assert sf.fastest(good, expect_no_change=True) == (5.0, 'r.2', None)
    failed_fast = good + [{'label': 'r.3', 'rc': 2, 'seconds': 1.0, 'changed': 0}]
    assert sf.fastest(failed_fast, expect_no_change=True) == (None, None, 'r.3 exited 2')
    changing = [dict(good[0], changed=1), good[1]]
    assert sf.fastest(changing, expect_no_change=True) == (None, None, 'r.1 changed 1 task(s) where none should change')
    assert sf.fastest(changing) == (5.0, 'r.2', None)
    assert sf.fastest([]) == (None, None, 'no run')


def test_changed_tasks_counts_changed_records_only():
    records = [rec('m1', 'a', 0, 1, status='changed'), rec('m2', 'a', 0, 1, status='changed'), rec('m1', 'b', 0, 1),
               rec('m1', 'c', 0, 1, status='failed'), rec('m1', 'd', 0, 1, status='skipped')]
    assert sf.changed_tasks(records) == 2


@pytest.mark.parametrize('text,expected', [
    ('15s', (15.0, None)), ('1m', (60.0, None)), (None, (None, 'the hub reports no agentCheckinInterval')),
    ('', (None, 'the hub reports no agentCheckinInterval')), ('soon', (None, "the hub's agentCheckinInterval 'soon' is not a duration")),
])
def test_checkin_interval_comes_from_the_hub_or_is_none(text, expected):
    assert sf.checkin_interval(text) == expected


def lab_report(members=12, status='running', dead=None, state='running'):
    clusters = {name: {'processes': [{'name': 'kube-apiserver', 'alive': name != dead, 'state': 'stopped' if name == dead else state,
                                      'rss': 0 if name == dead else 100}]}
                for name in ['hub'] + ['member%d' % i for i in range(1, members + 1)]}
    return {'status': status, 'members': members, 'shared': [{'name': 'etcd', 'alive': True, 'state': 'running', 'rss': 1000}],
            'clusters': clusters}


def all_joined(members=12):
    return {'member%d' % i: True for i in range(1, members + 1)}


def test_lab_memory_sums_the_processes_of_a_running_joined_12_member_lab():
    assert sf.lab_memory_bytes(lab_report(), all_joined()) == (1000 + 13 * 100, None)


@pytest.mark.parametrize('report,joined,reason', [
    (lab_report(status='absent'), all_joined(), 'the lab is absent, not running'),
    (lab_report(members=4), all_joined(4), 'the lab has 4 members, the figure is of 12'),
    (lab_report(), dict(all_joined(), member3=False), 'not every member joined (member3)'),
    (lab_report(), all_joined(11), 'not every member joined (11 of 12 checked)'),
    (lab_report(dead='member7'), all_joined(), 'lab processes not running: member7/kube-apiserver'),
    (lab_report(state='frozen'), all_joined(), 'lab processes not running: ' + ', '.join(
        'hub/kube-apiserver' if i == 0 else 'member%d/kube-apiserver' % i for i in [0, 1, 10, 11, 12, 2, 3, 4, 5, 6, 7, 8, 9])),
])
def test_lab_memory_refuses_a_lab_that_is_not_running_joined_and_of_the_size_the_key_names(report, joined, reason):
    assert sf.lab_memory_bytes(report, joined) == (None, reason)


@pytest.mark.parametrize('text,seconds', [('15s', 15.0), ('1m30s', 90.0), ('500ms', 0.5), ('1h', 3600.0), ('20', 20.0)])
def test_parse_duration(text, seconds):
    assert sf.parse_duration(text) == seconds


@pytest.mark.parametrize('text', ['', 'abc', '15x', '15s junk'])
def test_parse_duration_rejects(text):
    with pytest.raises(ValueError):
        sf.parse_duration(text)


def test_plan_members_for_12_and_fewer():
    names = ['member%d' % i for i in range(1, 13)]
    assert sf.plan_members(names) == {'first': ['member1'], 'batch': names[1:9], 'slices': names[9:]}
    assert sf.plan_members(names[:4]) == {'first': ['member1'], 'batch': [], 'slices': names[1:4]}
    assert sf.plan_members(names[:2]) == {'first': ['member1'], 'batch': ['member2'], 'slices': []}


def test_checkin_window_runs_from_agent_install_to_the_wait_that_follows():
    records = [
        rec('m1', sf.FLEET_AGENT, 10.0, 11.0, args={'state': 'absent'}),   # the stale-agent removal does not count
        rec('m1', sf.FLEET_AGENT, 12.0, 90.0, status='changed', args={}),
        rec('m1', 'fleetops.registration.kubefleet_member_agent', 91.0, 95.0),
        rec('m1', sf.FLEET_CLUSTER_INFO, 90.5, 99.0),
        rec('m2', sf.FLEET_AGENT, 12.0, 20.0, status='skipped'),
        rec('m3', sf.FLEET_AGENT, 5.0, 25.0),
    ]
    assert sf.checkin_windows(records) == {'m1': 87.0, 'm3': 20.0}


def test_checkin_window_leaves_out_a_failed_install_or_a_failed_wait():
    records = [
        rec('m1', sf.FLEET_AGENT, 12.0, 13.0, status='failed', args={}),
        rec('m1', sf.FLEET_CLUSTER_INFO, 14.0, 15.0),
        rec('m2', sf.FLEET_AGENT, 12.0, 30.0, status='changed', args={}),
        rec('m2', sf.FLEET_CLUSTER_INFO, 31.0, 90.0, status='failed'),
        rec('m3', sf.FLEET_AGENT, 5.0, 25.0, status='failed'),
        rec('m4', sf.FLEET_AGENT, 5.0, 25.0, status='ok'),
        rec('m4', sf.FLEET_CLUSTER_INFO, 26.0, 35.0, status='skipped'),
    ]
    assert sf.checkin_windows(records) == {'m4': 20.0}


def test_module_processes_counts_items_attempts_and_no_controller_actions():
    records = [
        rec('m1', 'ansible.builtin.set_fact', 0, 1),
        rec('m1', 'ansible.builtin.validate_argument_spec', 0, 1),
        rec('m1', 'fleetops.registration.hub_move', 0, 1, items=2),
        rec('m1', 'fleetops.registration.hub_move', 0, 1, attempts=3),
        rec('m1', 'fleetops.registration.hub_move', 0, 1, status='skipped'),
        rec('m2', 'kubernetes.core.k8s_info', 0, 1),
        # On the bench lab's local connection these run in the controller (plugin_utils/controller_run.py).
        rec('m1', sf.TOKEN, 0, 1, items=2),
        rec('m1', sf.FLEET_CLUSTER_INFO, 0, 1, attempts=3),
        rec('m1', 'fleetops.registration.kubefleet_member_agent', 0, 1),
        rec('m1', sf.FLEET_AGENT, 0, 1, items=2),
    ]
    assert sf.module_processes(records) == {'m1': 5, 'm2': 1}  # hub_move: 2 items, 3 attempts


def test_task_breakdown_in_run_order_for_one_host():
    records = [rec('m1', 'a', 0, 2, task='A'), rec('m2', 'a', 0, 9, task='A'), rec('m1', 'b', 3, 4, task='B'),
               rec('m1', 'c', 5, 6, task='C', status='skipped')]
    assert sf.task_breakdown(records, 'm1') == [('A', 2), ('B', 1)]
    assert sf.task_breakdown(records) == [('A', 9), ('B', 1)]


def test_sliced_ok_finds_a_token_revoked_under_another_slice():
    def token_run(created, revoked, rc=0):
        return {'rc': rc, 'records': [rec('h', sf.TOKEN, 0, 1, status='changed', item_args=[{'name': created}]),
                                      rec('h', sf.TOKEN, 2, 3, status='changed', item_args=[{'name': revoked, 'state': 'absent'}])]}
    ok, reasons = sf.sliced_ok([token_run('t1', 't1'), token_run('t2', 't2')], [], {'m1': True, 'm2': True})
    assert ok and reasons == []
    ok, reasons = sf.sliced_ok([token_run('t1', 't2'), token_run('t2', 't2', rc=2)], ['fleetops-join-x'], {'m1': True, 'm2': False})
    assert not ok
    assert reasons == ['slice 2 exited 2', 'slice 1 revoked token(s) of slice 2: t2',
                       'registration tokens left on the hub: fleetops-join-x', 'm2 did not end checked in and joined']


def test_scaling_table_shows_cost_per_added_member():
    text = sf.format_scaling({12: 30.0, 1: 8.0, 4: 14.0})
    lines = text.splitlines()
    assert [line.split()[0] for line in lines[1:]] == ['1', '4', '12']
    assert lines[2].split() == ['4', '14.0', '3.50', '2.00']
    assert lines[3].split() == ['12', '30.0', '2.50', '2.00']


def test_call_summary_splits_hub_and_member_requests():
    urls = {'hub': 'https://127.0.0.1:7000', 'member1': 'https://127.0.0.1:7001'}
    procs = [{'module': 'fleet_agent', 'start': 0, 'end': 1.5, 'helm': ['list', 'get'], 'cpu': 0.5, 'children_cpu': 0.25,
              'requests': [['GET', '127.0.0.1:7000', '/apis/x'], ['GET', '127.0.0.1:7001', '/api/v1/y']]},
             {'module': 'fleet_cluster', 'start': 0, 'end': 0.5, 'helm': [], 'cpu': 1.25, 'requests': [['GET', '127.0.0.1:7000', '/apis/z']] * 2}]
    summary = sf.call_summary(procs, urls, 2)
    assert summary['modules']['fleet_agent'] == {'processes': 1, 'hub_requests': 1, 'member_requests': 1, 'helm_runs': 2, 'seconds': 1.5,
                                                 'cpu': 0.75}
    assert summary['total']['hub_requests'] == 3
    assert summary['per_member'] == {'processes': 1.0, 'hub_requests': 1.5, 'member_requests': 0.5, 'helm_runs': 1.0, 'seconds': 1.0,
                                     'cpu': 1.0}
    table = sf.format_calls(summary).splitlines()
    assert table[0].split()[1:] == ['procs', 'hub', 'API', 'mem', 'API', 'helm', 'wall', 's', 'CPU', 's']
    assert table[-1].split()[-6:] == ['1.0', '1.5', '0.5', '1.0', '1.00', '1.00']
    # a module's row keeps its seconds' fractions (an in-controller run takes less than one)
    assert [line.split() for line in table if line.startswith('fleet_cluster')][0][-2:] == ['0.50', '1.25']


def test_call_summary_counts_a_modules_run_in_the_controller_as_no_process():
    urls = {'hub': 'https://127.0.0.1:7000', 'member1': 'https://127.0.0.1:7001'}
    procs = [{'module': 'member_info', 'in_controller': True, 'start': 0, 'end': 0.5, 'cpu': 0.25,
              'requests': [['GET', '127.0.0.1:7000', '/apis/x'], ['GET', '127.0.0.1:7001', '/api/v1/y']]},
             {'module': 'fleet_agent', 'start': 0, 'end': 1, 'cpu': 0.5, 'requests': []}]
    summary = sf.call_summary(procs, urls, 1)
    assert summary['modules']['member_info']['processes'] == 0 and summary['modules']['member_info']['member_requests'] == 1
    assert summary['total']['processes'] == 1


def test_timeline_from_runner_and_agent_logs():
    import scale_timeline as tl  # pylint: disable=import-outside-toplevel
    runner = ['2026-11-23 05:46:10,699 INFO member1 cattle-fleet-system/fleet-agent-a: realising pod (fleet-agent=fleetagent)',
              '2026-11-23 05:46:10,814 INFO member1 cattle-fleet-system/fleet-agent-a: started container fleet-agent (fleetagent) pid 1',
              '2026-11-23 05:46:11,000 INFO member10 cattle-fleet-system/fleet-agent-z: realising pod (fleet-agent=fleetagent)',
              '2026-11-23 05:46:12,000 INFO member1 fleet-system/member-agent-b: realising pod (member-agent=memberagent)']
    agent = ['--- 2026-11-23T05:46:16Z starting fleetagent (restart 0)',
             '{"level":"info","ts":"2026-11-23T05:46:16Z","msg":"Attempting to acquire leader lease...","lock":"x"}',
             '{"level":"info","ts":"2026-11-23T05:46:49Z","msg":"Successfully acquired lease","lock":"x"}',
             'time="2026-11-23T05:46:50Z" level=warning msg="signal received: \\"terminated\\""',
             'not a log line']
    events = tl.runner_events(runner, 'member1') + tl.agent_events(agent, 'fleet-agent-b')
    origin = tl.utc_epoch('2026-11-23T05:46:10Z', '%Y-%m-%dT%H:%M:%SZ')
    lines = tl.format_timeline(events, origin).splitlines()
    assert [line.split()[0] for line in lines] == ['+0.7', '+0.8', '+6.0', '+6.0', '+39.0', '+40.0']
    assert lines[0].endswith('runner: realising pod') and 'holds the leader lease' in lines[4] and 'told to stop' in lines[5]
    assert tl.format_timeline(events, origin, (origin, origin + 10)).count('\n') == 3


def test_tasks_per_host_counts_every_task_record_skipped_ones_too():
    records = [rec('m1', 'ansible.builtin.validate_argument_spec', 0, 1), rec('m1', 'fleetops.registration.hub_move', 1, 2),
               rec('m1', 'fleetops.registration.hub_move', 2, 2, status='skipped'), rec('m2', 'ansible.builtin.debug', 0, 1)]
    assert sf.tasks_per_host(records) == {'m1': 3, 'm2': 1}
    assert sf.module_processes(records + [rec('m2', 'fleetops.registration.step_args', 1, 2)]) == {'m1': 1}
    # On the bench lab's local connection their code runs in the controller (plugin_utils/controller_run.py).
    in_controller = [rec('m2', 'fleetops.registration.member_info', 1, 2), rec('hub', 'fleetops.registration.hub_prepare', 0, 1)]
    assert sf.module_processes(records + in_controller) == {'m1': 1}


def test_timer_records_a_tasks_literal_state_when_the_module_returns_no_invocation():
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), 'bench',
                                    'callback_plugins'))
    import bench_timer  # pylint: disable=import-outside-toplevel
    assert bench_timer._safe_args({}, {'state': 'absent', 'token_name': 'secret'}) == {'state': 'absent'}
    assert bench_timer._safe_args({}, {'state': '{{ wanted }}'}) == {}
    invoked = {'invocation': {'module_args': {'state': 'present', 'values': {'token': 't'}}}}
    assert bench_timer._safe_args(invoked, {'state': 'absent'}) == {'state': 'present'}
    # the first join's window starts at the install, not at the role's state=absent fleet_agent task before it
    records = [rec('m1', sf.FLEET_AGENT, 0, 1, args={'state': 'absent'}), rec('m1', sf.FLEET_AGENT, 1, 22, 'changed', args={})]
    assert sf.checkin_windows(records) == {'m1': 21}
