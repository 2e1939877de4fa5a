"""Pure Rancher Fleet rules: TTLs, values.yaml, agent values, labels, kubeconfigs, summaries, the values file."""

import base64
import json
import os
import pathlib
import stat

import pytest
import yaml

from ansible_collections.fleetops.registration.plugins.module_utils import kubeconfig, labels, parsing
from ansible_collections.fleetops.registration.plugins.module_utils._rancher_fleet import resources, rules, token, views
from ansible_collections.fleetops.registration.plugins.module_utils.errors import ParameterError
from ansible_collections.fleetops.registration.plugins.module_utils.helm import split_chart
from ansible_collections.fleetops.registration.plugins.module_utils.parsing import REDACTED

CA = "-----BEGIN CERTIFICATE-----\nMIIBdummy\n-----END CERTIFICATE-----\n"

# The shape Fleet v0.16.0's ClusterRegistrationToken handler writes into the Secret's "values" key.
FLEET_VALUES = {
    "clusterNamespace": "clusters",
    "apiServerURL": "https://hub.example:6443",
    "apiServerCA": CA,
    "token": "eyJhbGciOiJSUzI1NiJ9.secret-part",
    "systemRegistrationNamespace": "cattle-fleet-clusters-system",
    "tokenName": "new-token",
}


# -- TTL ---------------------------------------------------------------------

@pytest.mark.parametrize("ttl", ["240h", "1h30m", "1.5h", "90s", "500ms", "10us", u"3\u00b5s", "2562047h", "1ns"])
def test_ttl_accepts_what_the_crd_accepts(ttl):
    """With the ceiling raised to Go's maximum duration (the CRD's own limit)."""
    assert rules.validate_ttl(ttl, max_ttl="2562047h") == ttl


@pytest.mark.parametrize("ttl,words", [
    ("10d", "not a duration"), ("1w", "not a duration"), ("-1h", "negative"), ("", "not a duration"),
    ("abc", "not a duration"), ("h", "not a duration"), (".5h", "not a duration"), ("3600", "not a duration"),
    ("2562048h", "maximum"), ("1h" * 17, "32 characters"), ("+1h", "not a duration"),
])
def test_ttl_rejects_with_the_parameter_and_the_fix(ttl, words):
    with pytest.raises(ParameterError) as err:
        rules.validate_ttl(ttl)
    assert err.value.param == "ttl"
    assert words in err.value.msg
    assert "1h30m" in err.value.hint and "days" in err.value.hint


@pytest.mark.parametrize("ttl", ["0", "0s", "0h0m0s", "0.0h", "0ns", "0.1ns", " 0 "])
def test_ttl_that_never_expires_is_refused_naming_the_variable(ttl):
    """Fleet reads a zero duration as no expiry: a token any cluster could register with for ever (an AWX survey
    answering 0, say)."""
    with pytest.raises(ParameterError) as err:
        rules.validate_ttl(ttl)
    assert err.value.param == "ttl" and "never expires" in err.value.msg
    assert "member_join_fleet_token_ttl" in err.value.hint and "Registration token lifetime" in err.value.hint


def test_the_awx_surveys_offer_only_ttls_that_expire():
    """Every TTL question of the shipped surveys defaults to a TTL the module accepts (so a job run with the defaults
    works) and says that a TTL which never expires is refused."""
    surveys = pathlib.Path(__file__).resolve().parents[2] / "extensions" / "awx" / "surveys"
    questions = [q for path in sorted(surveys.glob("*.json")) for q in json.loads(path.read_text())["spec"]
                 if q["variable"].endswith("_ttl")]
    assert [q["variable"] for q in questions] == ["member_join_fleet_token_ttl"]
    for question in questions:
        assert rules.validate_ttl(question["default"]) == question["default"]
        assert "never expires" in question["question_description"]


def test_ttl_none_means_unset():
    assert rules.validate_ttl(None) is None


