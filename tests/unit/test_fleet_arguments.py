"""Bad input to the Rancher Fleet modules fails in the module process, before any API call.

The modules run as real processes (tests/modrun.py); the kubeconfig points at a port where nothing
listens, so a module that tried to reach a cluster would fail with a connection error instead of
the parameter error asserted here.
"""

import pytest
import yaml

from modrun import run_module

CA = "-----BEGIN CERTIFICATE-----\nMIIBdummy\n-----END CERTIFICATE-----\n"


@pytest.fixture
def nowhere(tmp_path):
    """A kubeconfig for an API server that does not exist."""
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "x",
        "clusters": [{"name": "x", "cluster": {"server": "https://127.0.0.1:9", "insecure-skip-tls-verify": True}}],
        "users": [{"name": "x", "user": {"token": "not-a-real-token"}}],
        "contexts": [{"name": "x", "context": {"cluster": "x", "user": "x"}}],
    }))
    return str(path)


def _fails(result, *words):
    assert result.failed, result
    for word in words:
        assert word in result["msg"], (word, result["msg"])
    assert "cannot reach" not in result["msg"]


@pytest.mark.parametrize("ttl", ["10d", "-1h", "1w", "3600"])
def test_token_bad_ttl(nowhere, ttl):
    result = run_module("fleet_registration_token", {"kubeconfig": nowhere, "name": "t", "namespace": "clusters", "ttl": ttl})
    _fails(result, "ttl:", "1h30m")


def test_token_ttl_above_the_ceiling(nowhere):
    result = run_module("fleet_registration_token", {"kubeconfig": nowhere, "name": "t", "namespace": "clusters", "ttl": "48h"})
    _fails(result, "ttl:", "longer than 24h", "max_ttl")
    result = run_module("fleet_registration_token", {"kubeconfig": nowhere, "name": "t", "namespace": "clusters", "ttl": "48h",
                                                     "max_ttl": "1w"})
    _fails(result, "max_ttl:", "not a duration Fleet accepts")


@pytest.mark.parametrize("ttl", ["0", "0s", "0h0m"])
def test_token_ttl_that_never_expires(nowhere, ttl):
    result = run_module("fleet_registration_token", {"kubeconfig": nowhere, "name": "t", "namespace": "clusters", "ttl": ttl})
    _fails(result, "ttl:", "never expires", "member_join_fleet_token_ttl")


def test_token_name_too_long(nowhere):
    result = run_module("fleet_registration_token", {"kubeconfig": nowhere, "name": "t" * 64, "namespace": "clusters"})
    _fails(result, "name:", "63")


@pytest.mark.parametrize("param,value", [("release_namespace", "kube-system"), ("release_name", "agent")])
def test_agent_wrong_namespace_or_release(nowhere, param, value):
    result = run_module("fleet_agent", {"kubeconfig": nowhere, "values_file": "/nonexistent", "chart_ref": "/nonexistent", param: value})
    _fails(result, param + ":", "cattle-fleet-system" if param == "release_namespace" else "fleet-agent")


def test_agent_needs_a_token_source(nowhere):
    result = run_module("fleet_agent", {"kubeconfig": nowhere, "chart_ref": "/nonexistent"})
    _fails(result, "token_name", "values_file")


def test_agent_token_sources_are_exclusive(nowhere):
    result = run_module("fleet_agent", {"kubeconfig": nowhere, "chart_ref": "/x", "values_file": "/x", "token_name": "t", "token_namespace": "n"})
    _fails(result, "mutually exclusive", "token_name", "values_file")


def test_agent_missing_values_file(nowhere, tmp_path):
    result = run_module("fleet_agent", {"kubeconfig": nowhere, "chart_ref": str(tmp_path), "values_file": str(tmp_path / "values.yaml")})
    _fails(result, "values_file:", "does not exist", "fleet_registration_token")


def test_agent_values_file_without_token_name(nowhere, tmp_path):
    values = tmp_path / "values.yaml"
    values.write_text(yaml.safe_dump({"token": "abc", "apiServerURL": "https://hub:6443"}))
    result = run_module("fleet_agent", {"kubeconfig": nowhere, "chart_ref": str(tmp_path), "values_file": str(values)})
    _fails(result, "values_file:", "tokenName")
    assert "abc" not in result["raw_output"].replace('"token"', "")


def test_agent_reading_the_token_needs_the_hub(nowhere, tmp_path):
    result = run_module("fleet_agent", {"kubeconfig": nowhere, "chart_ref": str(tmp_path), "token_name": "t", "token_namespace": "clusters"})
    _fails(result, "hub_kubeconfig:", "values_file")


@pytest.mark.parametrize("option", ["hub_api_server_url", "api_server_url", "hub_url"])
def test_agent_hub_url_is_https(nowhere, tmp_path, option):
    """hub_api_server_url is the name every module gives the URL; api_server_url and hub_url are deprecated aliases."""
    values = tmp_path / "values.yaml"
    values.write_text(yaml.safe_dump({"token": "abc", "tokenName": "t", "apiServerCA": CA}))
    result = run_module("fleet_agent", {"kubeconfig": nowhere, "chart_ref": str(tmp_path), "values_file": str(values),
                                        option: "http://hub:6443"})
    _fails(result, "hub_api_server_url:", "https://")


