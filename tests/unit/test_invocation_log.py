"""What AnsibleModule writes to syslog or journald when a module starts: no credential of a kubeconfig mapping or
of a batch item, which are options Ansible cannot mask as a whole (a FleetModule built as a module builds it)."""

import pytest
from ansible.module_utils.testing import patch_module_args

from ansible_collections.fleetops.registration.plugins.module_utils.module import FleetModule

KUBECONFIG = {
    "apiVersion": "v1", "kind": "Config", "current-context": "hub",
    "clusters": [{"name": "hub", "cluster": {"server": "https://hub.example:6443"}}],
    "contexts": [{"name": "hub", "context": {"cluster": "hub", "user": "admin"}}],
    "users": [{"name": "admin", "user": {"token": "tok-SECRET-1", "client-key-data": "key-SECRET-2",
                                         "auth-provider": {"name": "oidc", "config": {"refresh-token": "rt-SECRET-3"}},
                                         "exec": {"command": "cred", "env": [{"name": "K", "value": "env-SECRET-4"}]}}}],
}


@pytest.fixture
def logged(monkeypatch):
    lines = []
    monkeypatch.setattr(FleetModule, "log", lambda self, msg, log_args=None: lines.append(msg))
    return lines


def start(args, spec):
    with patch_module_args(args):
        return FleetModule(argument_spec=spec, hub_auth=True)


def test_kubeconfig_mappings_are_masked_before_the_invocation_is_logged(logged):
    spec = {"cluster_kubeconfig": {"type": "raw"}}
    module = start({"kubeconfig": KUBECONFIG, "hub_kubeconfig": KUBECONFIG, "cluster_kubeconfig": KUBECONFIG}, spec)
    assert len(logged) == 1 and logged[0].startswith("Invoked with")
    assert "https://hub.example:6443" in logged[0]
    for number in range(1, 5):
        assert "SECRET-%d" % number not in logged[0]
        assert any(value.endswith("SECRET-%d" % number) for value in module.no_log_values)


def test_credentials_in_batch_items_are_masked_before_the_invocation_is_logged(logged):
    spec = {"members": {"type": "list", "elements": "dict"}}
    members = [{"name": "m1", "api_key": "item-SECRET-5", "kubeconfig": KUBECONFIG}, {"name": "m2", "kubeconfig": "/home/me/.kube/m2"}]
    start({"members": members}, spec)
    assert "item-SECRET-5" not in logged[0] and "tok-SECRET-1" not in logged[0]
    assert "/home/me/.kube/m2" in logged[0] and "m1" in logged[0]


def test_a_failed_argument_validation_returns_no_credential(logged, capsys):
    with pytest.raises(SystemExit):
        start({"kubeconfig": KUBECONFIG, "no_such_option": 1}, {})
    result = capsys.readouterr().out
    assert "Unsupported parameters" in result and "https://hub.example:6443" in result
    for number in range(1, 5):
        assert "SECRET-%d" % number not in result
