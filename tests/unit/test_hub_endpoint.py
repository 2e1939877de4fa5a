# -*- coding: utf-8 -*-
"""hub_endpoint: the hub's URL, CA and TLS check as every fleet manager's agent is told them, under one set of option
names (the modules' older names deprecated aliases), and hub_context alone reaching the hub through the environment."""

from __future__ import absolute_import, division, print_function

import base64
import os

import pytest
import yaml
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.fleetops.registration.plugins.module_utils import hub_endpoint
from ansible_collections.fleetops.registration.plugins.module_utils.errors import ParameterError
from ansible_collections.fleetops.registration.plugins.module_utils._kubefleet import hub_access
from ansible_collections.fleetops.registration.plugins.module_utils._rancher_fleet import member as rancher_member

from modrun import run_module

PEM = "-----BEGIN CERTIFICATE-----\nMIIBconnection\n-----END CERTIFICATE-----\n"
GIVEN = PEM.replace("connection", "given")
MANAGER = PEM.replace("connection", "manager")
FILE = PEM.replace("connection", "file")


def _b64(text):
    return base64.b64encode(text.encode()).decode()


def kubeconfig(contexts):
    """A kubeconfig mapping: ``{context: server}``, each cluster trusting PEM."""
    return {"apiVersion": "v1", "kind": "Config", "current-context": list(contexts)[0],
            "clusters": [{"name": c, "cluster": {"server": s, "certificate-authority-data": _b64(PEM)}} for c, s in contexts.items()],
            "users": [{"name": "u", "user": {"token": "not-a-real-token"}}],
            "contexts": [{"name": c, "context": {"cluster": c, "user": "u"}} for c in contexts]}


@pytest.fixture
def env(tmp_path, monkeypatch):
    """No kubeconfig anywhere in the environment, to start with."""
    for variable in ("KUBECONFIG", "K8S_AUTH_KUBECONFIG", "KUBERNETES_SERVICE_HOST"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return tmp_path


def write(path, config):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(config))
    return str(path)


def test_order_option_then_the_managers_own_then_hub_ca_cert_then_the_hub_connection(env):
    ca_file = env / "ca.pem"
    ca_file.write_text(FILE)
    connection = {"hub_kubeconfig": kubeconfig({"hub": "https://connection:6443"})}
    given = dict(connection, hub_api_server_url="https://given:6443", hub_api_server_ca=GIVEN, hub_ca_cert=str(ca_file))
    assert hub_endpoint.resolve(given, "https://manager:6443", MANAGER, "token") == (
        "https://given:6443", "hub_api_server_url", GIVEN, "hub_api_server_ca", False)
    assert hub_endpoint.resolve(dict(connection, hub_ca_cert=str(ca_file)), "https://manager:6443", MANAGER, "token") == (
        "https://manager:6443", "token", MANAGER, "token", False)
    assert hub_endpoint.resolve(dict(connection, hub_ca_cert=str(ca_file))) == (
        "https://connection:6443", "hub_kubeconfig", FILE, "hub_ca_cert", False)
    assert hub_endpoint.resolve(connection) == ("https://connection:6443", "hub_kubeconfig", PEM, "hub_kubeconfig", False)


def test_the_hub_connection_is_read_only_when_the_options_leave_something_open(env):
    broken = {"hub_kubeconfig": str(env / "missing.yaml")}  # reading it would fail
    endpoint = hub_endpoint.resolve(dict(broken, hub_api_server_url="https://given:6443", hub_api_server_ca=str(write_pem(env))))
    assert endpoint.url == "https://given:6443" and endpoint.ca == GIVEN
    with pytest.raises(ParameterError):
        hub_endpoint.resolve(dict(broken, hub_api_server_url="https://given:6443"))


def write_pem(env):
    path = env / "given.pem"
    path.write_text(GIVEN)
    return path


def test_without_a_hub_connection_values_stay_unknown_and_require_names_the_option(env):
    endpoint = hub_endpoint.resolve({})
    assert endpoint == (None, None, None, None, False)
    with pytest.raises(ParameterError) as err:
        hub_endpoint.require(endpoint)
    assert err.value.param == "hub_api_server_url" and "fleetops_api_server_url" in err.value.message()
    with pytest.raises(ParameterError) as err:
        hub_endpoint.require(hub_endpoint.resolve({"hub_api_server_url": "https://hub:6443"}))
    assert err.value.param == "hub_api_server_ca" and "fleetops_ca_file" in err.value.message()
    insecure = hub_endpoint.resolve({"hub_api_server_url": "https://hub:6443", "hub_insecure_skip_tls_verify": True})
    assert hub_endpoint.require(insecure).insecure and hub_endpoint.require(insecure, ca=False).ca is None


@pytest.mark.parametrize("source", ["option", "manager", "connection"])
def test_a_url_must_be_https_whichever_gave_it(env, source):
    params = {"hub_api_server_url": "http://hub:6443"} if source == "option" else {}
    if source == "connection":
        params["hub_kubeconfig"] = kubeconfig({"hub": "http://hub:6443"})
    with pytest.raises(ParameterError) as err:
        hub_endpoint.resolve(params, "http://hub:6443" if source == "manager" else None)
    assert err.value.param == "hub_api_server_url" and "https://" in err.value.message()


def test_only_the_certificates_of_a_ca_bundle_go_on():
    bundle = "-----BEGIN PRIVATE KEY-----\nMIIEsecret\n-----END PRIVATE KEY-----\n# the hub CA\n" + GIVEN
    assert hub_endpoint.resolve({"hub_api_server_ca": bundle}).ca == GIVEN
    with pytest.raises(ParameterError) as err:
        hub_endpoint.resolve({"hub_api_server_ca": "not a certificate"})
    assert err.value.param == "hub_api_server_ca"