def test_same_ttl_compares_durations_not_text():
    assert rules.same_ttl("240h0m0s", "240h")
    assert rules.same_ttl("90m", "1h30m")
    assert not rules.same_ttl("1h", "2h")
    assert rules.same_ttl(None, None)
    assert not rules.same_ttl(None, "1h")
    assert not rules.same_ttl("garbage", "1h")


# -- names and client IDs -----------------------------------------------------

def test_names_must_fit_a_label_value():
    assert rules.validate_name("edge-01", "name") == "edge-01"
    assert rules.validate_name("a" * 63, "name") == "a" * 63  # the longest label value (a surviving mutant took it for too long)
    with pytest.raises(ParameterError) as err:
        rules.validate_name("a" * 64, "name")
    assert err.value.param == "name" and "63" in err.value.msg
    with pytest.raises(ParameterError):
        rules.validate_name("Edge_01", "namespace")


def test_generated_client_ids_are_long_random_and_valid():
    ids = set(rules.generate_client_id() for dummy in range(50))
    assert len(ids) == 50
    for cid in ids:
        assert len(cid) == 64 and int(cid, 16) >= 0
        assert rules.validate_client_id(cid) == cid


@pytest.mark.parametrize("bad", ["", "has space", "new\nline", "-leading", "x" * 254, None])
def test_bad_client_ids_are_refused(bad):
    with pytest.raises(ParameterError) as err:
        rules.validate_client_id(bad)
    assert err.value.param == "client_id"


def test_kube_system_uid_is_a_valid_client_id():
    assert rules.validate_client_id("0f6f3c52-7d8c-4b9e-8a51-5cbd0a2d1e11")


# -- values.yaml ---------------------------------------------------------------

def test_parse_values_reads_fleet_values():
    assert rules.parse_values(yaml.safe_dump(FLEET_VALUES)) == FLEET_VALUES


@pytest.mark.parametrize("text,words", [
    ("", "not a YAML mapping"), ("- a\n- b\n", "not a YAML mapping"), ("a: [", "not valid YAML"),
    ("tokenName: x\n", "no token"), ("token: abc\n", "no tokenName"),
])
def test_parse_values_explains_what_is_missing(text, words):
    with pytest.raises(ParameterError) as err:
        rules.parse_values(text, "values_file")
    assert err.value.param == "values_file"
    assert words in err.value.msg


def test_deep_merge_overrides_without_mutating():
    base = {"image": {"repository": "a", "tag": "1"}, "x": 1}
    over = {"image": {"tag": "2"}, "y": 2}
    merged = parsing.deep_merge(base, over)
    assert merged == {"image": {"repository": "a", "tag": "2"}, "x": 1, "y": 2}
    assert base == {"image": {"repository": "a", "tag": "1"}, "x": 1}


def test_agent_values_precedence_extra_then_token_then_explicit():
    extra = {"image": {"repository": "mirror/fleet-agent"}, "apiServerURL": "https://from-extra", "clusterNamespace": "other"}
    labels = {"env": "dev", "example": True, "replicas": 3}
    values = rules.build_agent_values(FLEET_VALUES, extra, api_server_url="https://explicit:6443", labels=labels, client_id="really-random")
    assert values["image"] == {"repository": "mirror/fleet-agent"}
    assert values["clusterNamespace"] == "clusters"          # the token wins over extra values
    assert values["apiServerURL"] == "https://explicit:6443"  # an explicit setting wins over the token
    assert values["apiServerCA"] == CA
    assert values["labels"] == {"env": "dev", "example": "true", "replicas": "3"}  # strings, like --set-string
    assert values["clientID"] == "really-random"
    assert values["token"] == FLEET_VALUES["token"]


def test_agent_values_without_labels_or_client_id_leave_them_out():
    values = rules.build_agent_values(FLEET_VALUES)
    assert "labels" not in values and "clientID" not in values


