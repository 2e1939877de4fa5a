"""The roles' wiring table (plugin_utils/role_wiring.py): where each setting comes from, what each step is given,
and that every option a role passes has the inventory's words for an error."""

from pathlib import Path

import pytest
import yaml

from ansible_collections.fleetops.registration.plugins.plugin_utils.backends import backend_request
from ansible_collections.fleetops.registration.plugins.plugin_utils.inventory_terms import inventory_terms
from ansible_collections.fleetops.registration.plugins.plugin_utils import role_wiring as wiring

REPO = Path(__file__).resolve().parents[2]


def _defaults(role):
    return yaml.safe_load((REPO / "roles" / role / "defaults" / "main.yml").read_text()) or {}


def _settings(role, host=None, hub=None, hub_group=("hub",), served=None):
    """The settings a member gets from its host variables ``host`` (the role's defaults included) and the hub's."""
    variables = dict(_defaults(role), inventory_hostname="member1", groups={"hub": list(hub_group)}, **(host or {}))
    hubs = {"hub": hub or {}}

    def get(name):
        return variables.get(name, wiring.MISSING)

    def hub_get(host_name, name):
        return hubs.get(host_name, {}).get(name, wiring.MISSING)
    return wiring.settings(role, get, hub_get, backend_request, served=served)


def test_a_setting_is_its_role_variable_else_the_first_inventory_variable_set_else_its_default():
    found = _settings("member_join")
    assert found["cluster_name"] == "member1" and found["kubeconfig"] == "" and found["labels"] == {}
    assert found["fleet_namespace"] == "fleet-default" and found["kubefleet_identity_namespace"] == "fleetops-system"
    assert found["kubefleet_taints"] is None and found["replace_rebuilt"] is False and found["hub_host"] == "hub"
    found = _settings("member_join", {"fleetops_cluster_name": "", "fleetops_kubeconfig": "/m", "fleetops_member_kubeconfig": "",
                                      "fleetops_fleet_namespace": "clusters", "fleetops_replace_rebuilt": "yes"})
    # a blank (what AWX injects for an empty field) counts as not set
    assert found["cluster_name"] == "member1" and found["kubeconfig"] == "/m" and found["fleet_namespace"] == "clusters"
    assert found["replace_rebuilt"] is True
    found = _settings("member_join", {"fleetops_cluster_name": "edge-1", "member_join_cluster_name": "mine",
                                      "fleetops_member_kubeconfig": "/cred", "fleetops_kubeconfig": "/m"})
    assert found["cluster_name"] == "mine" and found["kubeconfig"] == "/cred"


def test_the_hub_s_settings_come_from_the_single_hub_host_unless_a_credential_gives_them():
    hub = {"fleetops_kubeconfig": "/hub", "fleetops_context": "hub", "fleetops_api_server_url": "https://h:6443"}
    found = _settings("member_join", hub=hub)
    assert (found["hub_kubeconfig"], found["hub_context"], found["hub_api_server_url"]) == ("/hub", "hub", "https://h:6443")
    found = _settings("member_join", {"fleetops_hub_kubeconfig": "/awx", "fleetops_hub_context": ""}, hub=hub)
    assert (found["hub_kubeconfig"], found["hub_context"]) == ("/awx", "hub")
    found = _settings("member_leave", hub=hub, hub_group=("hub", "hub2"))
    assert (found["hub_host"], found["hub_kubeconfig"]) == ("", "")
    assert wiring.inventory_problem("member_leave", found).startswith("The hub is unknown")


def test_worked_out_settings_the_token_lives_three_waits_and_the_rollback_waits_as_long():
    found = _settings("member_join", {"member_join_wait_timeout": 200})
    assert found["fleet_token_ttl"] == "600s" and found["rollback_wait_timeout"] == 200
    assert _settings("member_join", {"member_join_fleet_token_ttl": "1h"})["fleet_token_ttl"] == "1h"
    found = _settings("member_join", {"fleetops_backends": "", "fleetops_survey_backends": "kubefleet"})
    assert (found["backends"], found["detect_backends"]) == (["kubefleet"], False)
    found = _settings("member_leave", served=["rancher_fleet"])
    assert found["backends"] == ["rancher_fleet"]


@pytest.mark.parametrize("host,waits", [({}, False), ({"member_leave_keep_agents": True}, True),
                                        ({"member_leave_kubefleet_force": "true"}, True)])
