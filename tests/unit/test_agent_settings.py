"""The agent setting's pure parts: validation, rendering per fleet manager, drift, the Deployment patch, and the
``reconfigure`` action each manager's ``decide`` gives a member that drifted."""

import copy

import pytest

from ansible_collections.fleetops.registration.plugins.module_utils import agent_settings as shared
from ansible_collections.fleetops.registration.plugins.module_utils.errors import ParameterError
from ansible_collections.fleetops.registration.plugins.module_utils._kubefleet import agent_settings as kubefleet
from ansible_collections.fleetops.registration.plugins.module_utils._rancher_fleet import agent_settings as fleet
from ansible_collections.fleetops.registration.plugins.module_utils._rancher_fleet.manager import MANAGER as RANCHER_FLEET

TOLERATION = {"key": "dedicated", "operator": "Equal", "value": "fleet", "effect": "NoSchedule"}
SETTING = {
    "tolerations": [TOLERATION],
    "node_selector": {"pool": "system"},
    "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"memory": "1Gi"}},
    "env": {"HTTPS_PROXY": "http://proxy.corp:3128", "NO_PROXY": ".svc"},
    "image_registry": "mirror.corp:5000",
    "image_pull_secrets": ["mirror-pull"],
    "priority_class_name": "system-cluster-critical",
}


