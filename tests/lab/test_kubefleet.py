"""KubeFleet join and leave against the lab, with helm and the kubernetes client only.

The hub runs the real ``hubagent`` (chart ``hub-agent``); installing the real ``member-agent``
chart on member2 makes the lab's agent runner start the real ``memberagent`` and its
``refresh-token`` sidecar (``authtoken``), which copies the hub token from ``hub-kubeconfig-secret``
into the pod's ``/config/token``.
"""

import base64

import pytest
from kubernetes import client
from kube_helpers import absent as _absent, ignore_404

pytestmark = pytest.mark.lab


@pytest.fixture(autouse=True)
def _needs_controllers(lab_controllers):
    return lab_controllers


GROUP, VERSION = 'cluster.kubernetes-fleet.io', 'v1beta1'
HUB_NS = 'fleet-system'
MEMBER = 'member2'


def _condition(obj, kind):
    for cond in (obj.get('status') or {}).get('conditions') or []:
        if cond['type'] == kind:
            return cond
    return None


def _with_token(secret):
    return secret if (secret.data or {}).get('token') else None


@pytest.fixture
def member_identity(lab, name, wait):
    """ServiceAccount + token Secret on the hub for a new member name; yields (member name, sa, token)."""
    core = client.CoreV1Api(lab.api_client('hub'))
    member_name = name('proof-member')
    sa_name = '%s-hub-cluster-access' % member_name
    core.create_namespaced_service_account(HUB_NS, client.V1ServiceAccount(metadata=client.V1ObjectMeta(name=sa_name)))
    core.create_namespaced_secret(HUB_NS, client.V1Secret(
        metadata=client.V1ObjectMeta(name=sa_name + '-token', annotations={'kubernetes.io/service-account.name': sa_name}),
        type='kubernetes.io/service-account-token'))
    secret = wait(lambda: _with_token(core.read_namespaced_secret(sa_name + '-token', HUB_NS)), 60, 'the hub service-account token')
    yield member_name, sa_name, base64.b64decode(secret.data['token']).decode()
    custom = client.CustomObjectsApi(lab.api_client('hub'))
    ignore_404(lambda: custom.delete_cluster_custom_object(GROUP, VERSION, 'memberclusters', member_name))
    lab.run_helm(MEMBER, 'uninstall', 'member-agent', '--namespace', 'default', '--wait', '--ignore-not-found', check=False)
    member_core = client.CoreV1Api(lab.api_client(MEMBER))
    for delete in (lambda: member_core.delete_namespaced_secret('hub-kubeconfig-secret', 'default'),
                   lambda: core.delete_namespaced_secret(sa_name + '-token', HUB_NS),
                   lambda: core.delete_namespaced_service_account(sa_name, HUB_NS)):
        ignore_404(delete)


def test_member_joins_with_heartbeat_and_leaves(lab, member_identity, wait):
    member_name, sa_name, token = member_identity
    custom = client.CustomObjectsApi(lab.api_client('hub'))
    hub_core = client.CoreV1Api(lab.api_client('hub'))
    custom.create_cluster_custom_object(GROUP, VERSION, 'memberclusters', {
        'apiVersion': '%s/%s' % (GROUP, VERSION), 'kind': 'MemberCluster', 'metadata': {'name': member_name},
        'spec': {'identity': {'name': sa_name, 'kind': 'ServiceAccount', 'namespace': HUB_NS, 'apiGroup': ''},
                 'heartbeatPeriodSeconds': 15}})

    client.CoreV1Api(lab.api_client(MEMBER)).create_namespaced_secret('default', client.V1Secret(
        metadata=client.V1ObjectMeta(name='hub-kubeconfig-secret'), string_data={'token': token}))
    hub_ca = base64.b64encode(lab.ca_pem('hub').encode()).decode()
    lab.run_helm(MEMBER, 'install', 'member-agent', lab.kubefleet_chart('member-agent'), '--namespace', 'default',
                 '--set', 'config.hubURL=%s' % lab.api_urls['hub'], '--set', 'config.memberClusterName=%s' % member_name,
                 '--set', 'config.hubCA=%s' % hub_ca, '--set', 'tlsClientInsecure=false',
                 '--set', 'image.tag=v0.14.0', '--set', 'refreshtoken.tag=v0.14.0', '--set', 'logVerbosity=2',
                 '--set', 'namespace=fleet-system', '--set', 'enableV1Alpha1APIs=false', '--set', 'enableV1Beta1APIs=true',
                 '--wait', '--timeout', '180s')

    def joined():
        mc = custom.get_cluster_custom_object(GROUP, VERSION, 'memberclusters', member_name)
        cond = _condition(mc, 'Joined')
        agents = (mc.get('status') or {}).get('agentStatus') or []
        beat = [a for a in agents if a.get('type') == 'MemberAgent' and a.get('lastReceivedHeartbeat')]
        return mc if cond and cond['status'] == 'True' and beat else None
    member = wait(joined, 240, 'MemberCluster %s Joined=True with a member agent heartbeat' % member_name)
    assert _condition(member, 'ReadyToJoin')['status'] == 'True'
    member_agent = [a for a in member['status']['agentStatus'] if a['type'] == 'MemberAgent'][0]
    assert {c['type']: c['status'] for c in member_agent['conditions']}.get('Joined') == 'True'
    reserved = 'fleet-member-%s' % member_name
    assert hub_core.read_namespace(reserved).status.phase == 'Active'

    custom.delete_cluster_custom_object(GROUP, VERSION, 'memberclusters', member_name)
    wait(lambda: _absent(lambda: hub_core.read_namespace(reserved)), 240, 'namespace %s to be removed after leave' % reserved)
    wait(lambda: _absent(lambda: custom.get_cluster_custom_object(GROUP, VERSION, 'memberclusters', member_name)), 120,
         'MemberCluster %s to be deleted' % member_name)