def test_agent_bad_label_key(nowhere, tmp_path):
    values = tmp_path / "values.yaml"
    values.write_text(yaml.safe_dump({"token": "s3cr3t-token-value", "tokenName": "t", "apiServerURL": "https://hub:6443", "apiServerCA": CA}))
    result = run_module("fleet_agent", {"kubeconfig": nowhere, "chart_ref": str(tmp_path), "values_file": str(values),
                                        "labels": {"bad key": "x"}})
    _fails(result, "labels:", "bad key")
    assert "s3cr3t-token-value" not in result["raw_output"]


def test_cluster_bad_label_key(nowhere):
    result = run_module("fleet_cluster", {"kubeconfig": nowhere, "name": "c", "namespace": "clusters", "labels": {"-bad": "x"}})
    _fails(result, "labels:", "-bad")


def test_cluster_missing_kubeconfig(nowhere, tmp_path):
    result = run_module("fleet_cluster", {"kubeconfig": nowhere, "name": "c", "namespace": "clusters",
                                          "cluster_kubeconfig": str(tmp_path / "missing.yaml")})
    _fails(result, "cluster_kubeconfig:", "does not exist")


def test_cluster_kubeconfig_text_given_as_a_path(nowhere):
    result = run_module("fleet_cluster", {"kubeconfig": nowhere, "name": "c", "namespace": "clusters",
                                          "cluster_kubeconfig": "apiVersion: v1\nkind: Config\n"})
    _fails(result, "cluster_kubeconfig:", "cluster_kubeconfig_content")


def test_cluster_bad_client_id(nowhere):
    result = run_module("fleet_cluster", {"kubeconfig": nowhere, "name": "c", "namespace": "clusters", "client_id": "has space"})
    _fails(result, "client_id:", "generate")


def test_cluster_info_name_needs_namespace(nowhere):
    result = run_module("fleet_cluster_info", {"kubeconfig": nowhere, "name": "c"})
    _fails(result, "namespace")


def test_missing_context_is_reported_against_context(nowhere):
    result = run_module("fleet_cluster_info", {"kubeconfig": nowhere, "context": "nope"})
    _fails(result, "context:", "'nope'", "Use one of: x")
    assert not result["msg"].startswith("kubeconfig")


def test_missing_hub_context_is_reported_against_hub_context(nowhere, tmp_path):
    values = tmp_path / "values.yaml"
    values.write_text(yaml.safe_dump({"token": "abc", "tokenName": "t"}))
    result = run_module("fleet_agent", {"kubeconfig": nowhere, "hub_kubeconfig": nowhere, "hub_context": "elsewhere",
                                        "chart_ref": str(tmp_path), "values_file": str(values)})
    _fails(result, "hub_context:", "'elsewhere'")


@pytest.mark.parametrize("args,words", [
    ({"name": "t", "run_id": "has space"}, ("run_id:",)),
    ({"name": "t", "prune_grace": -1}, ("prune_grace:",)),
    ({}, ("name",)),
])
def test_token_run_and_prune_options(nowhere, args, words):
    result = run_module("fleet_registration_token", dict({"kubeconfig": nowhere, "namespace": "clusters"}, **args))
    _fails(result, *words)


def test_agent_local_chart_checks(nowhere, tmp_path):
    values = tmp_path / "values.yaml"
    values.write_text(yaml.safe_dump({"token": "abc", "tokenName": "t", "apiServerURL": "https://hub:6443", "apiServerCA": CA}))
    base = {"kubeconfig": nowhere, "values_file": str(values)}
    _fails(run_module("fleet_agent", dict(base, chart_ref=str(tmp_path))), "chart_ref:", "Chart.yaml")
    chart = tmp_path / "fleet-agent"
    chart.mkdir()
    (chart / "Chart.yaml").write_text("name: fleet-agent\nversion: 0.16.0\n")
    _fails(run_module("fleet_agent", dict(base, chart_ref=str(chart), chart_version="0.17.0")), "chart_version:", "0.16.0")


def test_a_missing_hub_ca_file_is_reported_as_that_file_not_as_an_unreachable_hub(nowhere, tmp_path):
    """What member_join passes from the hub host's fleetops_ca_file: a batch item names the file and the variable."""
    missing = str(tmp_path / "pki" / "hub-ca.crt")
    hub = tmp_path / "hub-kubeconfig"
    hub.write_text(open(nowhere).read())
    result = run_module("member_info", {"members": [{"name": "edge-1", "kubeconfig": nowhere, "context": "x",
                                                     "hub_kubeconfig": str(hub), "hub_context": "x", "hub_api_server_ca": missing}],
                                        "backends": ["kubefleet"]})
    assert not result.failed and result["unreadable"] == ["edge-1"], result
    error = result["members"]["edge-1"]["error"]
    assert error.startswith("hub_api_server_ca: %s is neither PEM text nor an existing file" % missing), error
    assert "fleetops_ca_file" in error and "cannot reach" not in error
    # the hub connection's own CA file, checked before any request (no role variable behind it)
    result = run_module("member_info", {"members": [{"name": "edge-1", "kubeconfig": nowhere, "context": "x",
                                                     "hub_kubeconfig": str(hub), "hub_context": "x", "hub_ca_cert": missing}],
                                        "backends": ["kubefleet"]})
    error = result["members"]["edge-1"]["error"]
    assert error.startswith("hub_ca_cert: %s does not exist" % missing) and "cannot reach" not in error, error
    single = run_module("fleet_cluster_info", {"kubeconfig": nowhere, "ca_cert": missing})
    _fails(single, "ca_cert:", missing)