def deployment(containers=("agent",), **spec):
    """An agent Deployment as the API returns it, carrying ``spec`` in its pod template."""
    template = {"containers": [{"name": name, "image": "ghcr.io/azure/fleet/%s:v0.14.0" % name,
                                "env": [{"name": "NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}}]}
                               for name in containers]}
    template.update(spec)
    return {"metadata": {"name": "agent"}, "spec": {"template": {"spec": template}}}


def carrying(setting, containers=("agent",)):
    """A Deployment that carries ``setting`` as the API server would store it (quantities in canonical form)."""
    found = deployment(containers, tolerations=[{"key": "other", "operator": "Exists"}] + setting.get("tolerations", []),
                       nodeSelector=dict(setting.get("node_selector") or {}, **{"kubernetes.io/os": "linux"}),
                       priorityClassName=setting.get("priority_class_name"),
                       imagePullSecrets=[{"name": n} for n in setting.get("image_pull_secrets") or []])
    for container in found["spec"]["template"]["spec"]["containers"]:
        container["image"] = shared.with_registry(container["image"], setting.get("image_registry"))
        container["env"] += shared.env_list(setting.get("env"))
        container["resources"] = {"requests": {"cpu": "0.1", "memory": "128Mi"}, "limits": {"memory": "1024Mi"}}
    return found


def test_validate_keeps_what_was_given_and_names_the_bad_key():
    assert shared.validate(None) is None and shared.validate({"env": None}) is None
    assert shared.validate({"env": {"PORT": 8080}, "image_registry": "mirror:5000/"}) == {"env": {"PORT": "8080"}, "image_registry": "mirror:5000"}
    assert shared.validate({"tolerations": []}) == {"tolerations": []}  # empty: asks for nothing more
    for bad, where in (({"nodeSelector": {}}, "agent: has unknown keys nodeSelector"),
                       ({"tolerations": [{"key": "a", "effects": "NoSchedule"}]}, "agent.tolerations: has unknown keys effects"),
                       ({"tolerations": ["a"]}, "agent.tolerations: item 0 is not a mapping"),
                       ({"affinity": {"nodeSelector": {}}}, "agent.affinity: has unknown keys nodeSelector"),
                       ({"resources": {"request": {}}}, "agent.resources: has unknown keys request"),
                       ({"env": {"HTTPS PROXY": "x"}}, "agent.env: 'HTTPS PROXY' is not a valid"),
                       ({"image_pull_secrets": ["Mirror_Pull"]}, "agent.image_pull_secrets: 'Mirror_Pull' is not a Secret name"),
                       ({"image_registry": "https://mirror.corp"}, "agent.image_registry: 'https://mirror.corp' is not a registry host")):
        with pytest.raises(ParameterError) as failure:
            shared.validate(bad)
        assert where in failure.value.message(), failure.value.message()


def test_an_awx_survey_gives_the_setting_as_text():
    assert shared.validate('{"env": {"NO_PROXY": ".svc"}}') == {"env": {"NO_PROXY": ".svc"}}
    assert shared.validate("tolerations:\n  - {key: a, operator: Exists}\n") == {"tolerations": [{"key": "a", "operator": "Exists"}]}
    assert shared.validate("  ") is None
    for text, words in (("[1, 2]", "agent: is a list, not a mapping"), ("{env: [", "agent: is not valid YAML or JSON")):
        with pytest.raises(ParameterError) as failure:
            shared.validate(text)
        assert words in failure.value.message(), failure.value.message()


def test_a_proxy_password_in_the_environment_is_a_value_to_hide():
    setting = shared.validate({"env": {"HTTPS_PROXY": "http://me:s3cret@proxy:3128", "NO_PROXY": "http://a@b/x https://c"}})
    assert shared.credential_values(setting) == ["http://me:s3cret@proxy:3128", "s3cret", "http://a@b/x https://c"]
    assert shared.credential_values({"env": {"HTTPS_PROXY": "http://proxy:3128"}}) == []


def test_a_scheme_less_proxy_password_and_a_secret_variable_are_values_to_hide():
    setting = shared.validate({"env": {"HTTPS_PROXY": "me:pw-1@proxy.corp:3128", "API_TOKEN": "tok-2", "NO_PROXY": "a,b",
                                       "LOG_LEVEL": "debug"}})
    assert shared.credential_values(setting) == ["tok-2", "me:pw-1@proxy.corp:3128", "pw-1"]


@pytest.mark.parametrize("image, registry, pulled", [
    ("ghcr.io/azure/fleet/member-agent:v0.14.0", "mirror:5000", "mirror:5000/azure/fleet/member-agent:v0.14.0"),
    ("rancher/fleet-agent:v0.16.0", "mirror.corp/hub", "mirror.corp/hub/rancher/fleet-agent:v0.16.0"),
    ("localhost/agent:1", "m.corp", "m.corp/agent:1"),
    ("busybox", "m.corp", "m.corp/busybox"),
    ("rancher/fleet-agent:v0.16.0", "", "rancher/fleet-agent:v0.16.0"),
])
def test_an_image_from_a_mirror_keeps_its_path_and_tag(image, registry, pulled):
    assert shared.with_registry(image, registry) == pulled


def test_quantities_compare_by_value():
    assert shared.same_resources({"requests": {"cpu": "0.1", "memory": "1Gi"}}, {"requests": {"cpu": "100m", "memory": "1024Mi"}})
    assert not shared.same_resources({"requests": {"cpu": "200m"}}, {"requests": {"cpu": "100m"}})
    assert not shared.same_resources({}, {"limits": {"cpu": "1"}})


def test_a_deployment_carrying_the_setting_has_no_drift_and_needs_no_patch():
    live = carrying(SETTING, ("agent", "refresh-token"))
    assert shared.drift(SETTING, shared.pod_view(live)) == []
    assert shared.deployment_patch(SETTING, live, shared.KEYS) is None
    assert shared.drift(None, shared.pod_view(deployment())) == [] and shared.drift(SETTING, None) == []


def test_drift_names_each_part_that_is_missing():
    reasons = shared.drift(SETTING, shared.pod_view(deployment(("agent", "refresh-token"))))
    text = "\n".join(reasons)
    for part in ("lacks 1 of the setting's tolerations", "node selector lacks pool", "priority class is ''",
                 "lacks the image pull secrets mirror-pull", "container agent's resources differ",
                 "container refresh-token's environment lacks or differs in HTTPS_PROXY, NO_PROXY",
                 "image ghcr.io/azure/fleet/agent:v0.14.0 is not from mirror.corp:5000"):
        assert part in text, text
    assert shared.drift(SETTING, shared.pod_view(deployment(("agent", "other"))), containers=["agent"])[-1].startswith("container agent's")


def test_env_values_are_compared_by_fingerprint_and_never_kept():
    live = carrying({"env": {"HTTPS_PROXY": "http://me:s3cret@proxy:3128"}})
    view = shared.pod_view(live)
    assert "s3cret" not in repr(view)
    assert shared.drift({"env": {"HTTPS_PROXY": "http://me:s3cret@proxy:3128"}}, view) == []
    assert shared.drift({"env": {"HTTPS_PROXY": "http://me:other@proxy:3128"}}, view) == [
        "container agent's environment lacks or differs in HTTPS_PROXY"]


def test_the_patch_merges_by_name_and_keeps_what_others_put_there():
    live = deployment(("agent", "refresh-token"), tolerations=[{"key": "other", "operator": "Exists"}],
                      affinity={"podAntiAffinity": {"x": 1}})
    for container in live["spec"]["template"]["spec"]["containers"]:
        container["resources"] = {"limits": {"cpu": "1"}}
    setting = dict(SETTING, affinity={"nodeAffinity": {"y": 2}})
    spec = shared.deployment_patch(setting, live, shared.KEYS)["spec"]["template"]["spec"]
    assert spec["tolerations"] == [{"key": "other", "operator": "Exists"}, TOLERATION]  # no merge key: the whole list
    assert spec["affinity"] == {"podAntiAffinity": None, "nodeAffinity": {"y": 2}}  # replaced, not merged
    assert spec["nodeSelector"] == {"pool": "system"} and spec["priorityClassName"] == "system-cluster-critical"
    assert spec["imagePullSecrets"] == [{"name": "mirror-pull"}]
    agent = spec["containers"][0]
    assert agent["name"] == "agent" and agent["image"] == "mirror.corp:5000/azure/fleet/agent:v0.14.0"
    assert agent["env"] == [{"name": "HTTPS_PROXY", "value": "http://proxy.corp:3128"}, {"name": "NO_PROXY", "value": ".svc"}]
    assert agent["resources"] == {"limits": {"cpu": None, "memory": "1Gi"}, "requests": {"cpu": "100m", "memory": "128Mi"}}
    only_env = shared.deployment_patch(SETTING, live, ("env",), containers=["agent"])["spec"]["template"]["spec"]
    assert list(only_env) == ["containers"] and [c["name"] for c in only_env["containers"]] == ["agent"]


def test_kubefleet_renders_what_its_chart_takes_into_values():
    values = {"image": {"repository": "ghcr.io/azure/fleet/member-agent", "tag": "v0.14.0"},
              "refreshtoken": {"repository": "ghcr.io/azure/fleet/refresh-token"}, "resources": {"limits": {"cpu": "500m"}}}
    rendered = kubefleet.with_setting(values, SETTING)
    assert rendered["tolerations"] == [TOLERATION] and rendered["nodeSelector"] == {"pool": "system"}
    assert rendered["resources"] == SETTING["resources"]
    assert rendered["image"]["repository"] == "mirror.corp:5000/azure/fleet/member-agent"
    assert rendered["refreshtoken"]["repository"] == "mirror.corp:5000/azure/fleet/refresh-token"
    assert "env" not in rendered and values["image"]["repository"].startswith("ghcr.io")  # the input is not changed
    assert kubefleet.with_setting(values, {"resources": {}}) == values


def test_kubefleet_puts_the_registry_on_the_charts_own_repositories_when_none_is_set():
    chart = {"image": {"repository": "ghcr.io/kubefleet-dev/kubefleet/member-agent", "tag": ""},
             "refreshtoken": {"repository": "ghcr.io/kubefleet-dev/kubefleet/refresh-token"}}
    rendered = kubefleet.with_setting({"image": {"tag": "v0.2.1"}}, {"image_registry": "mirror.corp:5000"}, chart)
    assert rendered["image"] == {"tag": "v0.2.1", "repository": "mirror.corp:5000/kubefleet-dev/kubefleet/member-agent"}
    assert rendered["refreshtoken"] == {"repository": "mirror.corp:5000/kubefleet-dev/kubefleet/refresh-token"}
    with pytest.raises(ParameterError) as raised:  # a remote chart: its defaults are not known before Helm has it
        kubefleet.with_setting({}, {"image_registry": "mirror.corp:5000"})
    assert "image_repository" in raised.value.message() and "fleetops_kubefleet_member_agent_image_repository" in raised.value.message()
    assert set(kubefleet.CHART_KEYS) | set(kubefleet.PATCHED_KEYS) == set(shared.KEYS)


def test_fleet_takes_the_node_selector_as_affinity_and_skips_what_a_cluster_cannot_carry():
    setting, ignored = fleet.fleet_setting(SETTING)
    assert ignored == ["image_pull_secrets", "priority_class_name"]
    assert "node_selector" not in setting and "image_pull_secrets" not in setting
    terms = setting["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert terms == [{"matchExpressions": [{"key": "pool", "operator": "In", "values": ["system"]}]}]
    both = shared.node_selector_affinity({"pool": "system"}, {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}, {"matchFields": []}]}}})
    terms = both["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert [len(term["matchExpressions"]) for term in terms] == [2, 1]  # every term must also match the label
    assert fleet.fleet_setting(None) == (None, [])


def test_fleet_cluster_fields_and_their_drift():
    setting = fleet.fleet_setting(SETTING)[0]
    fields = fleet.cluster_fields(setting)
    assert sorted(fields) == sorted(fleet.CLUSTER_FIELDS)
    secret, data = fleet.env_secret(SETTING)
    assert secret.startswith(fleet.ENV_SECRET_PREFIX) and data == SETTING["env"]
    assert fields["agentEnvVars"] == [{"name": name, "valueFrom": {"secretKeyRef": {"name": secret, "key": name}}}
                                      for name in ("HTTPS_PROXY", "NO_PROXY")]
    assert "proxy.corp" not in repr(fields)
    assert fields["privateRepoURL"] == "mirror.corp:5000"
    assert fleet.cluster_fields({"tolerations": [], "env": {}}) == {"agentTolerations": None, "agentEnvVars": None}
    stored = dict(fields, agentResources={"requests": {"cpu": "0.1", "memory": "128Mi"}, "limits": {"memory": "1024Mi"}},
                  agentEnvVars=list(reversed(fields["agentEnvVars"])))
    view = fleet.spec_view(dict(stored, clientID="abc"))
    assert "proxy.corp" not in repr(view) and "clientID" not in view
    assert fleet.hub_drift(setting, view) == []
    assert fleet.hub_drift(setting, dict(view, privateRepoURL="other")) == ["the Cluster's privateRepoURL differs from the agent setting"]
    assert fleet.hub_drift({"tolerations": []}, view) == ["the Cluster's agentTolerations differs from the agent setting"]
    assert fleet.hub_drift({"tolerations": []}, {}) == []
    # values written by earlier versions, the same values in a Secret of another name, other values: all drift
    inline = fleet.spec_view({"agentEnvVars": shared.env_list(SETTING["env"])})
    renamed = fleet.spec_view({"agentEnvVars": shared.env_list(dict((n, shared.secret_reference("other", n)) for n in SETTING["env"]))})
    changed = fleet.fleet_setting(dict(SETTING, env={"HTTPS_PROXY": "http://proxy.corp:3129", "NO_PROXY": ".svc"}))[0]
    for live, wanted in ((inline, setting), (renamed, setting), (view, changed)):
        assert "the Cluster's agentEnvVars differs from the agent setting" in fleet.hub_drift(wanted, live)


def test_the_agent_env_secret_follows_the_values_and_a_cluster_record_keeps_no_value():
    name = fleet.env_secret({"env": {"A": "1", "B": "2"}})[0]
    assert fleet.env_secret({"env": {"B": "2", "A": "1"}})[0] == name != fleet.env_secret({"env": {"A": "1", "B": "3"}})[0]
    assert fleet.env_secret({"env": {}}) is None and fleet.env_secret(None) is None
    assert fleet.fleet_setting({"env": {}})[0] == {"env": {}}  # an empty env removes the Cluster's, names no Secret
    # a Cluster carrying values (earlier versions): the record of the change keeps the names, never the values
    live = {"agentEnvVars": [{"name": "HTTPS_PROXY", "value": "http://me:pw@proxy:3128"}]}
    record = fleet.change_record(fleet.fleet_setting({"env": {"HTTPS_PROXY": "http://me:pw@proxy:3128"}})[0], live)
    assert "pw@" not in record and fleet.recorded_fields(record) == {"agentEnvVars": [{"name": "HTTPS_PROXY"}]}
    # so the rollback to those values is refused (the record does not lead back to them), not made with empty ones
    before = fleet.spec_view(live)
    now = {"agentEnvVars": fleet.cluster_fields(fleet.fleet_setting({"env": {"HTTPS_PROXY": "x"}})[0])["agentEnvVars"]}
    assert fleet.restore_update(now, record, before) is None
    # a record of references leads back, and the setting restored reads the same Secret
    refs = fleet.cluster_fields(fleet.fleet_setting({"env": {"HTTPS_PROXY": "http://proxy:3128"}})[0])
    record = fleet.change_record(fleet.fleet_setting({"env": {"HTTPS_PROXY": "x"}})[0], refs)
    update, restored = fleet.restore_update(now, record, fleet.spec_view(refs))
    assert update == {"agentEnvVars": refs["agentEnvVars"]}
    assert fleet.fields_setting(restored)["env"] == {"HTTPS_PROXY": shared.secret_reference(fleet.env_secret(
        {"env": {"HTTPS_PROXY": "http://proxy:3128"}})[0], "HTTPS_PROXY")}


def test_a_deployment_patch_turns_an_env_value_into_a_reference_and_back():
    ref = {"HTTPS_PROXY": shared.secret_reference("fleetops-agent-env-1", "HTTPS_PROXY")}
    inline = deployment()
    inline["spec"]["template"]["spec"]["containers"][0]["env"].append({"name": "HTTPS_PROXY", "value": "http://proxy:3128"})
    patched = shared.deployment_patch({"env": ref}, inline, shared.KEYS)["spec"]["template"]["spec"]["containers"][0]["env"]
    assert patched == [{"name": "HTTPS_PROXY", "value": None,
                        "valueFrom": {"secretKeyRef": {"name": "fleetops-agent-env-1", "key": "HTTPS_PROXY"}}}]
    carried = carrying({"env": ref})
    assert shared.drift({"env": ref}, shared.pod_view(carried)) == []
    assert shared.pod_view(carried)["containers"][0]["env"] == {"HTTPS_PROXY": "secret fleetops-agent-env-1/HTTPS_PROXY"}
    back = shared.deployment_patch({"env": {"HTTPS_PROXY": "http://proxy:3128"}}, carried, shared.KEYS)
    assert back["spec"]["template"]["spec"]["containers"][0]["env"] == [
        {"name": "HTTPS_PROXY", "value": "http://proxy:3128", "valueFrom": None}]
    assert shared.credential_values({"env": ref}) == [] and shared.credential_names({"env": ref}) == []


def test_fleet_spec_update_replaces_fields_and_leaves_equal_quantities_alone():
    live = {"agentResources": {"requests": {"cpu": "100m"}}, "agentAffinity": {"podAntiAffinity": {"a": 1}}, "clientID": "c"}
    update = fleet.spec_update({"resources": {"requests": {"cpu": "0.1"}}, "affinity": {"nodeAffinity": {"b": 2}}, "tolerations": []}, live)
    assert update == {"agentAffinity": {"podAntiAffinity": None, "nodeAffinity": {"b": 2}}, "agentTolerations": None}
    assert fleet.spec_update({"resources": {"requests": {"cpu": "200m"}}}, live) == {"agentResources": {"requests": {"cpu": "200m"}}}
    assert fleet.spec_update(None, live) == {}


def test_fleet_chart_values_take_the_tolerations_and_the_registry():
    values = fleet.chart_values({"fleetAgent": {"hostNetwork": False}, "token": "t"}, fleet.fleet_setting(SETTING)[0])
    assert values["fleetAgent"] == {"hostNetwork": False, "tolerations": [TOLERATION]}
    assert values["global"] == {"cattle": {"systemDefaultRegistry": "mirror.corp:5000"}} and values["token"] == "t"
    assert "affinity" not in values["fleetAgent"]


def test_a_fleet_member_whose_cluster_or_agent_drifted_needs_reconfigure():
    setting = {"tolerations": [TOLERATION]}
    cluster = {"metadata": {"name": "edge", "namespace": "fleet-default", "labels": {}},
               "spec": {"clientID": "c", "agentTolerations": [TOLERATION]},
               "status": {"agent": {"lastSeen": "2026-11-25T07:00:00Z"},
                          "conditions": [{"type": "Ready", "status": "True"}]}}
    hub = RANCHER_FLEET.hub_view(cluster)
    member = {"release": {"name": "fleet-agent", "status": "deployed"}, "credential": True, "credential_usable": True,
              "credential_accepted": True, "deployment": True, "agent_pod": shared.pod_view(carrying(setting))}
    wanted = {"agent": setting, "stale_after": 0}
    assert RANCHER_FLEET.decide("edge", hub, member, wanted).action == "none"
    moved = RANCHER_FLEET.decide("edge", hub, dict(member, agent_pod=shared.pod_view(deployment())), wanted)
    assert moved.action == "reconfigure" and moved.healthy and "lacks 1 of the setting's tolerations" in moved.reasons[0]
    bare = RANCHER_FLEET.decide("edge", RANCHER_FLEET.hub_view(dict(cluster, spec={"clientID": "c"})), member, wanted)
    assert bare.action == "reconfigure" and bare.reasons == ["the Cluster's agentTolerations differs from the agent setting"]
    assert RANCHER_FLEET.decide("edge", hub, member, {"stale_after": 0}).action == "none"  # no setting: nothing is compared
    assert copy.deepcopy(bare.as_dict())["steps"] == {"member_object": True, "identity": False, "new_token": False,
                                                      "reset_credential": False, "agent": True, "revoke_previous": False,
                                                      "revoke_at_once": False, "finish_leave": False}


def test_what_a_store_keeps_of_a_fleet_cluster_holds_no_env_value_and_kubefleet_keeps_its_object():
    from ansible_collections.fleetops.registration.plugins.module_utils._kubefleet.manager import MANAGER as KUBEFLEET
    cluster = {"metadata": {"name": "edge-1"}, "spec": {"clientID": "abc", "agentEnvVars": [
        {"name": "HTTPS_PROXY", "value": "http://user:s3cret@proxy:3128"},
        {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "agent-env", "key": "token"}}}]}}
    kept = RANCHER_FLEET.storable(copy.deepcopy(cluster))
    assert "s3cret" not in str(kept)
    assert kept["spec"] == {"clientID": "abc", "agentEnvVars": [
        {"name": "HTTPS_PROXY"}, {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "agent-env", "key": "token"}}}]}
    assert RANCHER_FLEET.storable({"metadata": {"name": "bare"}}) == {"metadata": {"name": "bare"}}
    member = {"metadata": {"name": "m"}, "spec": {"identity": {"name": "m-hub-cluster-access"}}}
    assert KUBEFLEET.storable(member) is member


