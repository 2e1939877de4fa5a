"""Rancher Fleet agent-initiated registration against the lab, with helm and the kubernetes client only.

The hub runs the real fleet controllers (chart ``fleet``); installing the real ``fleet-agent``
chart on member1 makes the lab's agent runner start the real ``fleetagent``, which registers.
"""

import base64
import os

import pytest
import yaml
from kubernetes import client
from kubernetes.client.rest import ApiException
from kube_helpers import absent as _absent, ignore_404

pytestmark = pytest.mark.lab


@pytest.fixture(autouse=True)
def _needs_controllers(lab_controllers):
    return lab_controllers


GROUP, VERSION = 'fleet.cattle.io', 'v1alpha1'
AGENT_NS = 'cattle-fleet-system'
MEMBER = 'member1'


def _custom(lab, context):
    return client.CustomObjectsApi(lab.api_client(context))


def _delete_member_agent(lab, wait):
    """Uninstall the agent and remove its namespace, so the next registration starts from scratch."""
    lab.run_helm(MEMBER, 'uninstall', 'fleet-agent', '--namespace', AGENT_NS, '--wait', '--ignore-not-found', check=False)
    core = client.CoreV1Api(lab.api_client(MEMBER))
    ignore_404(lambda: core.delete_namespace(AGENT_NS))
    wait(lambda: _absent(lambda: core.read_namespace(AGENT_NS)), 120, 'namespace %s to go on %s' % (AGENT_NS, MEMBER))


@pytest.fixture
def registration(lab, name, wait, tmp_path):
    """A hub namespace with a ClusterRegistrationToken; yields (namespace, values dict, values file)."""
    core = client.CoreV1Api(lab.api_client('hub'))
    custom = _custom(lab, 'hub')
    namespace = name('fleet-proof')
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=namespace)))
    custom.create_namespaced_custom_object(GROUP, VERSION, namespace, 'clusterregistrationtokens', {
        'apiVersion': '%s/%s' % (GROUP, VERSION), 'kind': 'ClusterRegistrationToken',
        'metadata': {'name': 'proof-token'}, 'spec': {'ttl': '1h'}})

    def values_secret():
        try:
            secret = core.read_namespaced_secret('proof-token', namespace)
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise
        return secret if (secret.data or {}).get('values') else None
    secret = wait(values_secret, 90, 'the registration token Secret with values')
    assert secret.type == 'fleet.cattle.io/cluster-registration-values'

    # Fleet writes the Secret before it records it in the token's status: under load the two are seconds apart.
    def recorded_token():
        token = custom.get_namespaced_custom_object(GROUP, VERSION, namespace, 'clusterregistrationtokens', 'proof-token')
        return token if (token.get('status') or {}).get('secretName') else None
    token = wait(recorded_token, 60, "the token's status.secretName")
    assert token['status']['secretName'] == 'proof-token'

    values = yaml.safe_load(base64.b64decode(secret.data['values']))
    values_file = tmp_path / 'values.yaml'
    fd = os.open(values_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, 'w') as handle:
        yaml.safe_dump(values, handle)
    _delete_member_agent(lab, wait)
    yield namespace, values, values_file
    values_file.unlink()   # it holds the registration token: do not leave it in pytest's kept temp dirs
    _delete_member_agent(lab, wait)
    for cluster in custom.list_namespaced_custom_object(GROUP, VERSION, namespace, 'clusters')['items']:
        custom.delete_namespaced_custom_object(GROUP, VERSION, namespace, 'clusters', cluster['metadata']['name'])
    core.delete_namespace(namespace)


def _install_agent(lab, values_file, *extra):
    lab.run_helm(MEMBER, 'install', 'fleet-agent', lab.fleet_chart('fleet-agent'), '--namespace', AGENT_NS, '--create-namespace',
                 '-f', values_file, '--wait', '--timeout', '180s', *extra)


def _registered(lab, namespace, match):
    """The Cluster in ``namespace`` selected by ``match`` once its agent has checked in."""
    def check():
        for cluster in _custom(lab, 'hub').list_namespaced_custom_object(GROUP, VERSION, namespace, 'clusters')['items']:
            if match(cluster) and ((cluster.get('status') or {}).get('agent') or {}).get('lastSeen'):
                return cluster
        return None
    return check


def test_token_values_name_the_hub(lab, registration):
    namespace, values, _values_file = registration
    assert values['clusterNamespace'] == namespace
    assert values['apiServerURL'] == lab.api_urls['hub']
    assert values['apiServerCA'].strip() == lab.ca_pem('hub').strip()
    assert values['tokenName'] == 'proof-token'
    assert values['token']
    assert values['systemRegistrationNamespace'] == 'cattle-fleet-clusters-system'


