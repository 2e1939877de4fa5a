"""The lab's clusters, pinned ports and inventory with one and two hubs (fleetlab.topology, fleetlab.lab.choose_ports)."""

import pytest

from fleetlab import lab, processes, topology
from fleetlab.processes import LabError


def test_one_hub_keeps_its_layout_and_the_second_hub_comes_after_the_members():
    assert topology.cluster_names(2, 1) == ['hub', 'member1', 'member2']
    assert topology.cluster_names(2, 2) == ['hub', 'member1', 'member2', 'hub2']
    assert topology.hub_names(2) == ['hub', 'hub2']
    with pytest.raises(LabError, match='--hubs must be 1 or 2'):
        topology.hub_names(3)
    with pytest.raises(LabError, match='--hubs must be 1 or 2'):
        topology.hub_names(0)


def test_pinned_ports_hub2_after_the_last_member_whether_started_with_it_or_added_later():
    # etcd P, P+1; hub P+2; memberN P+2+N; hub2 P+3+members
    assert topology.pinned_ports(7000, 2, 1) == [7000, 7001, 7002, 7003, 7004]
    assert topology.pinned_ports(7000, 2, 2) == [7000, 7001, 7002, 7003, 7004, 7005]
    started_with_it = dict(zip(topology.cluster_names(2, 2), topology.pinned_ports(7000, 2, 2)[2:]))
    assert started_with_it == {'hub': 7002, 'member1': 7003, 'member2': 7004, 'hub2': 7005}
    assert topology.pinned_port_of(7000, 2, 'hub2') == 7005   # added to a running lab
    assert topology.pinned_port_of(7000, 0, 'hub2') == 7003
    with pytest.raises(LabError, match='no lab cluster named "hub3"'):
        topology.pinned_port_of(7000, 2, 'hub3')


def test_choose_ports_counts_the_second_hub(monkeypatch):
    monkeypatch.delenv('FLEETOPS_LAB_BASE_PORT', raising=False)
    ports = lab.choose_ports(2, 2)
    assert len(ports) == 6 and len(set(ports)) == 6
    assert len(lab.choose_ports(2)) == 5


ROWS = [('hub', 'hub', 'https://127.0.0.1:7002', '/lab/pki/hub/ca.crt'),
        ('member1', 'member', 'https://127.0.0.1:7003', '/lab/pki/member1/ca.crt'),
        ('hub2', 'hub', 'https://127.0.0.1:7004', '/lab/pki/hub2/ca.crt')]


def test_inventory_puts_the_second_hub_in_a_group_of_its_own():
    inventory = topology.inventory(ROWS, '/lab/kubeconfig', {'ansible_connection': 'local'})['all']
    assert inventory['vars'] == {'ansible_connection': 'local'}
    groups = inventory['children']
    assert list(groups) == ['hub', 'members', 'new_hub']
    assert list(groups['hub']['hosts']) == ['fleet-hub']       # the group the playbooks target holds only the first hub
    assert list(groups['members']['hosts']) == ['member1']
    assert groups['new_hub']['hosts'] == {'fleet-hub2': {
        'fleetops_kubeconfig': '/lab/kubeconfig', 'fleetops_context': 'hub2',
        'fleetops_api_server_url': 'https://127.0.0.1:7004', 'fleetops_ca_file': '/lab/pki/hub2/ca.crt'}}
    assert groups['members']['hosts']['member1']['fleetops_labels'] == {'env': 'lab', 'member': 'member1'}


def test_inventory_of_a_one_hub_lab_is_unchanged():
    inventory = topology.inventory(ROWS[:2], '/lab/kubeconfig', {})['all']
    assert list(inventory['children']) == ['hub', 'members']
    assert inventory['children']['hub']['hosts'] == {'fleet-hub': {
        'fleetops_kubeconfig': '/lab/kubeconfig', 'fleetops_context': 'hub',
        'fleetops_api_server_url': 'https://127.0.0.1:7002', 'fleetops_ca_file': '/lab/pki/hub/ca.crt'}}