def test_the_agent_env_secrets_kept_are_the_wanted_one_those_the_agent_reads_and_the_newest_other():
    from ansible_collections.fleetops.registration.plugins.module_utils._rancher_fleet import agent_env

    def secret(name, made):
        return {"metadata": {"name": name, "creationTimestamp": made}}

    listed = [secret("e-1", "2026-11-01T00:00:00Z"), secret("e-2", "2026-11-02T00:00:00Z"),
              secret("e-3", "2026-11-03T00:00:00Z"), secret("e-4", "2026-11-04T00:00:00Z")]
    reads_one = carrying({"env": {"HTTPS_PROXY": shared.secret_reference("e-1", "HTTPS_PROXY")}})
    assert agent_env.read_by(reads_one) == {"e-1"} and agent_env.read_by(None) == set()
    assert sorted(agent_env.removable(listed, "e-4", reads_one)) == ["e-2"]  # e-3: the newest other (a rollback's)
    assert sorted(agent_env.removable(listed, "e-9", None)) == ["e-1", "e-2", "e-3"]
    assert agent_env.removable([], "e-9", None) == []
    body = agent_env.desired_secret("e-4", "cattle-fleet-system", {"HTTPS_PROXY": "http://p:3128"})
    assert body["data"] == {"HTTPS_PROXY": "aHR0cDovL3A6MzEyOA=="} and body["type"] == "Opaque"
    assert body["metadata"]["labels"] == {"app.kubernetes.io/managed-by": "fleetops.registration", "fleetops.io/agent-env": "true"}