def test_a_leave_waits_at_the_member_cluster_step_only_when_no_agent_step_waits_or_a_forced_leave_must_time_out(host, waits):
    hub = {"fleetops_kubeconfig": "/hub", "fleetops_context": "hub"}
    found = wiring.with_state("member_leave", _settings("member_leave", host, hub=hub), {})
    args = wiring.module_args(wiring.MODULE_ARGS["member_leave"], found)
    assert args["kubefleet_member_cluster"]["wait"] is waits
    # the agent step reads the MemberCluster to finish a leave in progress before it uninstalls
    assert (args["kubefleet_member_agent"]["hub_kubeconfig"], args["kubefleet_member_agent"]["hub_context"]) == ("/hub", "hub")


def test_each_step_gets_the_settings_and_the_member_s_state_its_options_are_wired_to():
    state = {"run_id": "r1", "lock": {"holder": "x"}, "labels": {"a": "b"}, "identity": {"uid": "u"}}
    host = {"fleetops_kubefleet_quarantine": "true", "member_join_agent_secret_values": {"kubefleet": {"k": 1}}}
    found = wiring.with_state("member_join", _settings("member_join", host), state)
    args = wiring.module_args(wiring.MODULE_ARGS["member_join"], found)
    assert args["fleet_registration_token"]["name"] == "fleetops-join-r1" and args["fleet_registration_token"]["ttl"] == "900s"
    assert args["fleet_cluster"]["labels"] == {"a": "b"} and args["fleet_cluster"]["member_lock"] == {"holder": "x"}
    assert args["kubefleet_member_cluster"]["quarantine"] == "hold" and "taints" not in args["kubefleet_member_cluster"]
    assert args["kubefleet_member_agent"]["secret_values"] == {"k": 1} and "secret_values" not in args["fleet_agent"]
    assert args["fleet_agent"]["kubeconfig"] == "" and args["kubefleet_member_identity"]["kubeconfig"] == ""
    assert "quarantine" not in wiring.module_args(wiring.MODULE_ARGS["member_join"],
                                                  wiring.with_state("member_join", _settings("member_join"), state))["kubefleet_member_cluster"]


@pytest.mark.parametrize("quarantine, quarantined, member_object, lifted", [
    (True, False, True, True), (False, True, True, True), (False, False, True, False), (True, True, False, False)])
def test_the_quarantine_is_lifted_when_this_run_sets_it_or_an_earlier_one_left_it(quarantine, quarantined, member_object, lifted):
    state = {"managers": {"kubefleet": {"steps": {"member_object": member_object}, "hub": {"quarantined": quarantined}}}}
    assert wiring.lift_quarantine({"kubefleet_quarantine": quarantine}, state) is lifted
    assert wiring.lift_quarantine({"kubefleet_quarantine": True}, {"managers": {}}) is False


def test_the_inventory_check_names_a_missing_chart_or_the_member_s_own_error():
    found = _settings("member_join", {"fleetops_fleet_agent_chart": "oci://x/fleet-agent"}, hub={"fleetops_kubeconfig": "/h"})
    assert wiring.inventory_problem("member_join", found, {"managers": {"rancher_fleet": {}}}) is None
    assert wiring.inventory_problem("member_join", found, {"managers": {"kubefleet": {}}}) == wiring.INVENTORY_HINT["member_join"]
    assert wiring.inventory_problem("member_join", found, {"error": "name: bad"}) == "name: bad"


@pytest.mark.parametrize("role", sorted(wiring.MODULE_ARGS))
def test_every_option_a_role_passes_is_wired_to_a_known_setting_and_has_words(role):
    known = set(wiring.SETTINGS[role]) | set(wiring.INVENTORY_ONLY) | set(wiring.DERIVED) | {
        "state_lock", "state_labels", "state_identity", "state_run_id", "state_kubefleet_silent", "state_rancher_fleet_silent",
        "agent_chart_versions", "agent_values", "agent_images", "force"}
    for module, options in wiring.MODULE_ARGS[role].items():
        assert set(options.values()) <= known, (module, set(options.values()) - known)
        words = wiring.option_words(role, module)
        unnamed = [option for option, setting in options.items() if option not in words
                   and setting not in ("state_lock", "state_identity", "state_run_id", "state_kubefleet_silent", "state_rancher_fleet_silent")
                   and not setting.startswith("agent_") and setting != "force"]
        assert not unnamed, (module, unnamed)


def test_the_options_issue_32_found_unnamed_now_name_their_variables():
    said = inventory_terms("agent: tolerations[0] must be a mapping", "member_join", "fleetops.registration.fleet_agent")
    assert said.startswith("agent (from fleetops_agent (member_join_agent)): ")
    said = inventory_terms("credential_max_age: 'soon' is not a duration", "member_join")
    assert said.startswith("credential_max_age (from fleetops_credential_max_age (member_join_credential_max_age)): ")
    assert "fleetops_kubefleet_member_agent_image_tag" in inventory_terms("image_tag: bad", "member_join", "kubefleet_member_agent")