def test_agent_values_need_an_api_server_url():
    token_values = dict(FLEET_VALUES, apiServerURL="")
    with pytest.raises(ParameterError) as err:
        rules.build_agent_values(token_values)
    assert err.value.param == "hub_api_server_url"
    assert "hub_kubeconfig" in err.value.hint


def test_agent_values_refuse_bad_labels():
    with pytest.raises(ParameterError) as err:
        rules.build_agent_values(FLEET_VALUES, labels={"bad key!": "x"})
    assert err.value.param == "labels"


def test_agent_values_refuse_another_system_namespace():
    token_values = dict(FLEET_VALUES, internal={"systemNamespace": "my-fleet-system"})
    with pytest.raises(ParameterError) as err:
        rules.build_agent_values(token_values)
    assert "cattle-fleet-system" in err.value.msg


def test_redacted_values_hide_the_token_and_flag_a_new_one():
    shown = rules.redact_values(FLEET_VALUES)
    assert shown["token"] == REDACTED
    assert shown["apiServerURL"] == FLEET_VALUES["apiServerURL"]
    assert FLEET_VALUES["token"] not in repr(shown)
    rotated = dict(FLEET_VALUES, token="another")
    assert rules.redact_values(rotated, FLEET_VALUES)["token"] == REDACTED + " (changed)"
    assert rules.redact_values(FLEET_VALUES, FLEET_VALUES)["token"] == REDACTED
    assert rules.redact_values(None) == {}


def test_release_identity_is_fixed_by_the_chart():
    rules.check_release_identity("cattle-fleet-system", "fleet-agent")
    with pytest.raises(ParameterError) as err:
        rules.check_release_identity("fleet-system", "fleet-agent")
    assert err.value.param == "release_namespace" and "cattle-fleet-system" in err.value.hint
    with pytest.raises(ParameterError) as err:
        rules.check_release_identity("cattle-fleet-system", "agent")
    assert err.value.param == "release_name" and "fleet-agent" in err.value.hint


def test_read_ca_accepts_pem_text_or_a_file(tmp_path):
    assert kubeconfig.read_pem(CA, "api_server_ca") == CA
    path = tmp_path / "ca.pem"
    path.write_text(CA)
    assert kubeconfig.read_pem(str(path), "api_server_ca") == CA
    assert kubeconfig.read_pem(None, "api_server_ca") is None
    with pytest.raises(ParameterError) as err:
        kubeconfig.read_pem(str(tmp_path / "missing.pem"), "api_server_ca")
    assert err.value.param == "api_server_ca"
    with pytest.raises(ParameterError):
        kubeconfig.read_pem("-----BEGIN RSA PRIVATE KEY-----", "api_server_ca")


def test_a_ca_bundle_with_a_private_key_passes_on_its_certificates_only(tmp_path):
    other = CA.replace("MIIBdummy", "MIIBother")
    key = "-----BEGIN EC PRIVATE KEY-----\nMHcsecret\n-----END EC PRIVATE KEY-----\n"
    bundle = tmp_path / "bundle.pem"
    bundle.write_text("subject=CN=hub\n" + CA + key + "  " + other.replace("\n", "\r\n"))
    for given in (str(bundle), bundle.read_text()):
        assert kubeconfig.read_pem(given, "hub_ca_cert") == CA + other
    config = {"current-context": "a", "contexts": [{"name": "a", "context": {"cluster": "c", "user": "u"}}],
              "clusters": [{"name": "c", "cluster": {"server": "https://a", "certificate-authority": str(bundle)}}],
              "users": [{"name": "u", "user": {}}]}
    assert kubeconfig.kubeconfig_ca_pem(config) == CA + other
    with pytest.raises(ParameterError) as err:
        kubeconfig.read_pem(key, "hub_ca_cert")
    assert err.value.param == "hub_ca_cert" and "MHcsecret" not in err.value.message()