def test_a_fleet_member_whose_agent_env_secret_is_gone_needs_reconfigure():
    setting = {"env": {"HTTPS_PROXY": "http://proxy:3128"}}
    secret = fleet.env_secret(setting)[0]
    fields = fleet.cluster_fields(fleet.fleet_setting(setting)[0])
    cluster = {"metadata": {"name": "edge", "namespace": "fleet-default", "labels": {}},
               "spec": {"clientID": "c", "agentEnvVars": fields["agentEnvVars"]},
               "status": {"agent": {"lastSeen": "2026-11-25T07:00:00Z"}, "conditions": [{"type": "Ready", "status": "True"}]}}
    running = carrying(fleet.fleet_setting(setting)[0])
    member = {"release": {"name": "fleet-agent", "status": "deployed"}, "credential": True, "credential_usable": True,
              "credential_accepted": True, "deployment": True, "agent_pod": shared.pod_view(running), "env_secrets_missing": []}
    wanted = {"agent": setting, "stale_after": 0}
    hub = RANCHER_FLEET.hub_view(cluster)
    assert RANCHER_FLEET.decide("edge", hub, member, wanted).action == "none"
    gone = RANCHER_FLEET.decide("edge", hub, dict(member, env_secrets_missing=[secret]), wanted)
    assert gone.action == "reconfigure" and gone.healthy
    assert gone.reasons == ["the agent's environment Secret cattle-fleet-system/%s is missing" % secret]
    # not read (the view role): nothing is said of it
    assert RANCHER_FLEET.decide("edge", hub, dict(member, env_secrets_missing=None), wanted).action == "none"


