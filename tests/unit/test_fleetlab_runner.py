"""Pure logic of the lab's agent runner: image matching, $(VAR) expansion, mount path and flag rewriting."""

import pytest

from fleetlab import runner

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
    assert runner.lookup_binary(image, TABLE) == binary


def test_image_repository_keeps_registry_port():
    assert runner.image_repository('localhost:5000/team/app:1.0') == 'localhost:5000/team/app'
    assert runner.image_repository('localhost:5000/team/app') == 'localhost:5000/team/app'
    assert runner.image_repository('docker.io/library/busybox') == 'busybox'


def test_expand_follows_kubernetes_rules():
    env = {'A': 'x', 'B': 'y'}
    assert runner.expand('$(A)-$(B)', env) == 'x-y'
    assert runner.expand('$(UNSET)', env) == '$(UNSET)'
    assert runner.expand('$$(A)', env) == '$(A)'
    assert runner.expand('cost $$5', env) == 'cost $5'


def test_rewrite_paths_only_at_path_boundaries():
    mounts = [('/config', '/lab/root/config'), ('/tmp', '/lab/root/tmp')]
    assert runner.rewrite_paths('/config/token', mounts) == '/lab/root/config/token'
    assert runner.rewrite_paths('--file-path=/config/token', mounts) == '--file-path=/lab/root/config/token'
    assert runner.rewrite_paths('/configuration/x', mounts) == '/configuration/x'
    assert runner.rewrite_paths('/etc/config/x', mounts) == '/etc/config/x'
    assert runner.rewrite_paths('a:/tmp,/config', mounts) == 'a:/lab/root/tmp,/lab/root/config'


def test_apply_flags_replaces_both_spellings_and_appends():
    argv = ['bin', '--metrics-bind-address=:8080', '-health-probe-bind-address', ':8081', '--v=5']
    result = runner.apply_flags(argv, {'--metrics-bind-address': '0', '--health-probe-bind-address': '0'})
    assert result == ['bin', '--v=5', '--metrics-bind-address=0', '--health-probe-bind-address=0']


def test_has_flag():
    assert runner.has_flag(['bin', 'secret', '--file-path=/x'], '--file-path')
    assert not runner.has_flag(['bin', 'secret', '--name=x'], '--file-path')


@pytest.mark.parametrize('text, value', [('500m', 0.5), ('1Gi', 2 ** 30), ('128Mi', 128 * 2 ** 20), ('2', 2.0), ('1k', 1000.0)])
def test_quantity(text, value):
    assert runner.quantity(text) == value