# -- kubeconfigs for manager-initiated registration ----------------------------------------------------

def _kubeconfig(**user):
    return {
        "apiVersion": "v1", "kind": "Config", "current-context": "a",
        "clusters": [{"name": "ca", "cluster": {"server": "https://a:6443", "certificate-authority": "pki/ca.crt"}},
                     {"name": "cb", "cluster": {"server": "https://b:6443", "certificate-authority-data": "Q0I="}}],
        "users": [{"name": "ua", "user": dict(user)}, {"name": "ub", "user": {"token": "tok-b"}}],
        "contexts": [{"name": "a", "context": {"cluster": "ca", "user": "ua"}},
                     {"name": "b", "context": {"cluster": "cb", "user": "ub", "namespace": "ns"}}],
    }


def test_portable_kubeconfig_inlines_files_relative_to_the_kubeconfig(tmp_path):
    (tmp_path / "pki").mkdir()
    (tmp_path / "pki" / "ca.crt").write_text(CA)
    (tmp_path / "pki" / "admin.crt").write_text(CLIENT_CERT)
    (tmp_path / "pki" / "admin.key").write_text(CLIENT_KEY)
    config = _kubeconfig(**{"client-certificate": "pki/admin.crt", "client-key": str(tmp_path / "pki" / "admin.key")})
    doc, warnings = rules.portable_kubeconfig(config, str(tmp_path))
    assert warnings == []
    assert doc["current-context"] == "a"
    assert len(doc["clusters"]) == len(doc["users"]) == len(doc["contexts"]) == 1
    cluster = doc["clusters"][0]["cluster"]
    assert base64.b64decode(cluster["certificate-authority-data"]).decode() == CA
    assert "certificate-authority" not in cluster
    user = doc["users"][0]["user"]
    assert base64.b64decode(user["client-certificate-data"]).decode() == CLIENT_CERT
    assert base64.b64decode(user["client-key-data"]).decode() == CLIENT_KEY
    assert "client-key" not in user


CLIENT_CERT = CA.replace("MIIBdummy", "MIIBclient")
CLIENT_KEY = "-----BEGIN EC PRIVATE KEY-----\nMHcclient\n-----END EC PRIVATE KEY-----\n"


@pytest.mark.parametrize("field, content", [
    ("certificate-authority", "root:x:0:0:root:/root:/bin/bash\n"),
    ("client-certificate", CLIENT_KEY),
    ("client-key", CLIENT_CERT),
    ("tokenFile", "line one\nline two\n"),
])
def test_portable_kubeconfig_inlines_only_certificates_keys_and_tokens(tmp_path, field, content):
    (tmp_path / "named").write_text(content)
    config = _kubeconfig(**{"client-certificate-data": "Q0VSVA==", "token": "t"})
    config["clusters"][0]["cluster"] = {"server": "https://a:6443", "certificate-authority-data": "Q0E="}
    entry = config["clusters"][0]["cluster"] if field == "certificate-authority" else config["users"][0]["user"]
    entry.pop(field + "-data", None)
    entry[field] = str(tmp_path / "named")
    with pytest.raises(ParameterError) as err:
        rules.portable_kubeconfig(config, None)
    assert err.value.param == "cluster_kubeconfig" and field in err.value.msg and "not copied" in err.value.msg
    assert content.splitlines()[0] not in err.value.message()


def test_portable_kubeconfig_keeps_only_the_certificates_of_a_ca_bundle(tmp_path):
    (tmp_path / "bundle.pem").write_text(CA + CLIENT_KEY)
    config = _kubeconfig(token="t")
    config["clusters"][0]["cluster"] = {"server": "https://a:6443", "certificate-authority": str(tmp_path / "bundle.pem")}
    doc, _warnings = rules.portable_kubeconfig(config, None)
    assert base64.b64decode(doc["clusters"][0]["cluster"]["certificate-authority-data"]).decode() == CA