def test_the_member_view_names_the_env_secrets_the_agent_reads_that_are_gone():
    from ansible_collections.fleetops.registration.plugins.module_utils._rancher_fleet.member import member_view
    running = carrying({"env": {"A": shared.secret_reference("fleetops-agent-env-1", "A"),
                                "B": shared.secret_reference("someone-elses", "B")}})
    facts = {"release": None, "adopted": [], "releases": {}, "deployment": running, "credential": None, "bootstrap": None,
             "namespace": {}, "unread": [], "secret_names": {"other"}}
    assert member_view(facts)["env_secrets_missing"] == ["fleetops-agent-env-1"]
    assert member_view(dict(facts, secret_names={"fleetops-agent-env-1"}))["env_secrets_missing"] == []
    assert member_view(dict(facts, unread=["secrets"]))["env_secrets_missing"] is None


class _RacedKube:
    """A member where another run creates the env Secret between this one's read and its create (409)."""

    def __init__(self, there):
        self.there, self.creates, self.patches, self.reads = there, 0, [], 0

    def get(self, resource, name, namespace):
        self.reads += 1
        return None if self.reads == 1 else self.there

    def create(self, resource, body, namespace, dry_run=False):
        self.creates += 1
        from ansible_collections.fleetops.registration.plugins.module_utils.errors import ApiError
        raise ApiError("secrets %s already exists" % body["metadata"]["name"], status=409)

    def patch(self, resource, name, body, namespace, dry_run=False):
        self.patches.append(body)

    def list(self, resource, namespace, label_selector=None):
        return []


