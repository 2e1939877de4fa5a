"""Pure helpers: durations, labels, kubeconfig CA and server extraction, redaction."""

import base64

import pytest

from ansible_collections.fleetops.registration.plugins.module_utils import parsing
from ansible_collections.fleetops.registration.plugins.module_utils.errors import ParameterError

PEM = "-----BEGIN CERTIFICATE-----\nMIIBfake\n-----END CERTIFICATE-----\n"


@pytest.mark.parametrize("text,seconds", [
    ("240h", 240 * 3600), ("1h30m", 5400), ("90s", 90), ("1.5h", 5400), ("500ms", 0.5),
    ("0", 0), ("-1s", -1), (3600, 3600), ("2h0m0s", 7200),
])
def test_parse_duration_accepts_go_syntax(text, seconds):
    assert parsing.parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "10", "ten minutes", "1d", "h", "1h 30m", True])
def test_parse_duration_rejects_with_param_name(text):
    with pytest.raises(ParameterError) as err:
        parsing.parse_duration(text, param="ttl")
    assert err.value.param == "ttl"
    assert "ttl" in err.value.message()


def test_format_duration_matches_go():
    assert parsing.format_duration(240 * 3600) == "240h0m0s"
    assert parsing.format_duration(90) == "1m30s"
    assert parsing.format_duration(0) == "0s"


def test_normalize_labels_stringifies_like_set_string():
    assert parsing.normalize_labels({"env": "dev", "gpu": True, "count": 3, "empty": None}) == {
        "env": "dev", "gpu": "true", "count": "3", "empty": ""}


@pytest.mark.parametrize("labels,fragment", [
    ({"Bad Key": "x"}, "Bad Key"),
    ({"UPPER.example/x": "x"}, "prefix"),
    ({"k": "has space"}, "value"),
    ({"k" * 64: "x"}, "63"),
    ({"k": "v" * 64}, "63"),
])
def test_normalize_labels_rejects_invalid(labels, fragment):
    with pytest.raises(ParameterError) as err:
        parsing.normalize_labels(labels, param="labels")
    assert err.value.param == "labels"
    assert fragment in err.value.message()


def test_reconcile_labels_merge_and_replace():
    current = {"a": "1", "b": "2", "fleet.cattle.io/cluster-name": "x"}
    assert parsing.reconcile_labels(current, {"b": "3"}, "merge") == {"a": "1", "b": "3", "fleet.cattle.io/cluster-name": "x"}
    assert parsing.reconcile_labels(current, {"b": "3"}, "replace", owned=("fleet.cattle.io/",)) == {
        "b": "3", "fleet.cattle.io/cluster-name": "x"}
    with pytest.raises(ParameterError):
        parsing.reconcile_labels(current, {}, "sideways")


def test_label_patch_sets_and_removes():
    assert parsing.label_patch({"a": "1", "b": "2"}, {"a": "1", "c": "3"}) == {"b": None, "c": "3"}
    assert parsing.label_patch({"a": "1"}, {"a": "1"}) is None


def _kubeconfig(cluster):
    return {
        "current-context": "hub",
        "contexts": [{"name": "hub", "context": {"cluster": "hub-cluster", "user": "admin"}},
                     {"name": "other", "context": {"cluster": "missing", "user": "admin"}}],
        "clusters": [{"name": "hub-cluster", "cluster": cluster}],
        "users": [{"name": "admin", "user": {"token": "t"}}],
    }


def test_ca_from_inline_data():
    config = _kubeconfig({"server": "https://hub:6443", "certificate-authority-data": base64.b64encode(PEM.encode()).decode()})
    assert parsing.kubeconfig_ca_pem(config) == PEM
    assert parsing.kubeconfig_server(config, "hub") == "https://hub:6443"


def test_ca_from_file_relative_to_kubeconfig(tmp_path):
    (tmp_path / "ca.crt").write_text(PEM)
    config = _kubeconfig({"server": "https://hub:6443", "certificate-authority": "ca.crt"})
    path = tmp_path / "config"
    import yaml
    path.write_text(yaml.safe_dump(config))
    loaded, base = parsing.load_kubeconfig(str(path))
    assert parsing.kubeconfig_ca_pem(loaded, base_dir=base) == PEM


def test_ca_absent_means_system_roots():
    assert parsing.kubeconfig_ca_pem(_kubeconfig({"server": "https://hub"})) is None


def test_ca_errors_name_the_parameter(tmp_path):
    config = _kubeconfig({"server": "https://hub", "certificate-authority": str(tmp_path / "nope.crt")})
    with pytest.raises(ParameterError) as err:
        parsing.kubeconfig_ca_pem(config, param="hub_kubeconfig")
    assert err.value.param == "hub_kubeconfig"
    with pytest.raises(ParameterError) as err:
        parsing.kubeconfig_server(config, "other", param="hub_kubeconfig")
    assert "missing" in err.value.message()


def test_load_kubeconfig_missing_file(tmp_path):
    with pytest.raises(ParameterError) as err:
        parsing.load_kubeconfig(str(tmp_path / "absent"), param="kubeconfig")
    assert "does not exist" in err.value.message()


def test_redact_nested():
    data = {"token": "s3cret", "nested": [{"token": "x", "keep": 1}], "empty": {"token": ""}}
    assert parsing.redact(data, ("token",)) == {
        "token": parsing.REDACTED, "nested": [{"token": parsing.REDACTED, "keep": 1}], "empty": {"token": ""}}


def test_dns_validation():
    assert parsing.validate_dns_label("member-1", "name") == "member-1"
    with pytest.raises(ParameterError):
        parsing.validate_dns_label("Member_1", "name")
    with pytest.raises(ParameterError):
        parsing.validate_dns_subdomain("a..b", "namespace")
