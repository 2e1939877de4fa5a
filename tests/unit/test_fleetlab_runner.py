"""Pure logic of the lab's pod spec -> process translation (fleetlab.podspec): image matching, $(VAR) expansion, mount path and flag rewriting."""

import pytest

from fleetlab import podspec

TABLE = {'rancher/fleet': 'fleetcontroller', 'rancher/fleet-agent': 'fleetagent',
         'ghcr.io/azure/fleet/member-agent': 'memberagent'}


@pytest.mark.parametrize('image, binary', [
    ('rancher/fleet:dev', 'fleetcontroller'),
    ('docker.io/rancher/fleet-agent:v0.16.0', 'fleetagent'),
    ('registry.local:5000/rancher/fleet-agent:v0.16.0', 'fleetagent'),
    ('rancher/fleet-agent@sha256:' + 'a' * 64, 'fleetagent'),
    ('ghcr.io/azure/fleet/member-agent:main', 'memberagent'),
    ('mirror.corp:5000/azure/fleet/member-agent:v0.14.0', 'memberagent'),  # a mirror keeping the path
    ('registry.invalid/fleet-agent:missing', None),
    ('mirror.corp/fleet/member-agent:main', None),
    ('rancher/fleet-agentx:dev', None),
    ('nginx:1.27', None),
])
def test_lookup_binary_matches_repository_not_tag_or_registry(image, binary):
    assert podspec.lookup_binary(image, TABLE) == binary


def test_image_repository_keeps_registry_port():
    assert podspec.image_repository('localhost:5000/team/app:1.0') == 'localhost:5000/team/app'
    assert podspec.image_repository('localhost:5000/team/app') == 'localhost:5000/team/app'
    assert podspec.image_repository('docker.io/library/busybox') == 'busybox'


def test_expand_follows_kubernetes_rules():
    env = {'A': 'x', 'B': 'y'}
    assert podspec.expand('$(A)-$(B)', env) == 'x-y'
    assert podspec.expand('$(UNSET)', env) == '$(UNSET)'
    assert podspec.expand('$$(A)', env) == '$(A)'
    assert podspec.expand('cost $$5', env) == 'cost $5'


def test_rewrite_paths_only_at_path_boundaries():
    mounts = [('/config', '/lab/root/config'), ('/tmp', '/lab/root/tmp')]
    assert podspec.rewrite_paths('/config/token', mounts) == '/lab/root/config/token'
    assert podspec.rewrite_paths('--file-path=/config/token', mounts) == '--file-path=/lab/root/config/token'
    assert podspec.rewrite_paths('/configuration/x', mounts) == '/configuration/x'
    assert podspec.rewrite_paths('/etc/config/x', mounts) == '/etc/config/x'
    assert podspec.rewrite_paths('a:/tmp,/config', mounts) == 'a:/lab/root/tmp,/lab/root/config'


def test_apply_flags_replaces_both_spellings_and_appends():
    argv = ['bin', '--metrics-bind-address=:8080', '-health-probe-bind-address', ':8081', '--v=5']
    result = podspec.apply_flags(argv, {'--metrics-bind-address': '0', '--health-probe-bind-address': '0'})
    assert result == ['bin', '--v=5', '--metrics-bind-address=0', '--health-probe-bind-address=0']


def test_has_flag():
    assert podspec.has_flag(['bin', 'secret', '--file-path=/x'], '--file-path')
    assert not podspec.has_flag(['bin', 'secret', '--name=x'], '--file-path')


@pytest.mark.parametrize('text, value', [('500m', 0.5), ('1Gi', 2 ** 30), ('128Mi', 128 * 2 ** 20), ('2', 2.0), ('1k', 1000.0)])
def test_quantity(text, value):
    assert podspec.quantity(text) == value


POD = {'metadata': {'name': 'agent-1', 'namespace': 'ns', 'uid': 'u-1', 'labels': {'app': 'a', 'b': 'c'}},
       'spec': {'serviceAccountName': 'sa'}}


def _data(table):
    def lookup(name, optional):
        if name in table:
            return table[name]
        if optional:
            return {}
        raise podspec.NotReadyYet('%s not found' % name)
    return lookup


def test_container_env_resolves_every_source_in_kubelet_order():
    container = {'envFrom': [{'configMapRef': {'name': 'cm'}, 'prefix': 'CM_'}, {'secretRef': {'name': 'sec'}}],
                 'env': [{'name': 'NS', 'valueFrom': {'fieldRef': {'fieldPath': 'metadata.namespace'}}},
                         {'name': 'URL', 'value': 'https://$(HOST)/$(NS)'},
                         {'name': 'TOKEN', 'valueFrom': {'secretKeyRef': {'name': 'sec', 'key': 'token'}}},
                         {'name': 'OPT', 'valueFrom': {'configMapKeyRef': {'name': 'cm', 'key': 'nope', 'optional': True}}},
                         {'name': 'CPU', 'valueFrom': {'resourceFieldRef': {'resource': 'limits.cpu', 'divisor': '1m'}}}],
                 'resources': {'limits': {'cpu': '500m'}}}
    env = podspec.container_env(POD, container, _data({'sec': {'HOST': b'h', 'token': b't'}}),
                                _data({'cm': {'mode': b'x'}}))
    assert env == {'CM_mode': 'x', 'HOST': 'h', 'token': 't', 'NS': 'ns', 'URL': 'https://h/ns', 'TOKEN': 't', 'CPU': '500'}