def test_down_stops_the_second_hub_with_the_rest(tmp_path):
    import subprocess
    from fleetlab import state
    from fleetlab.paths import LabPaths
    paths = LabPaths(tmp_path / 'lab')
    procs = {}

    def sleeper(name):
        procs[name] = subprocess.Popen(['sleep', '60'], start_new_session=True)
        return processes.record(name.rsplit('/', 1)[-1], procs[name])
    current = {'members': 1, 'hubs': 2, 'etcd': sleeper('etcd'), 'runner': sleeper('runner'), 'clusters': {
        name: {'role': 'member' if name == 'member1' else 'hub', 'agents': [],
               'processes': [sleeper('%s/kube-apiserver' % name), sleeper('%s/kube-controller-manager' % name)]}
        for name in ('hub', 'member1', 'hub2')}}
    state.save(paths, current)
    try:
        assert lab.down(paths, quiet=True) == 0
        assert {name: p.poll() is None for name, p in procs.items()} == {name: False for name in procs}
        assert not paths.root.exists()
    finally:
        for proc in procs.values():
            proc.kill()
            proc.wait()


def test_the_runner_watches_a_cluster_added_to_the_running_lab(tmp_path, monkeypatch):
    """A hub added to a running lab is watched by the runner that runs (no restart of it or of its agents) once the
    kubeconfig names it."""
    from fleetlab import runner, state
    from fleetlab.paths import LabPaths
    paths = LabPaths(tmp_path / 'lab')
    named = {'hub'}

    class FakeAPI:
        def __init__(self, name, kubeconfig, context):
            if context not in named:
                raise KeyError('context %s not in %s' % (context, kubeconfig))
            self.name = name
    monkeypatch.setattr(runner, 'ClusterAPI', FakeAPI)
    watched = []
    monkeypatch.setattr(runner.Runner, '_start_watch', lambda self, cluster: watched.append(cluster))
    state.save(paths, {'clusters': {'hub': {}, 'member1': {}}})
    named.add('member1')
    run = runner.Runner(paths, ['hub', 'member1'], paths.kubeconfig, {}, {})
    assert run.watch_new_clusters() == [] and watched == []
    state.save(paths, {'clusters': {'hub': {}, 'member1': {}, 'hub2': {}}})
    assert run.watch_new_clusters() == [], 'checked again only after the interval'
    run.next_cluster_check = 0
    assert run.watch_new_clusters() == [] and watched == [], 'not in the kubeconfig yet'
    named.add('hub2')
    run.next_cluster_check = 0
    assert run.watch_new_clusters() == ['hub2'] and watched == ['hub2']
    assert run.clusters == ['hub', 'member1', 'hub2']
    run.next_cluster_check = 0
    assert run.watch_new_clusters() == []


def test_a_hub_added_on_pinned_ports_takes_the_port_after_the_last_member_and_names_it_when_busy(monkeypatch):
    import socket
    from fleetlab import hubs
    holder = socket.socket()
    holder.bind(('127.0.0.1', 0))
    holder.listen(1)
    busy = holder.getsockname()[1]
    try:
        monkeypatch.setenv('FLEETOPS_LAB_BASE_PORT', str(busy - 5))
        with pytest.raises(LabError, match='port %d on 127.0.0.1 \\(hub2 with FLEETOPS_LAB_BASE_PORT=%d\\) is busy'
                           % (busy, busy - 5)):
            hubs.port_for({'members': 2}, 'hub2')
        monkeypatch.setenv('FLEETOPS_LAB_BASE_PORT', str(busy - 4))
        if not processes.port_busy(busy + 1):   # not ours to hold
            assert hubs.port_for({'members': 2}, 'hub2') == busy + 1
    finally:
        holder.close()
