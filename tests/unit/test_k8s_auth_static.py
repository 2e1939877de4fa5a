"""Which connections skip the kubernetes package (StaticConfiguration) and what they carry; no API server needed."""

import base64
import os
import stat

import pytest
import yaml

from ansible_collections.fleetops.registration.plugins.module_utils.k8s_auth import ConnectionSettings
from ansible_collections.fleetops.registration.plugins.module_utils.k8s_transport import StaticConfiguration, proxy_from_environment

PEM = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"


def b64(text):
    return base64.b64encode(text.encode()).decode()


def kubeconfig(user, cluster=None):
    cluster = dict({"server": "https://hub.example:6443", "certificate-authority-data": b64(PEM)}, **(cluster or {}))
    return {"apiVersion": "v1", "kind": "Config", "current-context": "hub",
            "clusters": [{"name": "c", "cluster": cluster}], "users": [{"name": "u", "user": user}],
            "contexts": [{"name": "hub", "context": {"cluster": "c", "user": "u"}}]}


def configuration(config, tmp_path, **params):
    return ConnectionSettings(dict(params, kubeconfig=config), label="hub").client_configuration(tmpdir=lambda: str(tmp_path))


def test_a_token_kubeconfig_needs_only_urllib3(tmp_path):
    conf = configuration(kubeconfig({"token": "t0k"}), tmp_path)
    assert isinstance(conf, StaticConfiguration)
    assert (conf.host, conf.ca_cert_data, conf.api_key, conf.verify_ssl) == (
        "https://hub.example:6443", PEM, {"authorization": "Bearer t0k"}, True)


def test_inline_client_keys_are_written_0600_and_named_per_connection(tmp_path):
    conf = configuration(kubeconfig({"client-certificate-data": b64("CERT"), "client-key-data": b64("KEY")}), tmp_path)
    assert open(conf.cert_file).read() == "CERT" and open(conf.key_file).read() == "KEY"
    assert os.path.basename(conf.key_file).startswith("target-client-key-") and conf.key_file.endswith(".pem")
    assert stat.S_IMODE(os.stat(conf.key_file).st_mode) == 0o600
    # A second cluster in the same process (member_info's members) keeps its own key; the first one's stays.
    other = configuration(kubeconfig({"client-certificate-data": b64("CERT2"), "client-key-data": b64("KEY2")}), tmp_path)
    assert open(other.key_file).read() == "KEY2" and open(conf.key_file).read() == "KEY"


def test_files_named_by_a_kubeconfig_are_relative_to_it(tmp_path):
    (tmp_path / "token").write_text("from-file\n")
    path = tmp_path / "config"
    path.write_text(yaml.safe_dump(kubeconfig({"tokenFile": "token", "client-certificate": "c.pem", "client-key": "k.pem"},
                                              {"certificate-authority": "ca.pem", "certificate-authority-data": None})))
    conf = configuration(str(path), tmp_path)
    assert conf.api_key == {"authorization": "Bearer from-file"}
    assert (conf.ssl_ca_cert, conf.cert_file) == (str(tmp_path / "ca.pem"), str(tmp_path / "c.pem"))


def test_exec_plugins_and_auth_providers_go_through_the_kubernetes_package(tmp_path):
    for user in ({"exec": {"command": "aws", "apiVersion": "client.authentication.k8s.io/v1beta1"}},
                 {"auth-provider": {"name": "oidc"}}, {"username": "a", "password": "b"}):
        conf = configuration(kubeconfig(user), tmp_path)
        assert not isinstance(conf, StaticConfiguration), user


def test_module_options_override_the_kubeconfig(tmp_path):
    ca = tmp_path / "ca.pem"
    ca.write_text(PEM)
    conf = configuration(kubeconfig({"token": "t0k"}), tmp_path, host="https://other:6443/", api_key="k2",
                         validate_certs=False, ca_cert=str(ca), proxy="http://proxy:3128")
    assert (conf.host, conf.api_key["authorization"], conf.verify_ssl, conf.ssl_ca_cert, conf.ca_cert_data, conf.proxy) == (
        "https://other:6443", "Bearer k2", False, str(ca), None, "http://proxy:3128")


