"""member_info's ``members``: how one item's options are formed and checked (no API involved)."""

import pytest

from ansible_collections.fleetops.registration.plugins.module_utils.argspec import AUTH, HUB_AUTH, merge
from ansible_collections.fleetops.registration.plugins.module_utils.errors import ParameterError
from ansible_collections.fleetops.registration.plugins.module_utils.member_batch import (
    check_unique_names, item_params, item_spec, merged_item,
)
from ansible_collections.fleetops.registration.plugins.module_utils.member_state import member_info_argument_spec

SPEC = merge(AUTH, HUB_AUTH, member_info_argument_spec())
TASK = {"name": None, "members": [], "hub_kubeconfig": "/hub.yaml", "hub_context": "hub", "kubeconfig": None,
        "backends": ["kubefleet", "rancher_fleet"], "labels": {}, "labels_mode": "merge", "stale_after": 3600,
        "fleet_namespace": "fleet-default", "force": [], "validate_certs": None}


class FakeModule:
    """What item_params uses of a module: its validated params and the secrets it is told to hide."""

    def __init__(self, params=None):
        self.params = dict(TASK, **(params or {}))
        self.argument_spec = SPEC
        self.hidden = set()

    def hide(self, *values):
        self.hidden.update(v for v in values if v)


def test_an_item_takes_every_option_but_members_and_needs_a_name():
    spec = item_spec(SPEC)
    assert "members" not in spec and spec["name"]["required"] is True
    assert SPEC["name"].get("required") is not True  # the module's own spec is untouched


def test_item_options_override_the_task_and_empty_strings_count_as_unset():
    merged = merged_item(TASK, SPEC, {"name": "edge-07", "kubeconfig": "/edge.yaml", "context": "", "hub_context": "other",
                                      "labels": {"env": "prod"}})
    assert merged["kubeconfig"] == "/edge.yaml" and merged["hub_context"] == "other" and merged["labels"] == {"env": "prod"}
    assert merged["hub_kubeconfig"] == "/hub.yaml" and "context" not in merged and "members" not in merged


def test_an_alias_in_the_item_replaces_the_tasks_canonical_option():
    merged = merged_item(dict(TASK, validate_certs=True), SPEC, {"name": "e", "verify_ssl": False})
    assert merged["verify_ssl"] is False and "validate_certs" not in merged


def test_item_params_are_validated_like_the_module_own():
    module = FakeModule()
    params = item_params(module, item_spec(SPEC), 0, {"name": "edge-07", "stale_after": "60", "kubeconfig": "/edge.yaml"})
    assert params["stale_after"] == 60 and params["hub_kubeconfig"] == "/hub.yaml" and params["labels_mode"] == "merge"


@pytest.mark.parametrize("item, words", [
    ({"name": "e", "labels_mode": "sideways"}, ["members[2]", "labels_mode"]),
    ({"name": "e", "colour": "blue"}, ["members[2]", "colour"]),
    ({"kubeconfig": "/x"}, ["members[2]", "name"]),
    ("edge-07", ["members[2]", "mapping"]),
])
def test_a_bad_item_is_named_with_the_option_at_fault(item, words):
    with pytest.raises(ParameterError) as caught:
        item_params(FakeModule(), item_spec(SPEC), 2, item)
    assert all(word in caught.value.message() for word in words), caught.value.message()


KUBECONFIG = {"clusters": [{"name": "c", "cluster": {"server": "https://e"}}], "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
              "users": [{"name": "u", "user": {"token": "sekrit-token"}}], "current-context": "c"}


@pytest.mark.parametrize("item, option, secret", [
    ({"name": "e", "api_key": "abc-key"}, "members[0].api_key", "abc-key"),
    ({"name": "e", "hub_api_key": "abc-key"}, "members[0].hub_api_key", "abc-key"),
    ({"name": "e", "kubeconfig": KUBECONFIG}, "members[0].kubeconfig", "sekrit-token"),
    ({"name": "e", "hub_kubeconfig": KUBECONFIG}, "members[0].hub_kubeconfig", "sekrit-token"),
])
def test_credentials_in_an_item_are_refused_and_hidden(item, option, secret):
    module = FakeModule()
    with pytest.raises(ParameterError) as caught:
        item_params(module, item_spec(SPEC), 0, item)
    message = caught.value.message()
    assert message.startswith(option + ":"), message
    assert "kubeconfig file" in message or "its path" in message, message
    assert secret in module.hidden and secret not in caught.value.message()


def test_a_name_given_twice_refuses_the_batch():
    with pytest.raises(ParameterError, match=r"members\[2\].name: 'b' is given twice"):
        check_unique_names([{"name": "a"}, {"name": "b"}, {"name": "b"}])
    check_unique_names([{"name": "a"}, {"name": "b"}, "not a mapping"])


def test_members_that_reach_one_cluster_each_get_an_error_naming_the_other():
    from ansible_collections.fleetops.registration.plugins.module_utils.member_batch import refuse_shared_clusters
    members = {"edge-1": {"name": "edge-1", "identity": {"uid": "u1"}}, "edge-2": {"name": "edge-2", "identity": {"uid": "u1"}},
               "edge-3": {"name": "edge-3", "identity": {"uid": "u3"}}, "edge-4": {"name": "edge-4", "error": "unreachable"},
               "edge-5": {"name": "edge-5", "error": "replace_rebuilt: ...", "identity": {"uid": "u3"}}}
    refuse_shared_clusters(members)
    assert members["edge-1"]["error"].startswith("kubeconfig: member edge-1 reaches the same cluster as edge-2 (kube-system Namespace UID u1)")
    assert "edge-1" in members["edge-2"]["error"] and "identity" not in members["edge-2"]
    assert members["edge-4"]["error"] == "unreachable"
    # a member whose own read failed still counts: its cluster is the one edge-3 reaches
    assert "as edge-5" in members["edge-3"]["error"] and "as edge-3" in members["edge-5"]["error"]


def test_a_member_whose_cluster_the_hub_records_for_another_member_is_refused():
    from ansible_collections.fleetops.registration.plugins.module_utils.member_batch import refuse_shared_clusters
    recorded = {"metadata": {"annotations": {"fleetops.registration/cluster-uid": "u1"}}}
    listed = {("hub", "kubefleet", None): {"edge-1": recorded, "edge-2": {"metadata": {}}},
              ("hub", "rancher_fleet", "fleet-default"): ParameterError("x", "not served")}
    members = {"edge-1": {"name": "edge-1", "identity": {"uid": "u1"}},
               "edge-2": {"name": "edge-2", "error": "replace_rebuilt: ...", "identity": {"uid": "u1"}},
               "edge-3": {"name": "edge-3", "identity": {"uid": "u3"}}}
    refuse_shared_clusters(members, listed)
    assert members["edge-2"]["error"].startswith("kubeconfig: member edge-2 reaches the same cluster as edge-1")
    members = {"edge-2": {"name": "edge-2", "error": "replace_rebuilt: ...", "identity": {"uid": "u1"}},
               "edge-1": {"name": "edge-1", "identity": {"uid": "u1x"}}}
    refuse_shared_clusters(members, listed)
    assert members["edge-2"]["error"].startswith("kubeconfig: member edge-2 reaches the cluster that joined as edge-1 (kube-system")
    assert "error" not in members["edge-1"]
