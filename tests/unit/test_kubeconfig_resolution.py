"""Which kubeconfig a connection uses when no option names one: kubectl's rules for $KUBECONFIG and ~/.kube/config."""

import os

import pytest
import yaml

from ansible_collections.fleetops.registration.plugins.module_utils import k8s_auth
from ansible_collections.fleetops.registration.plugins.module_utils.kubeconfig import merged_kubeconfig


def write(path, contexts, current=None, ca="ca.crt"):
    doc = {"apiVersion": "v1", "kind": "Config",
           "clusters": [{"name": c, "cluster": {"server": "https://%s:6443" % server, "certificate-authority": ca}} for c, server in contexts.items()],
           "users": [{"name": c, "user": {"client-certificate": "pki/%s.crt" % c, "client-key": "/abs/%s.key" % c}} for c in contexts],
           "contexts": [{"name": c, "context": {"cluster": c, "user": c}} for c in contexts]}
    if current:
        doc["current-context"] = current
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(doc))
    return str(path)


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    write(tmp_path / "home" / ".kube" / "config", {"hub": "decoy"}, current="hub")
    return tmp_path


def test_several_files_merge_with_the_first_one_winning(home, monkeypatch):
    first = write(home / "a" / "hub.yaml", {"hub": "hub"}, current="hub")
    second = write(home / "b" / "edge.yaml", {"hub": "impostor", "edge": "edge"}, current="edge")
    monkeypatch.setenv("KUBECONFIG", os.pathsep.join([first, str(home / "missing.yaml"), second]))
    config = k8s_auth.ConnectionSettings({}).kubeconfig
    assert config["current-context"] == "hub"
    assert [c["name"] for c in config["contexts"]] == ["hub", "edge"]
    clusters = dict((c["name"], c["cluster"]) for c in config["clusters"])
    assert clusters["hub"]["server"] == "https://hub:6443" and clusters["edge"]["server"] == "https://edge:6443"
    assert clusters["edge"]["certificate-authority"] == str(home / "b" / "ca.crt")
    users = dict((u["name"], u["user"]) for u in config["users"])
    assert users["edge"]["client-certificate"] == str(home / "b" / "pki" / "edge.crt")
    assert users["edge"]["client-key"] == "/abs/edge.key"
    (home / "b" / "ca.crt").write_text("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
    hub = k8s_auth.ConnectionSettings({"hub_context": "edge"}, prefix="hub_", label="hub")
    assert hub.server_and_ca() == ("https://edge:6443", "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")


def test_one_file_is_used_as_it_is_and_replaces_the_home_kubeconfig(home, monkeypatch):
    only = write(home / "only.yaml", {"x": "x"})
    monkeypatch.setenv("KUBECONFIG", only + os.pathsep + str(home / "missing.yaml"))
    assert k8s_auth.ConnectionSettings({}).kubeconfig == only
    monkeypatch.setenv("KUBECONFIG", str(home / "missing.yaml"))
    assert k8s_auth.ConnectionSettings({}).kubeconfig is None  # kubectl does not fall back to ~/.kube/config either


def test_without_kubeconfig_the_home_file_then_the_option_and_host_win(home, monkeypatch):
    assert k8s_auth.ConnectionSettings({}).kubeconfig == str(home / "home" / ".kube" / "config")
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")  # a kubeconfig file still comes before the in-cluster account
    assert k8s_auth.ConnectionSettings({}).kubeconfig == str(home / "home" / ".kube" / "config")
    monkeypatch.setenv("KUBECONFIG", write(home / "env.yaml", {"y": "y"}))
    assert k8s_auth.ConnectionSettings({"kubeconfig": "/given"}).kubeconfig == "/given"
    assert k8s_auth.ConnectionSettings({"host": "https://h"}).kubeconfig is None


def test_a_broken_file_in_the_list_is_named(home):
    bad = home / "bad.yaml"
    bad.write_text("- not a kubeconfig\n")
    with pytest.raises(Exception) as err:
        merged_kubeconfig([write(home / "ok.yaml", {"a": "a"}), str(bad)], param="kubeconfig (from $KUBECONFIG)")
    assert "bad.yaml" in str(err.value) and "$KUBECONFIG" in str(err.value)


def test_the_kubeconfig_option_takes_a_list_of_files_as_kubernetes_core_does(home):
    first = write(home / "a" / "hub.yaml", {"hub": "hub"}, current="hub")
    second = write(home / "b" / "edge.yaml", {"edge": "edge"})
    merged = k8s_auth.ConnectionSettings({"kubeconfig": os.pathsep.join([first, second])}).kubeconfig
    assert [c["name"] for c in merged["contexts"]] == ["hub", "edge"] and merged["current-context"] == "hub"
    assert k8s_auth.ConnectionSettings({"kubeconfig": first + os.pathsep + str(home / "missing.yaml")}).kubeconfig == first


def test_an_exec_plugin_named_by_a_relative_path_is_found_from_its_file(home):
    path = home / "c" / "exec.yaml"
    path.parent.mkdir(parents=True)
    users = [{"name": "rel", "user": {"exec": {"command": "./bin/token", "apiVersion": "client.authentication.k8s.io/v1"}}},
             {"name": "onpath", "user": {"exec": {"command": "aws", "apiVersion": "client.authentication.k8s.io/v1"}}}]
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "Config", "users": users}))
    merged = merged_kubeconfig([write(home / "a.yaml", {"x": "x"}), str(path)])
    commands = dict((u["name"], u["user"].get("exec", {}).get("command")) for u in merged["users"])
    assert os.path.normpath(commands["rel"]) == str(home / "c" / "bin" / "token") and commands["onpath"] == "aws"
