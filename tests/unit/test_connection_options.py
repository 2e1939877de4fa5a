"""Impersonation, proxy credentials and kubernetes.core's environment variables: what reaches the request headers,
the proxy and Helm (no API server needed; the lab tests send them to real API servers)."""

import base64
import os
import stat

import pytest
import yaml

from ansible_collections.fleetops.registration.plugins.module_utils.errors import ParameterError
from ansible_collections.fleetops.registration.plugins.module_utils.k8s_auth import ConnectionSettings
from ansible_collections.fleetops.registration.plugins.module_utils.k8s_transport import (
    StaticConfiguration, impersonation_headers, proxy_header_values, proxy_headers_from_environment, with_impersonation,
)
from test_k8s_auth_static import kubeconfig


def settings(config=None, **params):
    return ConnectionSettings(dict(params, kubeconfig=config or kubeconfig({"token": "t0k"})), label="hub")


def basic(text):
    return "Basic " + base64.b64encode(text.encode()).decode()


def test_a_kubeconfig_users_impersonation_stays_on_the_urllib3_path(tmp_path):
    user = {"token": "t", "as": "jane", "as-groups": ["ops", "audit"], "as-uid": "42", "as-user-extra": {"scopes.k8s.io/x": ["a", "b"]}}
    conf = settings(kubeconfig(user)).client_configuration(tmpdir=lambda: str(tmp_path))
    assert isinstance(conf, StaticConfiguration)
    assert impersonation_headers(conf.impersonation) == [
        ("Impersonate-User", "jane"), ("Impersonate-Group", "ops"), ("Impersonate-Group", "audit"), ("Impersonate-Uid", "42"),
        ("Impersonate-Extra-scopes.k8s.io%2Fx", "a"), ("Impersonate-Extra-scopes.k8s.io%2Fx", "b")]


def test_the_options_replace_the_kubeconfigs_impersonation(tmp_path):
    conf = settings(kubeconfig({"token": "t", "as": "jane", "as-uid": "42"}), impersonate_user="bob",
                    impersonate_groups=["ops"]).client_configuration(tmpdir=lambda: str(tmp_path))
    assert conf.impersonation == {"as": "bob", "as-groups": ["ops"]}


def test_each_group_is_a_header_line_of_its_own(tmp_path):
    conf = settings(impersonate_user="bob", impersonate_groups=["ops", "audit"]).client_configuration(tmpdir=lambda: str(tmp_path))
    headers = with_impersonation({"Accept": "application/json"}, conf)
    assert headers.getlist("Impersonate-Group") == ["ops", "audit"] and headers["Impersonate-User"] == "bob"
    assert list(headers.items()).count(("Impersonate-Group", "ops")) == 1 and ("Impersonate-Group", "audit") in list(headers.items())


def test_groups_without_a_user_are_refused_naming_the_option():
    with pytest.raises(ParameterError) as err:
        settings(impersonate_groups=["ops"])
    assert "impersonate_groups" in err.value.message() and "impersonate_user" in err.value.message()
    with pytest.raises(ParameterError) as err:
        ConnectionSettings({"hub_kubeconfig": kubeconfig({"token": "t"}), "hub_impersonate_groups": ["ops"]}, "hub_")
    assert "hub_impersonate_user" in err.value.message()


def test_blank_group_fields_mean_no_impersonation(tmp_path):
    conf = settings(impersonate_user="", impersonate_groups=[""]).client_configuration(tmpdir=lambda: str(tmp_path))
    assert conf.impersonation == {} and impersonation_headers(conf.impersonation) == []


def test_helm_acts_as_the_same_user(tmp_path):
    passed = settings(impersonate_user="bob", impersonate_groups=["ops", "audit"])
    assert passed.helm_arguments() == ["--kube-as-user", "bob", "--kube-as-group", "ops", "--kube-as-group", "audit"]
    # A derived kubeconfig (an override is given) keeps the kubeconfig user's own impersonation.
    derived = settings(kubeconfig({"token": "t", "as": "jane", "as-groups": ["ops"]}), validate_certs=False)
    path, _context = derived.helm_kubeconfig(derived.client_configuration(tmpdir=lambda: str(tmp_path)), str(tmp_path))
    user = yaml.safe_load(open(path))["users"][0]["user"]
    assert (user["as"], user["as-groups"], user["token"]) == ("jane", ["ops"], "t") and derived.helm_arguments() == []


def test_proxy_credentials_from_the_url_as_go_takes_them():
    assert proxy_header_values(None, "http://us%40er:s3cret@proxy:3128") == {"proxy-authorization": basic("us@er:s3cret")}
    assert proxy_header_values({"proxy_basic_auth": "a:b"}, "http://x:y@proxy:3128") == {"proxy-authorization": basic("a:b")}
    assert proxy_header_values({"basic_auth": "c:d", "user_agent": "fleetops"}, "http://proxy:3128") == {
        "authorization": basic("c:d"), "user-agent": "fleetops"}
    assert proxy_header_values(None, "http://proxy:3128") == {}


def test_proxy_headers_from_kubernetes_cores_environment_variables(tmp_path):
    env = {"K8S_AUTH_PROXY_HEADERS_PROXY_BASIC_AUTH": "u:p", "K8S_AUTH_PROXY_HEADERS_USER_AGENT": "ua"}
    assert proxy_headers_from_environment(env) == {"proxy_basic_auth": "u:p", "user_agent": "ua"}
    assert proxy_headers_from_environment({}) is None
    old = dict(os.environ)
    os.environ.update(env)
    try:
        conf = settings(proxy="http://proxy:3128").client_configuration(tmpdir=lambda: str(tmp_path))
        hub = ConnectionSettings({"hub_kubeconfig": kubeconfig({"token": "t"}), "hub_proxy": "http://proxy:3128"}, "hub_")
    finally:
        os.environ.clear()
        os.environ.update(old)
    assert conf.proxy_headers == {"proxy-authorization": basic("u:p"), "user-agent": "ua"}
    assert hub.proxy_headers == {}, "the K8S_AUTH_* variables are the target's, never the hub's"


def test_helm_gets_the_proxy_credentials_in_a_private_kubeconfig(tmp_path):
    given = settings(proxy="http://proxy:3128", proxy_headers={"proxy_basic_auth": "u:p@ss"})
    path, _context = given.helm_kubeconfig(given.client_configuration(tmpdir=lambda: str(tmp_path)), str(tmp_path))
    assert yaml.safe_load(open(path))["clusters"][0]["cluster"]["proxy-url"] == "http://u:p%40ss@proxy:3128"
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600


@pytest.mark.parametrize("option", ["ca_cert", "client_cert", "client_key", "hub_ca_cert"])
def test_a_file_option_naming_no_file_fails_naming_the_option_and_the_file(tmp_path, option):
    missing = str(tmp_path / "nowhere" / "ca.crt")
    prefix = "hub_" if option.startswith("hub_") else ""
    with pytest.raises(ParameterError) as err:
        ConnectionSettings({prefix + "kubeconfig": kubeconfig({"token": "t"}), option: missing}, prefix)
    message = err.value.message()
    assert message.startswith(option + ": ") and missing in message and "does not exist" in message
    # the roles give the hub host's fleetops_ca_file to hub_api_server_ca (hub_endpoint), not to the connection
    assert "fleetops_ca_file" not in message
    with pytest.raises(ParameterError) as err:
        ConnectionSettings({prefix + "kubeconfig": kubeconfig({"token": "t"}), option: str(tmp_path)}, prefix)
    assert "is not a file" in err.value.message()
