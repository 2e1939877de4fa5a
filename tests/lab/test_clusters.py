"""The lab's clusters behave like real ones where the collection depends on it: the controller
manager fills service-account token Secrets, finishes namespace deletion, and RBAC is enforced; a Pod
whose image cannot be pulled is reported as a kubelet reports it (so tests can inject that fault)."""

import base64
import time

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException
from kube_helpers import ignore_404

pytestmark = pytest.mark.lab


def _eventually(call, seconds=15):
    """``call()``'s result once it stops answering 403 (RBAC changes reach the authorizer's cache asynchronously)."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            return call()
        except ApiException as exc:
            if exc.status != 403 or time.monotonic() > deadline:
                raise
        time.sleep(0.2)


def _core(lab, context):
    return client.CoreV1Api(lab.api_client(context))


def _client_with_token(lab, context, token):
    """An ApiClient that authenticates with ``token`` only (CA from the lab, no client cert)."""
    conf = client.Configuration()
    conf.host = lab.api_urls[context]
    conf.ssl_ca_cert = str(lab.ca_files[context])
    conf.api_key = {'authorization': 'Bearer ' + token}
    return client.ApiClient(conf)


def _with_token(secret):
    return secret if (secret.data or {}).get('token') else None


@pytest.fixture
def namespace(lab, name):
    """A fresh namespace on every cluster the test asks for (deleted afterwards)."""
    created = []

    def make(context):
        ns = name('proof')
        _core(lab, context).create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=ns)))
        created.append((context, ns))
        return ns
    yield make
    for context, ns in created:
        ignore_404(lambda: _core(lab, context).delete_namespace(ns))


@pytest.mark.parametrize('context', ['hub', 'member1'])
def test_service_account_token_secret_gets_a_working_token(lab, namespace, wait, context):
    core = _core(lab, context)
    ns = namespace(context)
    core.create_namespaced_service_account(ns, client.V1ServiceAccount(metadata=client.V1ObjectMeta(name='joiner')))
    core.create_namespaced_secret(ns, client.V1Secret(
        metadata=client.V1ObjectMeta(name='joiner-token', annotations={'kubernetes.io/service-account.name': 'joiner'}),
        type='kubernetes.io/service-account-token'))

    secret = wait(lambda: _with_token(core.read_namespaced_secret('joiner-token', ns)), 60, 'the token controller to fill the Secret')
    assert base64.b64decode(secret.data['namespace']).decode() == ns
    assert base64.b64decode(secret.data['ca.crt']).decode().strip() == lab.ca_pem(context).strip()

    token = base64.b64decode(secret.data['token']).decode()
    review = client.AuthenticationV1Api(_client_with_token(lab, context, token)).create_self_subject_review(
        client.V1SelfSubjectReview(metadata=client.V1ObjectMeta()))
    assert review.status.user_info.username == 'system:serviceaccount:%s:joiner' % ns


def test_a_token_from_one_cluster_is_rejected_by_another(lab, namespace, wait):
    core = _core(lab, 'member1')
    ns = namespace('member1')
    core.create_namespaced_service_account(ns, client.V1ServiceAccount(metadata=client.V1ObjectMeta(name='stranger')))
    token = core.create_namespaced_service_account_token('stranger', ns, client.AuthenticationV1TokenRequest(
        spec=client.V1TokenRequestSpec(audiences=[], expiration_seconds=600))).status.token
    with pytest.raises(ApiException) as denied:
        client.CoreV1Api(_client_with_token(lab, 'hub', token)).list_namespace()
    assert denied.value.status == 401


@pytest.mark.parametrize('context', ['hub', 'member2'])
def test_a_deleted_namespace_disappears(lab, name, wait, context):
    core = _core(lab, context)
    ns = name('doomed')
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=ns)))
    core.create_namespaced_config_map(ns, client.V1ConfigMap(metadata=client.V1ObjectMeta(name='content'), data={'a': 'b'}))
    core.delete_namespace(ns)

    def gone():
        try:
            core.read_namespace(ns)
        except ApiException as exc:
            return exc.status == 404
        return False
    wait(gone, 90, 'namespace %s to be deleted' % ns)


def test_garbage_collection_deletes_dependents(lab, namespace, wait):
    core = _core(lab, 'hub')
    ns = namespace('hub')
    owner = core.create_namespaced_config_map(ns, client.V1ConfigMap(metadata=client.V1ObjectMeta(name='owner')))
    reference = client.V1OwnerReference(api_version='v1', kind='ConfigMap', name='owner', uid=owner.metadata.uid)
    core.create_namespaced_config_map(ns, client.V1ConfigMap(metadata=client.V1ObjectMeta(name='dependent', owner_references=[reference])))
    core.delete_namespaced_config_map('owner', ns)

    def collected():
        try:
            core.read_namespaced_config_map('dependent', ns)
        except ApiException as exc:
            return exc.status == 404
        return False
    wait(collected, 60, 'the garbage collector to delete the dependent')


@pytest.mark.parametrize('context', ['hub', 'member1'])
def test_rbac_denies_an_unprivileged_service_account_and_allows_what_is_granted(lab, namespace, context):
    api = lab.api_client(context)
    core = client.CoreV1Api(api)
    ns = namespace(context)
    core.create_namespaced_service_account(ns, client.V1ServiceAccount(metadata=client.V1ObjectMeta(name='nobody')))
    core.create_namespaced_config_map(ns, client.V1ConfigMap(metadata=client.V1ObjectMeta(name='visible'), data={'k': 'v'}))
    token = core.create_namespaced_service_account_token('nobody', ns, client.AuthenticationV1TokenRequest(
        spec=client.V1TokenRequestSpec(audiences=[], expiration_seconds=600))).status.token
    as_nobody = client.CoreV1Api(_client_with_token(lab, context, token))

    for call in (lambda: as_nobody.list_namespaced_secret('kube-system'),
                 lambda: as_nobody.read_namespaced_config_map('visible', ns),
                 lambda: as_nobody.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name='not-allowed')))):
        with pytest.raises(ApiException) as denied:
            call()
        assert denied.value.status == 403

    rbac = client.RbacAuthorizationV1Api(api)
    rbac.create_namespaced_role(ns, client.V1Role(metadata=client.V1ObjectMeta(name='read-cm'), rules=[
        client.V1PolicyRule(api_groups=[''], resources=['configmaps'], verbs=['get'])]))
    rbac.create_namespaced_role_binding(ns, client.V1RoleBinding(
        metadata=client.V1ObjectMeta(name='read-cm'),
        role_ref=client.V1RoleRef(api_group='rbac.authorization.k8s.io', kind='Role', name='read-cm'),
        subjects=[client.RbacV1Subject(kind='ServiceAccount', name='nobody', namespace=ns)]))
    # The authorizer sees new bindings through an informer, so a grant takes effect a moment later.
    assert _eventually(lambda: as_nobody.read_namespaced_config_map('visible', ns)).data == {'k': 'v'}
    with pytest.raises(ApiException) as still_denied:
        as_nobody.list_namespaced_secret(ns)
    assert still_denied.value.status == 403


def test_a_pod_whose_image_cannot_be_pulled_is_reported_as_a_kubelet_does(lab_controllers, namespace, wait):
    lab = lab_controllers
    core = _core(lab, 'member1')
    ns = namespace('member1')
    image = 'registry.invalid/nothing:1'
    labels = {'app': 'unpullable'}
    deployment = {'apiVersion': 'apps/v1', 'kind': 'Deployment', 'metadata': {'name': 'unpullable'},
                  'spec': {'selector': {'matchLabels': labels},
                           'template': {'metadata': {'labels': labels}, 'spec': {'containers': [{'name': 'main', 'image': image}]}}}}
    apps = client.AppsV1Api(lab.api_client('member1'))
    apps.create_namespaced_deployment(ns, deployment)

    def backing_off():
        pods = core.list_namespaced_pod(ns, label_selector='app=unpullable').items
        statuses = (pods[0].status.container_statuses or []) if pods else []
        waiting = statuses[0].state.waiting if statuses else None
        return (pods[0], waiting) if waiting and waiting.reason == 'ImagePullBackOff' else None
    pod, waiting = wait(backing_off, 60, 'the pod to wait with ImagePullBackOff')
    assert waiting.message.startswith('Back-off pulling image "%s": ErrImagePull: ' % image)
    assert pod.status.phase == 'Pending'
    ready = next(c for c in pod.status.conditions if c.type == 'Ready')
    assert (ready.status, ready.reason, ready.message) == ('False', 'ContainersNotReady', 'containers with unready status: [main]')

    def events():
        found = core.list_namespaced_event(ns, field_selector='involvedObject.name=%s' % pod.metadata.name).items
        seen = {(e.type, e.reason, e.message.split(': failed to pull and unpack')[0]) for e in found
                if e.source.component == 'kubelet' and e.involved_object.field_path == 'spec.containers{main}'}
        return seen if len(seen) == 5 else None
    assert wait(events, 30, 'the kubelet events of the pod') == {
        ('Normal', 'Pulling', 'Pulling image "%s"' % image), ('Warning', 'Failed', 'Failed to pull image "%s"' % image),
        ('Warning', 'Failed', 'Error: ErrImagePull'), ('Normal', 'BackOff', 'Back-off pulling image "%s"' % image),
        ('Warning', 'Failed', 'Error: ImagePullBackOff')}
    status = apps.read_namespaced_deployment_status('unpullable', ns).status
    assert not status.available_replicas and not status.ready_replicas