def test_portable_kubeconfig_picks_the_context_and_keeps_its_namespace():
    doc, _warnings = rules.portable_kubeconfig(_kubeconfig(token="tok-a"), None, context="b")
    assert doc["current-context"] == "b"
    assert doc["clusters"][0]["cluster"]["server"] == "https://b:6443"
    assert doc["users"][0]["user"] == {"token": "tok-b"}
    assert doc["contexts"][0]["context"]["namespace"] == "ns"


def test_portable_kubeconfig_reads_a_token_file(tmp_path):
    (tmp_path / "token").write_text("tok-from-file\n")
    config = _kubeconfig(tokenFile=str(tmp_path / "token"))
    config["clusters"][0]["cluster"] = {"server": "https://a:6443"}
    doc, _warnings = rules.portable_kubeconfig(config, str(tmp_path))
    assert doc["users"][0]["user"] == {"token": "tok-from-file"}


def test_portable_kubeconfig_errors_and_warnings(tmp_path):
    with pytest.raises(ParameterError) as err:
        rules.portable_kubeconfig(_kubeconfig(token="x"), str(tmp_path))  # pki/ca.crt missing
    assert err.value.param == "cluster_kubeconfig" and "does not exist" in err.value.msg
    with pytest.raises(ParameterError) as err:
        rules.portable_kubeconfig(_kubeconfig(token="x"), None, context="nope")
    assert "no context named 'nope'" in err.value.msg
    config = _kubeconfig(exec={"command": "aws"})
    config["clusters"][0]["cluster"] = {"server": "https://a:6443"}
    _doc, warnings = rules.portable_kubeconfig(config, None)
    assert any("exec" in w for w in warnings)
    config = _kubeconfig()
    config["clusters"][0]["cluster"] = {"server": "https://a:6443"}
    _doc, warnings = rules.portable_kubeconfig(config, None)
    assert any("no credentials" in w for w in warnings)


def test_kubeconfig_secrets_finds_the_credentials():
    found = kubeconfig.kubeconfig_secrets(_kubeconfig(token="tok-a", password="pw"))
    assert set(found) == {"tok-a", "pw", "tok-b"}
    assert kubeconfig.kubeconfig_secrets(None) == []


def test_dump_yaml_is_stable():
    assert rules.dump_yaml({"b": 1, "a": {"d": 2, "c": 3}}) == rules.dump_yaml({"a": {"c": 3, "d": 2}, "b": 1})


# -- labels ------------------------------------------------------------------

def test_label_merge_keeps_others_and_reports_drift():
    current = {"env": "dev", "team": "a", "fleet.cattle.io/cluster": "cluster-1"}
    result, patch = rules.desired_cluster_labels(current, {"env": "prod", "tier": "web"}, "merge")
    assert result == {"env": "prod", "team": "a", "tier": "web", "fleet.cattle.io/cluster": "cluster-1"}
    assert patch == result
    assert labels.label_changes(current, result) == {"added": {"tier": "web"}, "changed": {"env": "prod"}, "removed": []}


def test_label_replace_removes_others_but_keeps_fleet_managed_labels():
    current = {"env": "dev", "team": "a", "fleet.cattle.io/cluster": "cluster-1", "management.cattle.io/cluster-name": "c-x"}
    result, patch = rules.desired_cluster_labels(current, {"env": "dev"}, "replace")
    assert result == {"env": "dev", "fleet.cattle.io/cluster": "cluster-1", "management.cattle.io/cluster-name": "c-x"}
    assert patch["team"] is None and patch["env"] == "dev"
    assert labels.label_changes(current, result)["removed"] == ["team"]


def test_labels_already_right_need_no_patch():
    current = {"env": "dev"}
    assert rules.desired_cluster_labels(current, {"env": "dev"}, "merge") == ({"env": "dev"}, None)
    assert rules.desired_cluster_labels(current, {"env": "dev"}, "replace") == ({"env": "dev"}, None)
    assert rules.desired_cluster_labels(current, None, "replace") == ({"env": "dev"}, None)


