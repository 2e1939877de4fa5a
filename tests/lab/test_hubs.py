"""A lab with two hubs (``python -m fleetlab up --hubs 2``): hub2 is added to the running session lab without
restarting it, runs a Fleet controller and a KubeFleet hub agent of its own, is named in the kubeconfig, the
inventory (group ``new_hub``, which no playbook but a move acts on) and ``status``, and heals like the rest."""

import json
import os
import subprocess
import sys

import pytest
import yaml
from kubernetes import client

from modrun import REPO

pytestmark = pytest.mark.lab

# the playbooks that act on the group hub: none of them may act on the second hub
HUB_PLAYBOOKS = ('join_cluster.yml', 'cluster_status.yml', 'predefine_clusters.yml', 'prepare_hub.yml',
                 'leave_cluster.yml', 'upgrade_agents.yml')


def _fleetlab(*args):
    env = dict(os.environ, PYTHONPATH=str(REPO / 'lab'))
    return subprocess.run([sys.executable, '-m', 'fleetlab'] + list(args), capture_output=True, text=True, env=env,
                          timeout=600, check=False)


def _available(apps, namespace, name):
    dep = apps.read_namespaced_deployment(name, namespace)
    return (dep.status.available_replicas or 0) >= (dep.spec.replicas or 1)


def test_hub2_runs_its_own_controllers_and_was_added_without_restarting_the_lab(lab_hub2):
    lab = lab_hub2.lab
    assert lab.hubs == ['hub', 'hub2'] and 'hub2' not in lab.members
    apps = client.AppsV1Api(lab_hub2.api_client())
    assert _available(apps, 'cattle-fleet-system', 'fleet-controller')
    assert _available(apps, 'fleet-system', 'hub-agent')
    config = client.CoreV1Api(lab_hub2.api_client()).read_namespaced_config_map('fleet-controller', 'cattle-fleet-system')
    assert json.loads(config.data['config'])['apiServerURL'] == lab_hub2.api_url != lab.api_urls['hub']
    containers = sorted(e['container'] for e in lab.agent_processes('hub2'))
    assert containers == ['fleet-agentmanagement', 'fleet-cleanup', 'fleet-controller', 'hub-agent'], containers
    # the lab's own processes and the first hub's controllers kept running while hub2 was added (on a lab started with
    # two hubs, as a reused one may be, nothing was added)
    before, after = lab_hub2.components_before, lab_hub2.components_after
    assert {'etcd', 'runner', 'hub/kube-apiserver', 'member1/kube-apiserver'} <= set(before), before
    assert {n: after.get(n) for n in before} == before, 'a component of the lab was restarted by adding hub2'
    assert {n for n in after if n.startswith('hub2/')} >= {'hub2/kube-apiserver', 'hub2/kube-controller-manager'}


def test_hub2_is_in_the_kubeconfig_inventory_and_status_and_no_hub_playbook_acts_on_it(lab_hub2, tmp_path):
    lab = lab_hub2.lab
    kubeconfig = yaml.safe_load(lab.kubeconfig.read_text())
    assert [c['name'] for c in kubeconfig['contexts']] == ['hub'] + lab.members + ['hub2']
    assert kubeconfig['current-context'] == 'hub'
    groups = yaml.safe_load(lab.inventory.read_text())['all']['children']
    assert list(groups['hub']['hosts']) == ['fleet-hub']
    assert groups['new_hub']['hosts']['fleet-hub2']['fleetops_context'] == 'hub2'
    assert groups['new_hub']['hosts']['fleet-hub2']['fleetops_api_server_url'] == lab_hub2.api_url

    proc = _fleetlab('status', '--json')
    report = json.loads(proc.stdout)
    assert proc.returncode == 0 and report['hubs'] == 2
    assert report['clusters']['hub2']['role'] == 'hub' and report['clusters']['hub2']['url'] == lab_hub2.api_url
    states = {c['name']: c['state'] for c in report['components'] if c['cluster'] == 'hub2'}
    assert states['hub2/kube-apiserver'] == states['hub2/kube-controller-manager'] == 'running', states
    again = _fleetlab('up', '--hubs', '2')
    assert again.returncode == 0 and 'lab is already running (hub, hub2 + 2 members)' in again.stdout, again.stdout
    assert 'nothing changed' in again.stdout and 'note:' not in again.stdout, again.stdout

    playbook = os.path.join(os.path.dirname(sys.executable), 'ansible-playbook')
    for name in HUB_PLAYBOOKS:
        listed = subprocess.run([playbook, '-i', str(lab.inventory), '--list-hosts', str(REPO / 'playbooks' / name)],
                                capture_output=True, text=True, timeout=120, check=False, stdin=subprocess.DEVNULL)
        assert listed.returncode == 0, listed.stderr
        assert 'fleet-hub2' not in listed.stdout, '%s acts on the second hub:\n%s' % (name, listed.stdout)


def test_up_heals_a_killed_hub2_apiserver_and_leaves_the_rest_alone(lab_hub2):
    lab = lab_hub2.lab
    version = client.VersionApi(lab_hub2.api_client())
    before = lab.components()
    lab.kill('hub2-apiserver')
    try:
        assert lab.components()['hub2/kube-apiserver'] == 'down'
        proc = _fleetlab('up')   # default --hubs 1 on a two-hub lab: heals, keeps hub2
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert 'starting hub2/kube-apiserver' in proc.stdout and 'note: it has 2 hubs' in proc.stdout, proc.stdout
    finally:
        lab.heal()
    assert version.get_code().git_version
    after = lab.components()
    assert after['hub2/kube-apiserver'] == 'running'
    assert after['hub/kube-apiserver'] == before['hub/kube-apiserver'] == 'running'