def test_an_env_secret_another_run_made_first_is_taken_as_written_and_only_checked():
    from ansible_collections.fleetops.registration.plugins.module_utils._rancher_fleet import agent_env
    from ansible_collections.fleetops.registration.plugins.module_utils.errors import ApiError
    values = {"HTTPS_PROXY": "http://p:3128"}
    made = agent_env.desired_secret("e-4", "cattle-fleet-system", values)
    kube = _RacedKube(made)
    assert agent_env.write(kube, "cattle-fleet-system", ("e-4", values), None, False) == []
    assert kube.creates == 1 and kube.patches == []
    # one made with other data under that name is written again; a conflict with nothing found is the error it was
    kube = _RacedKube(dict(made, data={"HTTPS_PROXY": "eA=="}))
    assert agent_env.write(kube, "cattle-fleet-system", ("e-4", values), None, False)[0].endswith("was written again")
    with pytest.raises(ApiError):
        agent_env.write(_RacedKube(None), "cattle-fleet-system", ("e-4", values), None, False)


def test_the_env_secrets_a_leave_removes_are_those_the_selector_lists():
    from ansible_collections.fleetops.registration.plugins.module_utils._rancher_fleet import agent_env
    made = agent_env.desired_secret("e-4", "cattle-fleet-system", {"A": "b"})
    assert agent_env.written_by_collection(made)
    assert agent_env.SELECTOR == "app.kubernetes.io/managed-by=fleetops.registration,fleetops.io/agent-env"
    someone_elses = {"metadata": {"name": "x", "labels": {"fleetops.io/agent-env": "true"}}}
    assert not agent_env.written_by_collection(someone_elses)
    assert not agent_env.written_by_collection({"metadata": {"name": "y"}})