@pytest.mark.parametrize("role", sorted(wiring.SETTINGS))
def test_every_setting_is_a_documented_role_variable_whose_inventory_variables_are_named(role):
    specs = yaml.safe_load((REPO / "roles" / role / "meta" / "argument_specs.yml").read_text())
    options = dict(specs["argument_specs"]["main"]["options"])
    options.update(specs["argument_specs"].get("rollback", {}).get("options", {}))
    for name, spec in wiring.SETTINGS[role].items():
        variable = "%s_%s" % (role, name)
        assert variable in options, "%s is not in roles/%s/meta/argument_specs.yml" % (variable, role)
        text = " ".join(options[variable]["description"])
        missing = [source.split(":")[-1] for source in spec["sources"]
                   if source != "inventory_hostname" and source.split(":")[-1] not in text]
        assert not missing, (variable, missing)


@pytest.mark.parametrize("role", sorted(wiring.SETTINGS))
def test_a_default_is_written_once(role):
    """A setting that comes from the inventory has its default in the table, not in the role's defaults too."""
    defaults = _defaults(role)
    twice = [name for name, spec in wiring.SETTINGS[role].items() if spec["sources"] and "%s_%s" % (role, name) in defaults]
    assert not twice


@pytest.mark.parametrize("role", ("hub", "member_join", "member_leave"))
def test_a_documented_default_is_the_one_its_owner_sets(role):
    """argument_specs documents each default; the owner is the role's defaults/main.yml, the wiring table (a setting
    from the inventory) or the module (a setting the role leaves to it)."""
    from ansible_collections.fleetops.registration.plugins.module_utils.member_state import member_info_argument_spec
    module_defaults = {"member_join_fleet_agent_stale_after": member_info_argument_spec()["stale_after"].get("default")}
    defaults = _defaults(role)
    specs = yaml.safe_load((REPO / "roles" / role / "meta" / "argument_specs.yml").read_text())["argument_specs"]
    for entry in specs.values():
        for name, spec in entry.get("options", {}).items():
            if "default" not in spec:
                continue
            setting = wiring.SETTINGS.get(role, {}).get(name[len(role) + 1:])
            if name in defaults:
                owner = defaults[name]
            elif name in module_defaults:
                owner = module_defaults[name]
            else:
                assert setting and setting["sources"], "%s documents a default nobody sets" % name
                owner = setting["default"]
            if isinstance(owner, str) and "{{" in owner:
                # a default worked out from the inventory: the documented one is the expression's fallback
                assert repr(spec["default"]) in owner or str(spec["default"]) in owner, (name, spec["default"], owner)
            else:
                assert spec["default"] == owner, (name, spec["default"], owner)


@pytest.mark.parametrize("role", ("hub", "member_join", "member_leave"))
def test_every_option_with_a_literal_default_documents_it(role):
    """ansible-doc -t role prints each option's default: an option whose owner (the role's defaults or the wiring table)
    sets a literal, non-empty default documents it, so the page never says null beside a real default."""
    defaults = _defaults(role)
    specs = yaml.safe_load((REPO / "roles" / role / "meta" / "argument_specs.yml").read_text())["argument_specs"]
    undocumented = []
    for entry in specs.values():
        for name, spec in entry.get("options", {}).items():
            setting = wiring.SETTINGS.get(role, {}).get(name[len(role) + 1:]) or {}
            owner = defaults.get(name, setting.get("default"))
            literal = owner not in (None, "", [], {}) and not (isinstance(owner, str) and "{{" in owner)
            if literal and "default" not in spec:
                undocumented.append(name)
    assert not undocumented, "roles/%s/meta/argument_specs.yml: no default: for %s" % (role, undocumented)


# -- member_join's no-change path: which member is done after the batch's read, and the facts it gets -----------------

def _state(pending=(), **extra):
    release = {"name": "member-agent", "namespace": "default", "revision": 3, "status": "deployed", "chart": "member-agent",
               "chart_version": "0.14.0", "values": {"token": "secret"}}
    managers = {"kubefleet": {"action": "none" if not pending else "install", "reasons": [], "member": {"release": release},
                              "hub": {"joined": True, "healthy": True}}}
    return dict({"name": "edge-1", "managers": managers, "pending": list(pending), "healthy": not pending}, **extra)