# -- summaries -----------------------------------------------------------------

CLUSTER = {
    "apiVersion": "fleet.cattle.io/v1alpha1", "kind": "Cluster",
    "metadata": {"name": "my-cluster", "namespace": "clusters", "labels": {"env": "dev"},
                 "creationTimestamp": "2026-11-21T10:00:00Z"},
    "spec": {"clientID": "really-random"},
    "status": {
        "namespace": "cluster-clusters-my-cluster-0123",
        "display": {"readyBundles": "1/1", "state": "Ready"},
        "agent": {"lastSeen": "2026-11-21T10:05:00Z", "namespace": "cattle-fleet-system"},
        "conditions": [{"type": "Processed", "status": "True"}, {"type": "Ready", "status": "True", "message": ""}],
    },
}


def test_cluster_summary_has_the_kubectl_columns_and_more():
    summary = views.cluster_summary(CLUSTER)
    assert summary["name"] == "my-cluster" and summary["namespace"] == "clusters"
    assert summary["bundles_ready"] == "1/1"
    assert summary["last_seen"] == "2026-11-21T10:05:00Z" and summary["checked_in"] is True
    assert summary["ready"] is True and summary["ready_status"] == "True"
    assert summary["client_id"] == "really-random" and summary["labels"] == {"env": "dev"}
    assert summary["cluster_namespace"] == "cluster-clusters-my-cluster-0123"
    assert summary["deleting"] is False


def test_cluster_summary_of_a_cluster_that_never_checked_in():
    obj = {"metadata": {"name": "x", "namespace": "y"}, "spec": {},
           "status": {"agent": {"lastSeen": None}, "conditions": [{"type": "Ready", "status": "False", "reason": "WaitCheckIn"}]}}
    summary = views.cluster_summary(obj)
    assert summary["checked_in"] is False and summary["ready"] is False
    assert summary["ready_message"] == "WaitCheckIn"
    assert summary["bundles_ready"] is None


def test_registration_summary():
    reg = {"metadata": {"name": "request-abc", "namespace": "clusters", "labels": {"fleet.cattle.io/registration-token": "new-token"}},
           "spec": {"clientID": "really-random", "clientRandom": "r", "clusterLabels": {"env": "dev"}},
           "status": {"clusterName": "my-cluster", "granted": True}}
    summary = views.registration_summary(reg)
    assert summary == {"name": "request-abc", "namespace": "clusters", "client_id": "really-random", "cluster_labels": {"env": "dev"},
                       "cluster_name": "my-cluster", "granted": True, "token_name": "new-token", "created": None}
    assert "r" not in summary.values()


def test_values_secret_must_be_fleets_and_newer_than_the_token():
    token = {"metadata": {"creationTimestamp": "2026-11-21T10:00:00Z"}}
    good = {"type": resources.VALUES_SECRET_TYPE, "data": {"values": "eA=="}, "metadata": {"creationTimestamp": "2026-11-21T10:00:01Z"}}
    assert rules.secret_belongs_to_token(good, token)
    stale = dict(good, metadata={"creationTimestamp": "2026-11-21T09:59:00Z"})
    assert not rules.secret_belongs_to_token(stale, token)
    assert not rules.secret_belongs_to_token(dict(good, type="Opaque"), token)
    assert not rules.secret_belongs_to_token(dict(good, data={}), token)
    assert not rules.secret_belongs_to_token(None, token)


# -- the values file -------------------------------------------------------------