def test_agent_initiated_registration_creates_a_labelled_cluster(lab, registration, wait):
    namespace, _values, values_file = registration
    kube_system_uid = client.CoreV1Api(lab.api_client(MEMBER)).read_namespace('kube-system').metadata.uid

    _install_agent(lab, values_file, '--set', 'labels.proof=agent-initiated')

    deployment = client.AppsV1Api(lab.api_client(MEMBER)).read_namespaced_deployment('fleet-agent', AGENT_NS)
    assert deployment.status.available_replicas == 1
    cluster = wait(_registered(lab, namespace, lambda c: c['spec'].get('clientID') == kube_system_uid), 240,
                   'a Cluster with clientID = member1 kube-system UID and status.agent.lastSeen')
    assert cluster['metadata']['labels']['proof'] == 'agent-initiated'
    assert cluster['status']['agent']['namespace'] == AGENT_NS
    # the agent swapped its bootstrap credential for its own
    core = client.CoreV1Api(lab.api_client(MEMBER))
    assert _absent(lambda: core.read_namespaced_secret('fleet-agent-bootstrap', AGENT_NS))
    assert core.read_namespaced_secret('fleet-agent', AGENT_NS).data['kubeconfig']


def test_agent_claims_a_predefined_cluster_by_client_id(lab, registration, wait, name):
    namespace, _values, values_file = registration
    client_id = name('proof-client')
    _custom(lab, 'hub').create_namespaced_custom_object(GROUP, VERSION, namespace, 'clusters', {
        'apiVersion': '%s/%s' % (GROUP, VERSION), 'kind': 'Cluster',
        'metadata': {'name': 'predefined', 'labels': {'env': 'lab'}}, 'spec': {'clientID': client_id}})

    _install_agent(lab, values_file, '--set', 'clientID=%s' % client_id, '--set', 'labels.proof=claimed')

    cluster = wait(_registered(lab, namespace, lambda c: c['metadata']['name'] == 'predefined'), 240,
                   'the predefined Cluster to be claimed (status.agent.lastSeen)')
    assert cluster['spec']['clientID'] == client_id
    assert cluster['metadata']['labels']['env'] == 'lab'
    # Fleet applies registration labels only to a Cluster the registration creates (v0.16.0
    # clusterregistration.createOrGetCluster): a claimed Cluster keeps its own labels, so labels
    # for predefined clusters have to be reconciled on the hub, not passed to the agent chart.
    assert 'proof' not in cluster['metadata']['labels']
    others = [c['metadata']['name'] for c in _custom(lab, 'hub').list_namespaced_custom_object(
        GROUP, VERSION, namespace, 'clusters')['items'] if c['metadata']['name'] != 'predefined']
    assert others == []


def _agent_bundle_deployed(core, cluster_name):
    """Fleet's agent bundle (manageAgent, the lab's default) installed on the member as Helm release fleet-agent-<cluster>."""
    selector = 'owner=helm,status=deployed,name=fleet-agent-%s' % cluster_name
    return core.list_namespaced_secret(AGENT_NS, label_selector=selector).items


def test_helm_upgrade_restarts_the_agent_and_uninstall_stops_it(lab, registration, wait):
    namespace, _values, values_file = registration
    _install_agent(lab, values_file)
    core = client.CoreV1Api(lab.api_client(MEMBER))

    def agent_pods():
        pods = core.list_namespaced_pod(AGENT_NS, label_selector='app=fleet-agent').items
        return [p for p in pods if p.metadata.deletion_timestamp is None]
    # The registered agent then deploys Fleet's agent bundle, which rolls the same Deployment out again with the
    # hub's agent settings: an upgrade before that rollout would be overwritten by it.
    cluster = wait(_registered(lab, namespace, lambda c: True), 240, 'the agent registered (status.agent.lastSeen)')
    wait(lambda: _agent_bundle_deployed(core, cluster['metadata']['name']), 120, "Fleet's agent bundle deployed on the member")
    apps = client.AppsV1Api(lab.api_client(MEMBER))
    wait(lambda: _rolled_out(apps.read_namespaced_deployment('fleet-agent', AGENT_NS)), 120, "the agent bundle's rollout")
    first = wait(lambda: [p for p in agent_pods() if _ready(p)] if len(agent_pods()) == 1 else None, 120,
                 'one ready fleet-agent pod')[0]
    assert [a['binary'] for a in _agent_processes(lab, first.metadata.name)] == ['fleetagent']

    lab.run_helm(MEMBER, 'upgrade', 'fleet-agent', lab.fleet_chart('fleet-agent'), '--namespace', AGENT_NS, '-f', values_file,
                 '--set', 'leaderElection.leaseDuration=40s', '--wait', '--timeout', '180s')
    second = wait(lambda: [p for p in agent_pods() if _ready(p) and p.metadata.uid != first.metadata.uid and
                           len(agent_pods()) == 1], 120, 'the old agent pod replaced by a ready new one')[0]
    env = {e.name: e.value for e in second.spec.containers[0].env}
    assert env['CATTLE_ELECTION_LEASE_DURATION'] == '40s'
    wait(lambda: not _agent_processes(lab, first.metadata.name), 60, 'the old agent process to stop')
    assert len(_agent_processes(lab, second.metadata.name)) == 1

    lab.run_helm(MEMBER, 'uninstall', 'fleet-agent', '--namespace', AGENT_NS, '--wait')
    wait(lambda: not agent_pods(), 60, 'agent pods to go after uninstall')
    wait(lambda: not _agent_processes(lab, second.metadata.name), 60, 'the agent process to stop after uninstall')


