"""A FleetModule built as a module builds it: what AnsibleModule writes to syslog or journald when a module starts
(no credential of a kubeconfig mapping or of a batch item, options Ansible cannot mask as a whole), and the
environment Helm runs in."""

import pytest
from ansible.module_utils.common.parameters import PASS_VARS
from ansible.module_utils.testing import patch_module_args

from ansible_collections.fleetops.registration.plugins.module_utils.argspec import HELM, HUB_AUTH, OLD_HUB_AUTH, merge
from ansible_collections.fleetops.registration.plugins.module_utils.errors import ParameterError
from ansible_collections.fleetops.registration.plugins.module_utils.helm import check_storage_driver
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
        return FleetModule(argument_spec=merge(HUB_AUTH, spec))


def test_kubeconfig_mappings_are_masked_before_the_invocation_is_logged(logged):
    spec = {"cluster_kubeconfig": {"type": "raw"}}
    module = start({"kubeconfig": KUBECONFIG, "hub_kubeconfig": KUBECONFIG, "cluster_kubeconfig": KUBECONFIG}, spec)
    assert len(logged) == 1 and logged[0].startswith("Invoked with")
    assert "https://hub.example:6443" in logged[0]
    for number in range(1, 5):
        assert "SECRET-%d" % number not in logged[0]
        assert any(value.endswith("SECRET-%d" % number) for value in module.no_log_values)


def test_the_old_hub_of_a_move_takes_the_same_connection_options_masked_the_same_way(logged):
    module = start({"old_hub_kubeconfig": KUBECONFIG, "old_hub_api_key": "old-SECRET-6", "old_hub_host": "https://old.example:6443"},
                   OLD_HUB_AUTH)
    assert "SECRET" not in logged[0] and "https://old.example:6443" in logged[0]
    settings = module.settings("old_hub_")
    assert settings.label == "old hub" and settings.param("kubeconfig") == "old_hub_kubeconfig"


def test_credentials_in_batch_items_are_masked_before_the_invocation_is_logged(logged):
    spec = {"members": {"type": "list", "elements": "dict"}}
    members = [{"name": "m1", "api_key": "item-SECRET-5", "kubeconfig": KUBECONFIG}, {"name": "m2", "kubeconfig": "/home/me/.kube/m2"}]
    start({"members": members}, spec)
    assert "item-SECRET-5" not in logged[0] and "tok-SECRET-1" not in logged[0]
    assert "/home/me/.kube/m2" in logged[0] and "m1" in logged[0]


def test_a_failed_argument_validation_returns_no_credential(logged, capsys):
    args = {"kubeconfig": KUBECONFIG, "no_such_option": 1}
    if "inject_invocation" in PASS_VARS:
        # ansible-core 2.21 returns the module's arguments with a result only when asked (ANSIBLE_INJECT_INVOCATION);
        # earlier releases always do.
        args["_ansible_inject_invocation"] = True
    with pytest.raises(SystemExit):
        start(args, {})
    result = capsys.readouterr().out
    assert "Unsupported parameters" in result and "https://hub.example:6443" in result
    for number in range(1, 5):
        assert "SECRET-%d" % number not in result


def test_helm_runs_with_the_users_configuration_and_the_given_registry_and_repository_files(logged, monkeypatch):
    monkeypatch.delenv("HELM_DRIVER", raising=False)
    with patch_module_args({"host": "https://hub.example:6443", "helm_binary": "/bin/true",
                            "helm_registry_config": "/home/me/registry.json", "helm_repository_config": "/home/me/repos.yaml"}):
        module = FleetModule(argument_spec=HELM)
    env = module.helm().env
    assert env["HELM_REGISTRY_CONFIG"] == "/home/me/registry.json" and env["HELM_REPOSITORY_CONFIG"] == "/home/me/repos.yaml"
    assert "HELM_CONFIG_HOME" not in env, "a private HELM_CONFIG_HOME hides the user's registry logins and repositories"
    assert env["HELM_CACHE_HOME"].startswith(module.tmpdir)


@pytest.mark.parametrize("driver, refused", [("configmap", True), ("sql", True), ("memory", True), ("secret", False),
                                             ("secrets", False), ("", False)])
def test_helm_storage_drivers_other_than_secrets_are_refused(monkeypatch, driver, refused):
    monkeypatch.setenv("HELM_DRIVER", driver)
    if not refused:
        check_storage_driver()
        return
    with pytest.raises(ParameterError) as err:
        check_storage_driver()
    assert err.value.param == "HELM_DRIVER" and driver in err.value.msg


def test_a_no_log_task_returns_no_kubeconfig_credential_either(logged, monkeypatch, capsys):
    with patch_module_args({"kubeconfig": KUBECONFIG, "_ansible_no_log": True}):
        module = FleetModule(argument_spec=HUB_AUTH)
        assert logged == []  # AnsibleModule does not log a no_log task's invocation
        with pytest.raises(SystemExit):
            module.exit_json(changed=False)
    result = capsys.readouterr().out
    for number in range(1, 5):
        assert "SECRET-%d" % number not in result


def test_a_blank_mapping_option_counts_as_not_set(logged):
    with patch_module_args({"host": "https://hub.example:6443", "proxy_headers": "", "hub_proxy_headers": "",
                            "impersonate_groups": ""}):
        module = FleetModule(argument_spec=HUB_AUTH)
    assert module.params["proxy_headers"] is None and module.params["hub_proxy_headers"] is None
    assert module.settings().proxy_headers == {} and module.settings().impersonate_groups == []