def test_a_member_is_done_only_when_it_needs_no_step_has_no_problem_and_the_run_locked_nothing():
    from ansible_collections.fleetops.registration.plugins.action.step_args import member_done
    assert member_done(_state(), "", [])
    assert not member_done(_state(pending=["kubefleet"]), "", [])
    assert not member_done(_state(), "member_join_hub_host: no hub", [])
    assert not member_done({"name": "edge-1", "error": "unreachable"}, "", [])
    assert not member_done({}, "", ["edge-2"]) and not member_done(_state(), "", ["edge-2"])  # the release runs at the role's end
    assert not member_done(None, "", [])


def test_the_states_read_again_under_the_lock_replace_the_batch_s_and_a_skipped_lock_locked_nothing():
    from ansible_collections.fleetops.registration.plugins.action.step_args import after_locks
    batch = {"edge-1": _state()}
    assert after_locks(batch, {}) == (batch, [])
    assert after_locks(batch, {"skipped": True, "changed": False}) == (batch, [])
    again = {"edge-1": _state(pending=["kubefleet"])}
    assert after_locks(batch, {"members": again, "locked": ["edge-1"]}) == (again, ["edge-1"])
    assert after_locks(None, {}) == (None, [])


def test_step_args_checks_its_small_arguments_and_takes_the_batch_states_as_they_are():
    from ansible.errors import AnsibleActionFail
    from ansible_collections.fleetops.registration.plugins.action.step_args import validated_args
    states = {"edge-1": _state()}
    args = validated_args({"role": "member_join", "states": states, "set_facts": "yes"})
    assert args["states"] is states  # not a copy per member: the batch's states are read, never changed
    assert args["set_facts"] is True and args["entry"] == "main" and args["locks"] == {}
    assert validated_args({"role": "member_leave"})["states"] is None
    with pytest.raises(AnsibleActionFail, match="states must be a dict"):
        validated_args({"role": "member_join", "states": ["edge-1"]})
    with pytest.raises(AnsibleActionFail, match="role"):
        validated_args({"role": "member_joins"})
    with pytest.raises(AnsibleActionFail, match="lock_states"):
        validated_args({"role": "member_join", "lock_states": {}})
    with pytest.raises(AnsibleActionFail, match="mutually exclusive"):
        validated_args({"role": "member_join", "states": states, "states_from": "member_join__batch"})


def test_step_args_reads_the_batch_states_and_the_lock_from_the_variables_named_as_they_are_stored():
    from ansible.errors import AnsibleActionFail
    from ansible_collections.fleetops.registration.plugins.action.step_args import batch_results, validated_args
    states = {"edge-1": _state()}
    skipped = {"changed": False, "skipped": True, "false_condition": "not ansible_check_mode"}
    task_vars = {"member_join__batch": {"changed": False, "members": states}, "member_join__locks": skipped}
    args = validated_args({"role": "member_join", "states_from": "member_join__batch", "locks_from": "member_join__locks"})
    read, locks = batch_results(args, task_vars)
    assert read is states and locks is skipped
    assert batch_results(validated_args({"role": "member_join", "states": states}), {}) == (states, {})
    with pytest.raises(AnsibleActionFail, match="states_from: member_join__batchs is not a registered member_info"):
        batch_results(validated_args({"role": "member_join", "states_from": "member_join__batchs"}), task_vars)
    with pytest.raises(AnsibleActionFail, match="locks_from: x is not a registered member_lock"):
        batch_results(validated_args({"role": "member_join", "states": states, "locks_from": "x"}), {"x": ["a"]})


def test_a_done_member_gets_its_releases_and_summary_the_others_their_releases_only():
    from ansible_collections.fleetops.registration.plugins.action.step_args import join_facts
    done = join_facts(_state(), {}, False, True)
    assert done["member_join_releases_before"]["kubefleet"]["revision"] == 3
    assert "values" not in done["member_join_releases_before"]["kubefleet"]
    assert done["member_join_summary"]["kubefleet"]["agent"] == "unchanged"
    assert "secret" not in str(done)
    pending = join_facts(_state(pending=["kubefleet"]), {}, False, False)
    assert set(pending) == {"member_join_releases_before"}