def _agent_processes(lab, pod_name):
    return [a for a in lab.agent_processes(MEMBER) if a['pod'] == pod_name]


def _rolled_out(deployment):
    status = deployment.status
    return (status.observed_generation == deployment.metadata.generation and
            status.updated_replicas == status.replicas == status.ready_replicas == deployment.spec.replicas)


def _ready(pod):
    return any(c.type == 'Ready' and c.status == 'True' for c in pod.status.conditions or [])


def _single_context_kubeconfig(lab, context):
    """The lab kubeconfig reduced to one context (what a user hands the hub for an import)."""
    full = yaml.safe_load(lab.kubeconfig.read_text())
    ctx = [c for c in full['contexts'] if c['name'] == context][0]
    return {'apiVersion': 'v1', 'kind': 'Config', 'current-context': context, 'contexts': [ctx],
            'clusters': [c for c in full['clusters'] if c['name'] == ctx['context']['cluster']],
            'users': [u for u in full['users'] if u['name'] == ctx['context']['user']]}


def test_manager_initiated_import_deploys_and_manages_the_agent(lab, name, wait):
    """The hub deploys the agent itself from a kubeconfig Secret; the agent then runs its own agent bundle."""
    member = 'member2'
    core = client.CoreV1Api(lab.api_client('hub'))
    custom = _custom(lab, 'hub')
    member_core = client.CoreV1Api(lab.api_client(member))
    namespace = name('fleet-import')
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=namespace)))
    try:
        core.create_namespaced_secret(namespace, client.V1Secret(
            metadata=client.V1ObjectMeta(name='member-kubeconfig'),
            string_data={'value': yaml.safe_dump(_single_context_kubeconfig(lab, member))}))
        custom.create_namespaced_custom_object(GROUP, VERSION, namespace, 'clusters', {
            'apiVersion': '%s/%s' % (GROUP, VERSION), 'kind': 'Cluster',
            'metadata': {'name': 'imported', 'labels': {'proof': 'imported'}}, 'spec': {'kubeConfigSecret': 'member-kubeconfig'}})

        def ready():
            cluster = custom.get_namespaced_custom_object(GROUP, VERSION, namespace, 'clusters', 'imported')
            status = cluster.get('status') or {}
            conditions = {c['type']: c['status'] for c in status.get('conditions') or []}
            done = (status.get('agent') or {}).get('lastSeen') and conditions.get('Imported') == 'True' and \
                (status.get('display') or {}).get('readyBundles') == '1/1'
            return cluster if done else None
        cluster = wait(ready, 240, 'the imported Cluster checked in with its agent bundle ready')
        assert cluster['metadata']['labels']['proof'] == 'imported'
        deployment = client.AppsV1Api(lab.api_client(member)).read_namespaced_deployment('fleet-agent', AGENT_NS)
        assert deployment.status.available_replicas == 1
    finally:
        for cluster in custom.list_namespaced_custom_object(GROUP, VERSION, namespace, 'clusters')['items']:
            custom.delete_namespaced_custom_object(GROUP, VERSION, namespace, 'clusters', cluster['metadata']['name'])
        core.delete_namespace(namespace)
        ignore_404(lambda: member_core.delete_namespace(AGENT_NS))
        wait(lambda: _absent(lambda: member_core.read_namespace(AGENT_NS)), 120, 'namespace %s to go on %s' % (AGENT_NS, member))