def test_hub_context_alone_finds_the_hub_in_the_files_kubeconfig_lists(env, monkeypatch):
    """kubectl users: $KUBECONFIG names the hub's file and the members' (colon-separated), no kubeconfig option."""
    params = {"hub_context": "hub"}
    assert not hub_endpoint.hub_connected(params)  # no kubeconfig anywhere: nothing to find the context in
    members = write(env / "members.yaml", kubeconfig({"member1": "https://member1:6443"}))
    hub = write(env / "hub.yaml", kubeconfig({"hub": "https://hub:6443"}))
    monkeypatch.setenv("KUBECONFIG", os.pathsep.join([members, hub]))
    assert hub_endpoint.hub_connected(params)
    assert hub_endpoint.resolve(params)[:4] == ("https://hub:6443", "hub_kubeconfig", PEM, "hub_kubeconfig")
    # K8S_AUTH_KUBECONFIG (kubernetes.core's variable, as an AWX credential sets it) comes first, as for the target
    other = write(env / "other.yaml", kubeconfig({"hub": "https://other-hub:6443"}))
    monkeypatch.setenv("K8S_AUTH_KUBECONFIG", other)
    assert hub_endpoint.resolve(params).url == "https://other-hub:6443"
    assert hub_endpoint.hub_connected({"hub_host": "https://h:6443"}) and not hub_endpoint.hub_connected({})


def test_both_managers_take_the_endpoint_from_the_one_place(env):
    params = {"hub_api_server_url": "https://given:6443/", "hub_api_server_ca": GIVEN}
    assert hub_access.agent_endpoint(params) == ("https://given:6443", GIVEN, False)
    assert rancher_member.expected_endpoint(params, None) == (("https://given:6443", GIVEN), None)


class _Hub:
    """A hub whose Fleet configuration (ConfigMap fleet-controller) is counted as it is read."""

    def __init__(self):
        self.reads = 0

    def get(self, _resource, _name, _namespace=None):
        self.reads += 1
        config = '{"apiServerURL": "https://fleet:6443", "apiServerCA": "%s"}' % _b64(MANAGER)
        return {"data": {"config": config}}


def test_fleets_configuration_is_read_once_per_hub_for_a_batch_of_members():
    hub = _Hub()
    for _member in range(3):
        assert rancher_member.expected_endpoint({}, hub) == (("https://fleet:6443", MANAGER), None)
    assert hub.reads == 1
    assert rancher_member.expected_endpoint({"hub_api_server_url": "https://given:6443"}, hub)[0][0] == "https://given:6443"


MODULE_ALIASES = {
    "fleet_agent": {"api_server_url": "hub_api_server_url", "hub_url": "hub_api_server_url", "api_server_ca": "hub_api_server_ca"},
    "kubefleet_member_agent": {"hub_url": "hub_api_server_url", "hub_ca_pem": "hub_api_server_ca"},
    "fleet_cluster": {"agent_api_server_url": "hub_api_server_url", "agent_api_server_ca": "hub_api_server_ca"},
}


def test_older_names_are_deprecated_aliases_removed_in_a_major_release():
    spec = hub_endpoint.options(url_aliases=["hub_url"], ca_aliases=["hub_ca_pem"])
    result = ArgumentSpecValidator(spec).validate({"hub_url": "https://hub:6443", "hub_ca_pem": GIVEN})
    assert result.validated_parameters["hub_api_server_url"] == "https://hub:6443"
    assert result.validated_parameters["hub_api_server_ca"] == GIVEN
    deprecated = sorted((d["msg"], d["version"], d["collection_name"]) for d in result._deprecations)  # pylint: disable=protected-access
    assert [name for name in ("hub_url", "hub_ca_pem") if not any(name in msg for msg, _v, _c in deprecated)] == []
    assert set((version, collection) for _m, version, collection in deprecated) == {("1.0.0", "fleetops.registration")}
    assert hub_endpoint.options() == {"hub_api_server_url": {"type": "str"}, "hub_api_server_ca": {"type": "str"}}


@pytest.mark.parametrize("module, alias", [(m, a) for m, aliases in sorted(MODULE_ALIASES.items()) for a in sorted(aliases)])
def test_each_modules_older_name_still_works_and_warns(tmp_path, module, alias):
    """An old name reaches the new option (its https:// check fails naming the new name), with a deprecation."""
    option = MODULE_ALIASES[module][alias]
    value = "http://hub:6443" if option == "hub_api_server_url" else "not a certificate"
    args = {"fleet_agent": {"values_file": str(tmp_path / "values.yaml"), "chart_ref": str(tmp_path)},
            "kubefleet_member_agent": {"name": "east-1", "token": "not-a-real-token", "chart_ref": str(tmp_path)},
            "fleet_cluster": {"name": "east-1", "namespace": "fleet-default",
                              "cluster_kubeconfig_content": yaml.safe_dump(kubeconfig({"c": "https://c:6443"}))},
            }[module]
    (tmp_path / "values.yaml").write_text(yaml.safe_dump({"token": "abc", "tokenName": "t", "apiServerCA": PEM}))
    args = dict(args, kubeconfig=write(tmp_path / "nowhere.yaml", kubeconfig({"x": "https://127.0.0.1:9"})), **{alias: value})
    if module == "kubefleet_member_agent" and option == "hub_api_server_ca":
        args["hub_api_server_url"] = "https://hub:6443"
    result = run_module(module, args)
    assert result.failed and result["msg"].startswith(option + ":"), result.get("msg")
    # ansible-core 2.21 puts the text in the deprecation's event, older ones in its msg
    assert any("Alias '%s' is deprecated" % alias in str(d) and "1.0.0" in str(d) for d in result.get("deprecations") or []), \
        result.get("deprecations")