@pytest.mark.parametrize("host, expected", [
    ({}, ["kubefleet.yml", "rancher_fleet_agent.yml", "rancher_fleet_cluster.yml"]),
    ({"fleetops_leave_workloads": "keep"}, ["kubefleet.yml", "rancher_fleet_agent.yml", "rancher_fleet_cluster.yml"]),
    ({"fleetops_leave_workloads": ""}, ["kubefleet.yml", "rancher_fleet_agent.yml", "rancher_fleet_cluster.yml"]),
    ({"fleetops_leave_workloads": "remove"}, ["kubefleet.yml", "rancher_fleet_cluster.yml", "rancher_fleet_agent.yml"]),
    ({"member_leave_workloads": "remove", "fleetops_leave_workloads": "keep"},
     ["kubefleet.yml", "rancher_fleet_cluster.yml", "rancher_fleet_agent.yml"]),
    ({"fleetops_leave_workloads": "remove", "fleetops_backends": ["kubefleet"]}, ["kubefleet.yml"]),
    ({"fleetops_backends": ["rancher_fleet"]}, ["rancher_fleet_agent.yml", "rancher_fleet_cluster.yml"]),
    ({"fleetops_survey_leave_workloads": "", "fleetops_leave_workloads": "remove"},
     ["kubefleet.yml", "rancher_fleet_cluster.yml", "rancher_fleet_agent.yml"]),
    ({"fleetops_survey_leave_workloads": "keep", "fleetops_leave_workloads": "remove"},
     ["kubefleet.yml", "rancher_fleet_agent.yml", "rancher_fleet_cluster.yml"]),
    ({"fleetops_survey_leave_workloads": "remove"}, ["kubefleet.yml", "rancher_fleet_cluster.yml", "rancher_fleet_agent.yml"]),
])
def test_the_leave_keeps_the_workloads_by_default_and_deletes_the_fleet_cluster_before_its_agent_to_remove_them(host, expected):
    found = _settings("member_leave", host, served=["rancher_fleet", "kubefleet"])
    assert wiring.leave_task_files(found) == expected
    args = wiring.module_args(wiring.MODULE_ARGS["member_leave"], found)
    workloads = host.get("member_leave_workloads") or host.get("fleetops_survey_leave_workloads") or \
        host.get("fleetops_leave_workloads") or "keep"
    assert args["fleet_agent"]["workloads"] == args["kubefleet_member_agent"]["workloads"] == workloads


def test_leave_task_files_exist_and_a_bad_workloads_value_is_refused_naming_the_variables():
    tasks = REPO / "roles" / "member_leave" / "tasks"
    found = _settings("member_leave", {"fleetops_leave_workloads": "remove"}, served=["rancher_fleet", "kubefleet"])
    assert all((tasks / name).is_file() for name in wiring.leave_task_files(found))
    assert wiring.inventory_problem("member_leave", found) is None
    bad = _settings("member_leave", {"fleetops_leave_workloads": "delete"}, served=["kubefleet"])
    problem = wiring.inventory_problem("member_leave", bad)
    assert problem.startswith("fleetops_leave_workloads, or the survey's fleetops_survey_leave_workloads (member_leave_workloads): "
                              "'delete' is not one of keep, remove"), problem


def test_the_agent_step_is_told_what_member_info_judged_silent():
    """The member step of the same run may set the heartbeat period back (10 s -> 60 s), after which the agent step's
    own look would call the frozen agent's 41 s old heartbeat fresh: it restarts on member_info's judgement."""
    silent = {"cause": "silent", "evidence": "the member agent's last heartbeat is 41s old", "action": "install"}
    state = {"run_id": "r1", "managers": {"kubefleet": {"findings": [{"cause": "spec_drift", "evidence": "x"}, silent]}}}
    found = wiring.with_state("member_join", {"fleet_token_name": None}, state)
    assert found["state_kubefleet_silent"] == silent["evidence"]
    assert wiring.module_args(wiring.MODULE_ARGS["member_join"], found)["kubefleet_member_agent"]["silent"] == silent["evidence"]
    assert wiring.with_state("member_join", {"fleet_token_name": None}, {"managers": {}})["state_kubefleet_silent"] is None


def test_the_fleet_agent_step_is_told_what_member_info_judged_silent_by_the_users_stale_after():
    """member_info judges a Fleet agent silent by the inventory's stale_after; the agent step restarts on that judgement
    (its own look knows only the default bound) and no other manager's silence reaches it."""
    silent = {"cause": "silent", "evidence": "the agent last checked in 700s ago, more than stale_after (600s)", "action": "reregister"}
    state = {"run_id": "r1", "managers": {"rancher_fleet": {"findings": [silent]}, "kubefleet": {"findings": []}}}
    args = wiring.module_args(wiring.MODULE_ARGS["member_join"], wiring.with_state("member_join", {"fleet_token_name": None}, state))
    assert args["fleet_agent"]["silent"] == silent["evidence"] and "silent" not in args["kubefleet_member_agent"]
