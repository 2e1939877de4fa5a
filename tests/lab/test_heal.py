"""The lab heals: a component stopped, killed or frozen comes back with its ports, certificates and
data, through ``python -m fleetlab up`` (the command users run) or the fixture's ``Lab`` API."""

import json
import os
import subprocess
import sys
import time

import pytest
import urllib3
from kubernetes import client

from modrun import REPO

pytestmark = pytest.mark.lab


def _fleetlab(*args):
    env = dict(os.environ, PYTHONPATH=str(REPO / 'lab'))
    return subprocess.run([sys.executable, '-m', 'fleetlab'] + list(args), capture_output=True, text=True, env=env,
                          timeout=600, check=False)


def _answers(lab, context, timeout=3):
    """True if the cluster's API server answers /version at the URL and with the CA the lab's kubeconfig has had since start."""
    api = client.VersionApi(lab.api_client(context))
    try:
        api.get_code(_request_timeout=timeout)
        return True
    except (urllib3.exceptions.HTTPError, OSError, client.exceptions.ApiException):
        return False


def _answers_within(lab, context, seconds):
    deadline = time.monotonic() + seconds
    while not _answers(lab, context, timeout=5):
        if time.monotonic() > deadline:
            return False
        time.sleep(1)
    return True


def _components():
    proc = _fleetlab('status', '--json')
    return {c['name']: c for c in json.loads(proc.stdout)['components']}, proc.returncode


def test_up_heals_a_killed_hub_apiserver_with_the_same_port_ca_and_data(lab, name):
    core = client.CoreV1Api(lab.api_client('hub'))
    marker = name('heal')
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=marker)))
    ca_before = lab.ca_pem('hub')
    before, _rc = _components()
    assert before['hub/kube-apiserver']['state'] == 'running'
    try:
        lab.kill('hub-apiserver')
        after, code = _components()
        assert after['hub/kube-apiserver']['state'] == 'down'
        assert code == 1, 'status exits 1 for a partially running lab'
        assert not _answers(lab, 'hub')

        proc = _fleetlab('up')
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert 'starting hub/kube-apiserver' in proc.stdout and 'lab healed' in proc.stdout
        healed, code = _components()
        assert code == 0 and healed['hub/kube-apiserver']['state'] == 'running'
        assert healed['hub/kube-apiserver']['pid'] != before['hub/kube-apiserver']['pid']
        assert lab.ca_pem('hub') == ca_before
        # same URL (port), same CA, same etcd data: the namespace created before is still there
        assert _answers(lab, 'hub')
        assert core.read_namespace(marker).metadata.name == marker
        assert _fleetlab('up').stdout.count('nothing changed') == 1
    finally:
        lab.heal()
        core.delete_namespace(marker)


def test_stop_start_and_freeze_thaw_of_a_named_component(lab):
    assert _answers(lab, 'member2')
    lab.freeze('member2-apiserver')
    try:
        assert lab.components()['member2/kube-apiserver'] == 'frozen'
        assert not _answers(lab, 'member2', timeout=2)
    finally:
        lab.thaw('member2-apiserver')
    # A thawed API server first works off what queued while it was stopped; on a loaded machine that takes seconds.
    assert _answers_within(lab, 'member2', 30), 'member2 did not answer within 30 s of the thaw'

    lab.stop('member2/kube-controller-manager')
    try:
        assert lab.components()['member2/kube-controller-manager'] == 'down'
    finally:
        message = lab.start('member2/kube-controller-manager')
    assert 'started' in message
    assert lab.components()['member2/kube-controller-manager'] == 'running'

    with pytest.raises(Exception, match='no lab component named "member9-apiserver"'):
        lab.stop('member9-apiserver')


def test_a_killed_agent_is_restarted_by_the_runner(lab, wait):
    pattern = 'hub/fleet-system/hub-agent-*/hub-agent'
    before = [n for n, state in lab.components().items() if n.startswith('hub/fleet-system/hub-agent-') and state == 'running']
    assert len(before) == 1, lab.components()
    pids = {e['pid'] for e in lab.agent_processes('hub') if e.get('container') == 'hub-agent'}
    lab.kill(pattern)
    wait(lambda: [e for e in lab.agent_processes('hub') if e.get('container') == 'hub-agent' and e['pid'] not in pids],
         60, 'the runner to restart the hub agent')