def test_container_env_waits_for_a_required_key():
    container = {'env': [{'name': 'T', 'valueFrom': {'secretKeyRef': {'name': 'sec', 'key': 'token'}}}]}
    with pytest.raises(podspec.NotReadyYet, match='key "token" not in secret "sec"'):
        podspec.container_env(POD, container, _data({'sec': {}}), _data({}))
    with pytest.raises(podspec.NotReadyYet, match='missing not found'):
        podspec.container_env(POD, {'envFrom': [{'secretRef': {'name': 'missing'}}]}, _data({}), _data({}))


def test_field_value_downward_api():
    assert podspec.field_value(POD, 'spec.serviceAccountName') == 'sa'
    assert podspec.field_value(POD, "metadata.labels['b']") == 'c'
    assert podspec.field_value(POD, 'metadata.labels') == 'app="a"\nb="c"'
    assert podspec.field_value(POD, 'status.podIP') == '127.0.0.1'


def test_host_argv_replaces_the_entrypoint_and_applies_host_settings():
    container = {'command': ['/memberagent', '--v=$(LEVEL)'], 'args': ['--metrics-bind-address=:8090', '--x']}
    argv = podspec.host_argv(container, {'LEVEL': '5'}, '/bin/memberagent-v1', 'memberagent')
    assert argv[:3] == ['/bin/memberagent-v1', '--v=5', '--x']
    assert '--metrics-bind-address=0' in argv and '--metrics-bind-address=:8090' not in argv
    token = podspec.host_argv({'args': ['secret']}, {}, '/bin/authtoken', 'authtoken')
    assert token == ['/bin/authtoken', 'secret', '--file-path=/config/token']


def test_host_env_rewrites_mounts_then_applies_settings_and_fixed_values():
    env = podspec.host_env({'CONFIG_PATH': '/config/token', 'CHECKIN_INTERVAL': '1m', 'HOME': '/'},
                           [('/config', '/pods/x/root/config')], 'fleetagent', {'HOME': '/pods/x/root'})
    assert env['CONFIG_PATH'] == '/pods/x/root/config/token'
    assert env['CHECKIN_INTERVAL'] == '1m'          # env_default does not override the container
    assert env['FLEET_AGENT_PPROF_DISABLED'] == 'true'
    assert env['HOME'] == '/pods/x/root'


def test_the_fleet_agent_retries_for_a_released_lease_at_the_lab_s_period_not_the_chart_s():
    env = podspec.host_env({'CATTLE_ELECTION_RETRY_PERIOD': '10s', 'CATTLE_ELECTION_LEASE_DURATION': '30s'}, [],
                           'fleetagent', {})
    assert env['CATTLE_ELECTION_RETRY_PERIOD'] == podspec.ELECTION_RETRY_PERIOD == '2s'
    assert env['CATTLE_ELECTION_LEASE_DURATION'] == '30s'   # a holder that is still there keeps its Lease as long
    assert env['CHECKIN_INTERVAL'] == podspec.CHECKIN_INTERVAL


def test_restart_backoff_doubles_and_resets_after_a_long_run():
    from fleetlab import supervisor
    assert supervisor.next_backoff(1.0, 5) == 2.0
    assert supervisor.next_backoff(40.0, 5) == supervisor.MAX_BACKOFF
    assert supervisor.next_backoff(40.0, 300) == 1.0
    assert supervisor.exit_record(-9, 't0')['exitCode'] == 137
    assert supervisor.exit_record(0, 't0')['reason'] == 'Completed'


BINARIES = {'fleetagent': '/bin/fleetagent', 'memberagent': '/bin/memberagent'}
MISSING_IMAGE = 'registry.invalid/fleet-agent:missing'
UNPULLED = {'metadata': {'name': 'agent-1', 'namespace': 'ns', 'uid': 'u-1'},
            'spec': {'containers': [{'name': 'agent', 'image': MISSING_IMAGE},
                                    {'name': 'sidecar', 'image': 'ghcr.io/azure/fleet/member-agent:v1'}]}}


def test_missing_images_names_the_unknown_repository_and_the_unbuilt_binary():
    from fleetlab import imagepull
    containers = [{'name': 'a', 'image': 'rancher/fleet-agent:v0.16.0'}, {'name': 'b', 'image': MISSING_IMAGE},
                  {'name': 'c', 'image': 'rancher/fleet:v0.16.0'}]
    assert imagepull.missing_images(containers, TABLE, BINARIES) == [
        ('b', MISSING_IMAGE, 'failed to pull and unpack image "%s": not found in the lab '
                             '(no binary for repository registry.invalid/fleet-agent)' % MISSING_IMAGE),
        ('c', 'rancher/fleet:v0.16.0', 'failed to pull and unpack image "rancher/fleet:v0.16.0": not found in the lab '
                                       '(binary fleetcontroller not built)')]
    assert imagepull.missing_images(containers[:1], TABLE, BINARIES) == []


