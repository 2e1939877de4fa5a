"""Pure helpers: times and durations, labels, kubeconfig facts, names."""

import base64
import datetime

import pytest

from ansible_collections.fleetops.registration.plugins.module_utils import kubeconfig, parsing, times
from ansible_collections.fleetops.registration.plugins.module_utils import labels as lbl
from ansible_collections.fleetops.registration.plugins.module_utils.errors import ParameterError

PEM = "-----BEGIN CERTIFICATE-----\nMIIBfake\n-----END CERTIFICATE-----\n"


@pytest.mark.parametrize("text,seconds", [
    ("240h", 240 * 3600), ("1h30m", 5400), ("90s", 90), ("1.5h", 5400), ("500ms", 0.5),
    ("0", 0), ("-1s", -1), (3600, 3600), ("2h0m0s", 7200),
])
def test_parse_duration_accepts_go_syntax(text, seconds):
    assert times.parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "10", "ten minutes", "1d", "h", "1h 30m", True])
def test_parse_duration_rejects_with_param_name(text):
    with pytest.raises(ParameterError) as err:
        times.parse_duration(text, param="ttl")
    assert err.value.param == "ttl"
    assert "ttl" in err.value.message()


UTC = datetime.timezone.utc


@pytest.mark.parametrize("text,expected", [
    ("2026-01-02T03:04:05Z", datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)),
    ("2026-01-02T03:04:05.123456789Z", datetime.datetime(2026, 1, 2, 3, 4, 5, 123456, tzinfo=UTC)),
    ("2026-01-02T03:04:05.5Z", datetime.datetime(2026, 1, 2, 3, 4, 5, 500000, tzinfo=UTC)),
    ("2026-01-02T05:04:05+02:00", datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)),
    ("2026-01-02T03:04:05", datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)),
])
def test_parse_time_rfc3339(text, expected):
    assert times.parse_time(text) == expected


@pytest.mark.parametrize("text", [None, "", "yesterday", "2026-13-01T00:00:00Z", "2026-01-02", 12])
def test_parse_time_rejects_to_none(text):
    assert times.parse_time(text) is None


def test_age_seconds_against_a_given_now():
    now = datetime.datetime(2026, 1, 2, 3, 5, 0, tzinfo=UTC)
    assert times.age_seconds("2026-01-02T03:04:05Z", now) == 55
    assert times.age_seconds("2026-01-02T03:06:00Z", now) == -60
    assert times.age_seconds("garbage", now) is None
    assert times.age_seconds(times.format_time(times.utcnow())) in (0, 1)