def _mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def test_values_file_is_private_and_changed_only_when_content_differs(tmp_path):
    path = str(tmp_path / "values.yaml")
    assert token.write_values_file(path, "token: a\n", check_mode=True) is True
    assert not os.path.exists(path)
    assert token.write_values_file(path, "token: a\n") is True
    assert _mode(path) == 0o600
    assert token.write_values_file(path, "token: a\n") is False
    assert token.write_values_file(path, "token: b\n", check_mode=True) is True
    assert open(path).read() == "token: a\n"
    assert token.write_values_file(path, "token: b\n") is True
    assert open(path).read() == "token: b\n" and _mode(path) == 0o600
    os.chmod(path, 0o644)
    assert token.write_values_file(path, "token: b\n") is True
    assert _mode(path) == 0o600
    assert [p for p in os.listdir(str(tmp_path)) if p != "values.yaml"] == []


def test_values_file_needs_an_existing_directory(tmp_path):
    with pytest.raises(ParameterError) as err:
        token.write_values_file(str(tmp_path / "nope" / "values.yaml"), "x")
    assert err.value.param == "values_dest"


# -- shared helper this backend relies on --------------------------------------------

@pytest.mark.parametrize("text,expected", [
    ("fleet-agent-0.0.0", ("fleet-agent", "0.0.0")),
    ("fleet-agent-0.16.0-rc.1", ("fleet-agent", "0.16.0-rc.1")),
    ("fleet-agent-106.0.0+up0.12.0", ("fleet-agent", "106.0.0+up0.12.0")),
    ("my-chart2-v1.2.3", ("my-chart2", "v1.2.3")),
])
def test_split_chart_keeps_the_whole_version(text, expected):
    assert split_chart(text) == expected


def test_manage_agent_disabled_reads_the_fleet_controller_config():
    assert rules.manage_agent_disabled({"data": {"config": '{"manageAgent": false, "apiServerURL": "x"}'}}) is True
    assert rules.manage_agent_disabled({"data": {"config": '{"manageAgent": true}'}}) is False
    assert rules.manage_agent_disabled({"data": {"config": '{"apiServerURL": "x"}'}}) is False  # default: on
    assert rules.manage_agent_disabled({"data": {"config": "not json"}}) is None
    assert rules.manage_agent_disabled(None) is None


def test_a_lease_holder_is_departed_only_when_every_agent_pod_is_newer_than_its_lease():
    from ansible_collections.fleetops.registration.plugins.module_utils.leases import lease_holder_departed

    lease = {"spec": {"holderIdentity": "vm-123", "acquireTime": "2026-11-23T10:00:05.000000Z"}}

    def pod(created):
        return {"metadata": {"creationTimestamp": created}}

    assert lease_holder_departed(lease, [pod("2026-11-23T10:00:11Z")])
    assert not lease_holder_departed(lease, [pod("2026-11-23T10:00:11Z"), pod("2026-11-23T10:00:01Z")])  # the holder's own pod
    assert not lease_holder_departed(lease, [pod("2026-11-23T10:00:07Z")])  # within the allowed clock skew
    assert not lease_holder_departed(lease, [])  # no agent pod at all: nothing waits for the Lease
    assert not lease_holder_departed({"spec": {"acquireTime": "2026-11-23T10:00:05Z"}}, [pod("2026-11-23T10:00:11Z")])
    assert not lease_holder_departed(None, [pod("2026-11-23T10:00:11Z")])


def test_ttl_longer_than_the_ceiling_is_refused_naming_both_options():
    """A registration token lets any cluster register until it expires: a day at most unless max_ttl is raised."""
    assert rules.validate_ttl("24h") == "24h"
    with pytest.raises(ParameterError) as err:
        rules.validate_ttl("25h")
    assert err.value.param == "ttl" and "longer than 24h" in err.value.msg and "(max_ttl)" in err.value.msg
    assert "fleetops_fleet_token_max_ttl" in err.value.hint
    assert rules.validate_ttl("240h", max_ttl="240h") == "240h"
    with pytest.raises(ParameterError) as err:
        rules.validate_ttl("1h", max_ttl="0s")
    assert err.value.param == "max_ttl" and "never expires" in err.value.msg