def test_host_and_api_key_alone_are_static(tmp_path):
    conf = ConnectionSettings({"host": "https://h:6443", "api_key": "k"}).client_configuration(tmpdir=lambda: str(tmp_path))
    assert isinstance(conf, StaticConfiguration) and conf.api_key == {"authorization": "Bearer k"}


def test_helm_gets_the_in_memory_ca_as_data(tmp_path):
    settings = ConnectionSettings({"kubeconfig": kubeconfig({"token": "t0k"})})
    path, context = settings.helm_kubeconfig(settings.client_configuration(tmpdir=lambda: str(tmp_path)), str(tmp_path))
    cluster = yaml.safe_load(open(path))["clusters"][0]["cluster"]
    assert context == "fleetops" and base64.b64decode(cluster["certificate-authority-data"]).decode() == PEM


@pytest.mark.parametrize("url, environ, no_proxy, expected", [
    ("https://hub.example:6443", {"HTTPS_PROXY": "http://proxy:3128"}, None, "http://proxy:3128"),
    ("https://hub.example:6443", {"https_proxy": "proxy:3128"}, None, "http://proxy:3128"),
    ("https://hub.example:6443", {"HTTPS_PROXY": "http://upper:1", "https_proxy": "http://lower:1"}, None, "http://upper:1"),
    ("https://hub.example:6443", {"HTTP_PROXY": "http://proxy:3128"}, None, None),  # https takes HTTPS_PROXY only
    ("https://localhost:6443", {"HTTPS_PROXY": "http://proxy:3128"}, None, None),
    ("https://127.0.0.1:6443", {"HTTPS_PROXY": "http://proxy:3128"}, None, None),
    ("https://[::1]:6443", {"HTTPS_PROXY": "http://proxy:3128"}, None, None),
    ("https://hub.example:6443", {"HTTPS_PROXY": "http://p:1", "NO_PROXY": "example"}, None, None),  # and subdomains
    ("https://hub.example:6443", {"HTTPS_PROXY": "http://p:1", "NO_PROXY": ".hub.example"}, None, "http://p:1"),
    ("https://a.hub.example:6443", {"HTTPS_PROXY": "http://p:1", "NO_PROXY": ".hub.example"}, None, None),
    ("https://10.1.2.3:6443", {"HTTPS_PROXY": "http://p:1", "NO_PROXY": "10.0.0.0/8"}, None, None),
    ("https://10.1.2.3:6443", {"HTTPS_PROXY": "http://p:1", "NO_PROXY": "10.1.2.4,other"}, None, "http://p:1"),
    ("https://hub.example:6443", {"HTTPS_PROXY": "http://p:1", "NO_PROXY": "hub.example:443"}, None, "http://p:1"),
    ("https://hub.example:6443", {"HTTPS_PROXY": "http://p:1", "NO_PROXY": "hub.example:6443"}, None, None),
    ("https://hub.example:6443", {"HTTPS_PROXY": "http://p:1", "NO_PROXY": "*"}, None, None),
    ("https://hub.example:6443", {"HTTPS_PROXY": "http://p:1", "NO_PROXY": "hub.example"}, "", "http://p:1"),  # the option replaces it
    ("https://hub.example:6443", {"HTTPS_PROXY": "http://p:1"}, "other, hub.example", None),
])
def test_the_environments_proxy_as_go_programs_pick_it(url, environ, no_proxy, expected):
    assert proxy_from_environment(url, no_proxy, environ) == expected


def test_an_option_or_kubeconfig_proxy_wins_over_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("HTTPS_PROXY", "http://env-proxy:3128")
    monkeypatch.delenv("NO_PROXY", raising=False)
    conf = ConnectionSettings({"host": "https://hub.example:6443", "api_key": "k"}).client_configuration(tmpdir=lambda: str(tmp_path))
    assert conf.proxy == "http://env-proxy:3128"
    conf = ConnectionSettings({"host": "https://hub.example:6443", "proxy": "http://given:1"}).client_configuration(tmpdir=lambda: str(tmp_path))
    assert conf.proxy == "http://given:1"
    conf = ConnectionSettings({"host": "https://hub.example:6443", "no_proxy": "example"}).client_configuration(tmpdir=lambda: str(tmp_path))
    assert conf.proxy is None