def _unpulled_status(elapsed):
    from fleetlab import imagepull
    containers = UNPULLED['spec']['containers']
    return imagepull.pod_status(containers, imagepull.missing_images(containers, TABLE, BINARIES), elapsed, 't0')


def test_unpulled_pod_status_is_errimagepull_then_imagepullbackoff():
    status = _unpulled_status(0)
    assert status['phase'] == 'Pending' and status['startTime'] == 't0'
    conditions = {c['type']: c for c in status['conditions']}
    want = {'Initialized': 'True', 'PodScheduled': 'True', 'Ready': 'False', 'ContainersReady': 'False'}
    assert {k: c['status'] for k, c in conditions.items()} == want
    assert conditions['Ready']['reason'] == 'ContainersNotReady'
    assert conditions['Ready']['message'] == 'containers with unready status: [agent sidecar]'
    agent, sidecar = status['containerStatuses']
    assert agent['state']['waiting']['reason'] == 'ErrImagePull'
    assert agent['state']['waiting']['message'].startswith('failed to pull and unpack image "%s"' % MISSING_IMAGE)
    assert {k: agent[k] for k in ('image', 'imageID', 'restartCount', 'ready', 'started')} == {
        'image': MISSING_IMAGE, 'imageID': '', 'restartCount': 0, 'ready': False, 'started': False}
    assert sidecar['state'] == {'waiting': {'reason': 'ContainerCreating'}}
    later = _unpulled_status(6)
    waiting = later['containerStatuses'][0]['state']['waiting']
    assert waiting['reason'] == 'ImagePullBackOff'
    assert waiting['message'].startswith('Back-off pulling image "%s": ErrImagePull: failed to pull' % MISSING_IMAGE)
    assert later['conditions'] == status['conditions']       # no transition: written only when the waiting reason changes
    assert _unpulled_status(60) == later


def test_unpulled_pod_events_follow_the_kubelet_and_do_not_flood():
    from fleetlab import imagepull
    missing = imagepull.missing_images(UNPULLED['spec']['containers'], TABLE, BINARIES)
    first = imagepull.wanted_events(missing, 0)
    assert [(e[0], e[1], e[2], e[4]) for e in first] == [('agent', 'Normal', 'Pulling', 1), ('agent', 'Warning', 'Failed', 1),
                                                         ('agent', 'Warning', 'Failed', 1)]
    assert first[1][3].startswith('Failed to pull image "%s": failed to pull and unpack' % MISSING_IMAGE)
    assert first[2][3] == 'Error: ErrImagePull'
    backoff = imagepull.wanted_events(missing, imagepull.BACKOFF_AFTER)[3:]
    assert [e[1:] for e in backoff] == [('Normal', 'BackOff', 'Back-off pulling image "%s"' % MISSING_IMAGE, 1),
                                        ('Warning', 'Failed', 'Error: ImagePullBackOff', 1)]
    counts = [imagepull.wanted_events(missing, imagepull.BACKOFF_AFTER + s)[3][4] for s in (29, 30, 59, 60, 300)]
    assert counts == [1, 2, 2, 3, 11]


def test_unpulled_pod_event_body_is_a_kubelet_event_on_the_container():
    from fleetlab import imagepull
    wanted = ('agent', 'Warning', 'Failed', 'Error: ErrImagePull', 2)
    body = imagepull.event_body(UNPULLED, wanted, 'agent-1.17f', 't1', 't2')
    assert body['metadata'] == {'name': 'agent-1.17f', 'namespace': 'ns'}
    assert body['involvedObject'] == {'apiVersion': 'v1', 'kind': 'Pod', 'namespace': 'ns', 'name': 'agent-1', 'uid': 'u-1',
                                      'fieldPath': 'spec.containers{agent}'}
    assert (body['type'], body['reason'], body['message'], body['count']) == ('Warning', 'Failed', 'Error: ErrImagePull', 2)
    assert (body['firstTimestamp'], body['lastTimestamp']) == ('t1', 't2')
    assert body['source'] == {'component': 'kubelet'} and body['reportingComponent'] == 'kubelet'


def test_runner_handles_only_unbound_live_pods_without_init_containers():
    from fleetlab.runner import Runner
    assert Runner.candidate(UNPULLED)
    assert not Runner.candidate(dict(UNPULLED, spec=dict(UNPULLED['spec'], nodeName='node-1')))
    assert not Runner.candidate(dict(UNPULLED, spec=dict(UNPULLED['spec'], initContainers=[{'name': 'i', 'image': 'x'}])))
    assert not Runner.candidate(dict(UNPULLED, metadata=dict(UNPULLED['metadata'], deletionTimestamp='t')))
    assert not Runner.candidate(dict(UNPULLED, status={'phase': 'Failed'}))