def test_normalize_labels_stringifies_like_set_string():
    assert lbl.normalize_labels({"env": "dev", "gpu": True, "count": 3, "empty": None}) == {
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
        lbl.normalize_labels(labels, param="labels")
    assert err.value.param == "labels"
    assert fragment in err.value.message()


def test_reconcile_labels_merge_and_replace():
    current = {"a": "1", "b": "2", "fleet.cattle.io/cluster-name": "x"}
    assert lbl.reconcile_labels(current, {"b": "3"}, "merge") == {"a": "1", "b": "3", "fleet.cattle.io/cluster-name": "x"}
    assert lbl.reconcile_labels(current, {"b": "3"}, "replace", owned=("fleet.cattle.io/",)) == {
        "b": "3", "fleet.cattle.io/cluster-name": "x"}
    with pytest.raises(ParameterError):
        lbl.reconcile_labels(current, {}, "sideways")


@pytest.mark.parametrize("value,expected", [
    (None, {}),
    ("", {}),
    ("  ", {}),
    ({"env": "dev", "gpu": True}, {"env": "dev", "gpu": "true"}),
    ('{"env": "dev", "n": 3}', {"env": "dev", "n": "3"}),
    ("env=dev,tier=web", {"env": "dev", "tier": "web"}),
    ("env=dev, tier=web\nzone=", {"env": "dev", "tier": "web", "zone": ""}),
    ("example.com/team = blue", {"example.com/team": "blue"}),
])
def test_parse_survey_labels_forms(value, expected):
    assert lbl.parse_survey_labels(value, "member_join_labels") == expected


@pytest.mark.parametrize("value,fragment", [
    ("env", "key=value"),
    ('{"env": ', "JSON"),
    ('["env"]', "key=value"),
    ("Bad Key=x", "key=value"),
    ("env=has space", "key=value"),
    ("k=" + "v" * 64, "63"),
    (["env=dev"], "mapping or text"),
])
def test_parse_survey_labels_errors_name_the_parameter(value, fragment):
    with pytest.raises(ParameterError) as err:
        lbl.parse_survey_labels(value, "member_join_labels")
    assert err.value.param == "member_join_labels"
    assert fragment in err.value.message()


def test_label_changes_and_drift():
    assert lbl.label_changes({"a": "1", "b": "2"}, {"a": "9", "c": "3"}) == {
        "added": {"c": "3"}, "changed": {"a": "9"}, "removed": ["b"]}
    assert not lbl.labels_drift({"a": "1", "b": "2"}, {"a": "1"}, "merge")
    assert lbl.labels_drift({"a": "1", "b": "2"}, {"a": "1"}, "replace")
    assert not lbl.labels_drift({"a": "1", "fleet.cattle.io/x": "y"}, {"a": "1"}, "replace", owned=("fleet.cattle.io/",))
    assert not lbl.labels_drift({"a": "1"}, None)


def test_label_patch_sets_and_removes():
    assert lbl.label_patch({"a": "1", "b": "2"}, {"a": "1", "c": "3"}) == {"b": None, "c": "3"}
    assert lbl.label_patch({"a": "1"}, {"a": "1"}) is None


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
    assert kubeconfig.kubeconfig_ca_pem(config) == PEM
    assert kubeconfig.kubeconfig_server(config, "hub") == "https://hub:6443"


def test_ca_from_file_relative_to_kubeconfig(tmp_path):
    (tmp_path / "ca.crt").write_text(PEM)
    config = _kubeconfig({"server": "https://hub:6443", "certificate-authority": "ca.crt"})
    path = tmp_path / "config"
    import yaml
    path.write_text(yaml.safe_dump(config))
    loaded, base = kubeconfig.load_kubeconfig(str(path))
    assert kubeconfig.kubeconfig_ca_pem(loaded, base_dir=base) == PEM


def test_ca_absent_means_system_roots():
    assert kubeconfig.kubeconfig_ca_pem(_kubeconfig({"server": "https://hub"})) is None


def test_ca_errors_name_the_parameter(tmp_path):
    config = _kubeconfig({"server": "https://hub", "certificate-authority": str(tmp_path / "nope.crt")})
    with pytest.raises(ParameterError) as err:
        kubeconfig.kubeconfig_ca_pem(config, param="hub_kubeconfig")
    assert err.value.param == "hub_kubeconfig"
    with pytest.raises(ParameterError) as err:
        kubeconfig.kubeconfig_server(config, "other", param="hub_kubeconfig")
    assert "missing" in err.value.message()


def test_check_context_names_the_context_option():
    config = _kubeconfig({"server": "https://hub"})
    kubeconfig.check_context(config, "hub", "context")
    with pytest.raises(ParameterError) as err:
        kubeconfig.check_context(config, "nope", "hub_context")
    assert err.value.param == "hub_context"
    assert "hub, other" in err.value.message()


def test_kubeconfig_secrets_and_token():
    config = _kubeconfig({"server": "https://hub"})
    assert kubeconfig.kubeconfig_secrets(config) == ["t"]
    assert kubeconfig.kubeconfig_token(config) == "t"
    assert kubeconfig.kubeconfig_secrets(None) == []


def test_kubeconfig_secrets_of_auth_providers_and_exec_plugins():
    config = {"users": [
        {"name": "oidc", "user": {"auth-provider": {"name": "oidc", "config": {
            "client-id": "kubectl", "client-secret": "cs", "id-token": "idt", "refresh-token": "rt",
            "idp-issuer-url": "https://idp", "idp-certificate-authority-data": "caData", "access-token": "at"}}}},
        {"name": "exec", "user": {"exec": {"command": "aws", "args": ["eks", "get-token"], "env": [
            {"name": "AWS_PROFILE", "value": "prod"}, {"name": "AWS_SECRET_ACCESS_KEY", "value": "sak"}, {"name": "EMPTY", "value": ""}]}}},
        {"name": "basic", "user": {"username": "admin", "password": "pw", "client-key-data": "kd"}},
    ]}
    found = kubeconfig.kubeconfig_secrets(config)
    assert {"cs", "idt", "rt", "at", "caData", "sak", "prod", "pw", "kd"} <= set(found)
    assert not {"kubectl", "https://idp", "aws", "admin", ""} & set(found)


def test_load_kubeconfig_missing_file(tmp_path):
    with pytest.raises(ParameterError) as err:
        kubeconfig.load_kubeconfig(str(tmp_path / "absent"), param="kubeconfig")
    assert "does not exist" in err.value.message()


def test_dns_validation():
    assert parsing.validate_dns_label("member-1", "name") == "member-1"
    with pytest.raises(ParameterError):
        parsing.validate_dns_label("Member_1", "name")
    with pytest.raises(ParameterError):
        parsing.validate_dns_subdomain("a..b", "namespace")
