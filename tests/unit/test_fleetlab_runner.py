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


def test_restart_backoff_doubles_and_resets_after_a_long_run():
    from fleetlab import supervisor
    assert supervisor.next_backoff(1.0, 5) == 2.0
    assert supervisor.next_backoff(40.0, 5) == supervisor.MAX_BACKOFF
    assert supervisor.next_backoff(40.0, 300) == 1.0
    assert supervisor.exit_record(-9, 't0')['exitCode'] == 137
    assert supervisor.exit_record(0, 't0')['reason'] == 'Completed'
