"""Issue 49, item 3: bad values are refused first. Every inventory or role value with a format is checked before any
cluster is read (plugin_utils/role_values.py, run by step_args with validate, and for every member of a play with
all_hosts), by the rule of the module that takes it later, and the error names the variable it came from, its value
and the fix - in inventory_terms' words. One case per value, for each role that takes it."""

from pathlib import Path

import pytest
import yaml

from ansible_collections.fleetops.registration.plugins.plugin_utils.backends import backend_request
from ansible_collections.fleetops.registration.plugins.filter.cluster_specs import cluster_specs
from ansible_collections.fleetops.registration.plugins.plugin_utils.inventory_terms import inventory_terms
from ansible_collections.fleetops.registration.plugins.plugin_utils import role_values, role_wiring as wiring

REPO = Path(__file__).resolve().parents[2]
PEM = "-----BEGIN CERTIFICATE-----\nMIIBhub\n-----END CERTIFICATE-----\n"


def _kubeconfig(path, contexts=("hub", "member1"), user=None):
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": contexts[0],
        "clusters": [{"name": name, "cluster": {"server": "https://127.0.0.1:1", "insecure-skip-tls-verify": True}}
                     for name in contexts],
        "users": [{"name": "u", "user": user or {"token": "t"}}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": "u"}} for name in contexts]}))
    return str(path)


@pytest.fixture
def inventory(tmp_path, monkeypatch):
    """A member and its hub that a join takes as they are (kubeconfig files, no environment fallback)."""
    for variable in ("KUBECONFIG", "K8S_AUTH_KUBECONFIG"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    kubeconfig = _kubeconfig(tmp_path / "kubeconfig")
    return {"host": {"fleetops_kubeconfig": kubeconfig, "fleetops_context": "member1"},
            "hub": {"fleetops_kubeconfig": kubeconfig, "fleetops_context": "hub"}, "dir": tmp_path}


def _defaults(role):
    return yaml.safe_load((REPO / "roles" / role / "defaults" / "main.yml").read_text()) or {}


def _getters(role, host, hub):
    variables = dict(_defaults(role), inventory_hostname="member1", groups={"hub": ["hub"]}, **host)
    return (lambda name: variables.get(name, wiring.MISSING)), (lambda _host, name: hub.get(name, wiring.MISSING))


def _refusal(role, inventory, host=None, hub=None, local_files=True):
    """What ``role`` says of member1 whose variables are the inventory's plus ``host`` (and the hub's plus ``hub``)."""
    get, hub_get = _getters(role, dict(inventory["host"], **(host or {})), dict(inventory["hub"], **(hub or {})))
    return role_values.host_refusal(role, get, hub_get, local_files=local_files)


@pytest.mark.parametrize("role", ["member_join", "member_leave"])
def test_an_inventory_that_fits_is_taken_as_it_is(role, inventory):
    assert _refusal(role, inventory) is None
    assert _refusal(role, inventory, {"fleetops_cluster_name": "edge-01", "fleetops_labels": "env=dev,tier=web"}) is None


# -- one case per value: (role, the member's variables, the hub's, what the error says) --------------------------------

CASES = [
    # the member's name, by each fleet manager's rule (the issue's case)
    ("member_join", {"fleetops_cluster_name": "Member_2"}, {},
     "name (from fleetops_cluster_name, or the inventory host name (member_join_cluster_name)): 'Member_2' is not a valid "
     "name. Use lower-case letters"),
    ("member_leave", {"fleetops_cluster_name": "Member_2"}, {},
     "name (from fleetops_cluster_name, or the inventory host name (member_leave_cluster_name)): 'Member_2' is not a valid name"),
    ("member_join", {"member_join_cluster_name": "edge.01", "fleetops_backends": ["kubefleet"]}, {},
     "name (from fleetops_cluster_name, or the inventory host name (member_join_cluster_name)): 'edge.01' is not a valid "
     "member cluster name"),
    ("member_leave", {"fleetops_cluster_name": "e" * 51, "fleetops_backends": "kubefleet"}, {},
     "name (from fleetops_cluster_name, or the inventory host name (member_leave_cluster_name)): '%s' is 51 characters long" % ("e" * 51)),
    # labels: a key, a value
    ("member_join", {"fleetops_labels": {"Env!": "dev"}}, {},
     "labels (from fleetops_labels (member_join_labels)): invalid label key 'Env!'"),
    ("member_join", {"fleetops_labels": "env=dev test=x,tier=web web"}, {},
     "labels (from fleetops_labels (member_join_labels)): 'web' is not key=value"),
    ("member_join", {"member_join_labels": {"env": "dev/prod"}}, {},
     "labels (from fleetops_labels (member_join_labels)): invalid value for label 'env': the value 'dev/prod' must be"),
    # the member's and the hub's kubeconfig and context
    ("member_join", {"fleetops_kubeconfig": "/nonexistent/member.yaml"}, {},
     "kubeconfig (from fleetops_kubeconfig, or the member credential's fleetops_member_kubeconfig (member_join_kubeconfig)): "
     "kubeconfig file /nonexistent/member.yaml does not exist"),
    ("member_leave", {"fleetops_member_kubeconfig": "/nonexistent/member.yaml"}, {},
     "kubeconfig (from fleetops_kubeconfig, or the member credential's fleetops_member_kubeconfig (member_leave_kubeconfig)): "
     "kubeconfig file /nonexistent/member.yaml does not exist"),
    ("member_join", {"fleetops_context": "member9"}, {},
     "context (from fleetops_context (member_join_context)): the kubeconfig has no context named 'member9'. Use one of: hub, member1"),
    ("member_leave", {"member_leave_context": "member9"}, {},
     "context (from fleetops_context (member_leave_context)): the kubeconfig has no context named 'member9'"),
    ("member_join", {}, {"fleetops_kubeconfig": "/nonexistent/hub.yaml"},
     "hub_kubeconfig (from the hub host's fleetops_kubeconfig, or the hub credential's fleetops_hub_kubeconfig "
     "(member_join_hub_kubeconfig)): kubeconfig file /nonexistent/hub.yaml does not exist"),
    ("member_leave", {"member_leave_hub_kubeconfig": "/nonexistent/hub.yaml"}, {},
     "hub_kubeconfig (from the hub host's fleetops_kubeconfig, or the hub credential's fleetops_hub_kubeconfig "
     "(member_leave_hub_kubeconfig)): kubeconfig file /nonexistent/hub.yaml does not exist"),
    ("member_leave", {"fleetops_hub_context": "hub9"}, {},
     "hub_context (from the hub host's fleetops_context, or the hub credential's fleetops_hub_context (member_leave_hub_context)): "
     "the kubeconfig has no context named 'hub9'"),
    # the hub as the agents reach it
    ("member_join", {}, {"fleetops_api_server_url": "http://hub.example.com:6443"},
     "hub_api_server_url (from the hub host's fleetops_api_server_url (member_join_hub_api_server_url)): "
     "'http://hub.example.com:6443' (from hub_api_server_url) is not an https:// URL"),
    ("member_join", {}, {"fleetops_ca_file": "/nonexistent/hub-ca.crt"},
     "hub_api_server_ca (from the hub host's fleetops_ca_file (member_join_hub_ca_file)): /nonexistent/hub-ca.crt is neither "
     "PEM text nor an existing file"),
    # namespaces: Fleet's, the KubeFleet identities', the member locks'
    ("member_join", {"fleetops_fleet_namespace": "Fleet_Default"}, {},
     "fleet_namespace (from fleetops_fleet_namespace (member_join_fleet_namespace)): 'Fleet_Default' is not a valid name. "
     "Use at most 63 lower-case letters, digits and '-'"),
    ("member_leave", {"fleetops_fleet_namespace": "fleet.default"}, {},
     "namespace (from fleetops_fleet_namespace (member_leave_fleet_namespace)): 'fleet.default' is not a valid name"),
    ("member_join", {"fleetops_kubefleet_namespace": "fleet system"}, {},
     "identity_namespace (from fleetops_kubefleet_namespace (member_join_kubefleet_identity_namespace)): 'fleet system' is "
     "not a valid name"),
    ("member_leave", {"member_leave_kubefleet_identity_namespace": "-system"}, {},
     "namespace (from fleetops_kubefleet_namespace (member_leave_kubefleet_identity_namespace)): '-system' is not a valid name"),
    ("member_join", {"member_join_lock_namespace": "Locks"}, {},
     "lock_namespace (from member_join_lock_namespace): 'Locks' is not a valid name"),
    ("member_leave", {"member_leave_lock_namespace": "Locks"}, {},
     "member_leave_lock_namespace: 'Locks' is not a valid name"),
    # the fleet managers (the inventory's variable; the role's own is its argument spec's choices)
    ("member_join", {"fleetops_backends": ["flux"]}, {}, "fleetops_backends: unknown fleet manager 'flux'. Use one of: kubefleet, rancher_fleet"),
    ("member_leave", {"fleetops_survey_backends": "flux"}, {}, "fleetops_survey_backends: unknown fleet manager 'flux'"),
    ("member_join", {"member_join_backends": ["flux"]}, {}, "Validation of arguments failed"),
    # durations
    ("member_join", {"fleetops_credential_max_age": "30d"}, {},
     "credential_max_age (from fleetops_credential_max_age (member_join_credential_max_age)): '30d' is not a duration"),
    ("member_join", {"fleetops_kubefleet_token_lifetime": "5m"}, {},
     "kubefleet_token_lifetime (from fleetops_kubefleet_token_lifetime): '5m' is shorter than the 10 minutes the API server accepts"),
    ("member_join", {"member_join_fleet_token_ttl": "0"}, {},
     "ttl (from member_join_fleet_token_ttl): '0' means the registration token never expires"),
    ("member_join", {"member_join_fleet_token_ttl": "1d"}, {}, "ttl (from member_join_fleet_token_ttl): '1d' is not a duration Fleet accepts"),
    # the ceilings (issue 46): a free-text answer cannot give a registration token days, nor a member token no expiry
    ("member_join", {"member_join_fleet_token_ttl": "2562047h"}, {},
     "ttl (from member_join_fleet_token_ttl): '2562047h' is longer than 24h, the longest a registration token may live"),
    ("member_join", {"member_join_fleet_token_ttl": "3h", "fleetops_fleet_token_max_ttl": "2h"}, {},
     "'3h' is longer than 2h, the longest a registration token may live (max_ttl"),
    ("member_join", {"fleetops_fleet_token_max_ttl": "0"}, {},
     "max_ttl (from fleetops_fleet_token_max_ttl (member_join_fleet_token_max_ttl)): '0' means the registration token never expires"),
    ("member_join", {"fleetops_kubefleet_token_lifetime": "never"}, {},
     "kubefleet_token_lifetime (from fleetops_kubefleet_token_lifetime): never makes a member token that does not expire"),
    ("member_join", {"member_join_kubefleet_heartbeat_period_seconds": 900}, {},
     "heartbeat_period_seconds (from member_join_kubefleet_heartbeat_period_seconds): 900 is out of range"),
    # KubeFleet taints, the agents' setting, the Fleet client ID and token
    ("member_join", {"fleetops_kubefleet_taints": [{"key": "dedicated", "effect": "NoExecute"}]}, {},
     "taints (from fleetops_kubefleet_taints (member_join_kubefleet_taints)): taint 'dedicated' has effect 'NoExecute'"),
    ("member_join", {"fleetops_agent": {"tolerations": ["all"]}}, {},
     "agent.tolerations (from fleetops_agent (member_join_agent)): item 0 is not a mapping"),
    ("member_join", {"fleetops_agent": {"colour": "red"}}, {}, "agent (from fleetops_agent (member_join_agent)): has unknown keys colour"),
    ("member_join", {"fleetops_agent": {"image_registry": "https://mirror.example.com"}}, {},
     "agent.image_registry (from fleetops_agent (member_join_agent)): 'https://mirror.example.com' is not a registry host"),
    ("member_join", {"fleetops_fleet_client_id": "two words"}, {},
     "client_id (from fleetops_fleet_client_id (member_join_fleet_client_id)): 'two words' is not a usable client ID"),
    ("member_join", {"member_join_fleet_token_name": "Join_Token"}, {},
     "name (from member_join_fleet_token_name): 'Join_Token' is not a valid name"),
    ("member_join", {"member_join_fleet_values_dest": "/nonexistent/dir/values.yaml"}, {},
     "values_dest (from member_join_fleet_values_dest): directory /nonexistent/dir does not exist"),
    # the agent charts
    ("member_join", {"fleetops_fleet_agent_chart": "--post-renderer=/bin/sh"}, {},
     "chart_ref (from fleetops_fleet_agent_chart (member_join_fleet_agent_chart_ref)): '--post-renderer=/bin/sh' begins with '-'"),
    ("member_join", {"fleetops_fleet_agent_chart": "fleet-agent", "fleetops_fleet_agent_chart_repo_url": "charts.example.com"}, {},
     "chart_repo_url (from fleetops_fleet_agent_chart_repo_url (member_join_fleet_agent_chart_repo_url)): it is not a URL"),
    ("member_join", {"fleetops_kubefleet_member_agent_chart": "member-agent"}, {},
     "chart_ref (from fleetops_kubefleet_member_agent_chart (member_join_kubefleet_agent_chart_ref)): member-agent is neither "
     "a chart directory nor an oci:// reference"),
    ("member_join", {"fleetops_kubefleet_member_agent_chart": "oci://ghcr.io/x/member-agent",
                     "member_join_kubefleet_agent_chart_repo_url": "ghcr.io"}, {},
     "chart_repo_url (from fleetops_kubefleet_member_agent_chart_repo_url (member_join_kubefleet_agent_chart_repo_url)): "
     "it is not a URL"),
    # what member_leave does with the fleet's workloads
    ("member_leave", {"fleetops_leave_workloads": "delete"}, {},
     "fleetops_leave_workloads, or the survey's fleetops_survey_leave_workloads (member_leave_workloads): 'delete' is not one of"),
]


@pytest.mark.parametrize("role, host, hub, said", CASES, ids=["%s-%d" % (case[0], index) for index, case in enumerate(CASES)])
def test_a_value_a_module_would_refuse_is_refused_first_naming_the_variable_and_the_value(role, host, hub, said, inventory):
    refused = _refusal(role, inventory, host, hub)
    assert refused and said in refused, refused


def test_every_value_with_a_format_has_its_case_for_each_role_that_takes_it():
    """A check added to role_values.CHECKS without a case here fails: each role it applies to needs one."""
    covered = set()
    for role, host, hub, said in CASES:
        for setting in role_values.CHECKS:
            module, option = role_values.wired_option(role, setting)
            words = wiring.words(role, setting) or ""
            if role_values.used(role, setting) and (said.startswith("%s (from %s)" % (option, words)) or said.startswith(option + ":")):
                covered.add((role, setting))
    expected = set((role, setting) for role in wiring.SETTINGS for setting in role_values.CHECKS if role_values.used(role, setting))
    assert expected - covered == set()


def test_the_issue_s_message_names_the_inventory_variable_the_value_and_the_fix(inventory):
    refused = _refusal("member_join", inventory, {"fleetops_cluster_name": "Member_2"})
    assert refused == ("name (from fleetops_cluster_name, or the inventory host name (member_join_cluster_name)): 'Member_2' is "
                       "not a valid name. Use lower-case letters, digits, '-' and '.', starting and ending with a letter or digit")


def test_a_name_only_one_fleet_manager_takes_is_kept_for_a_member_that_names_none(inventory):
    """A member that names no fleet manager joins what the hub serves: a name Rancher Fleet takes (with a dot) is left to
    the run, which refuses it only where the hub serves KubeFleet; one no manager takes is refused first."""
    assert _refusal("member_join", inventory, {"fleetops_cluster_name": "edge.01"}) is None
    assert _refusal("member_join", inventory, {"fleetops_cluster_name": "edge.01", "fleetops_backends": "rancher_fleet"}) is None
    assert "'EDGE' is not a valid" in _refusal("member_join", inventory, {"fleetops_cluster_name": "EDGE"})


def test_every_value_refused_is_reported_not_only_the_first(inventory):
    refused = _refusal("member_join", inventory, {"fleetops_cluster_name": "Member_2", "fleetops_labels": {"a": "b c"}},
                       {"fleetops_api_server_url": "http://hub"})
    lines = refused.splitlines()
    assert len(lines) == 3 and lines[0].startswith("name (from") and lines[1].startswith("labels (from")
    assert lines[2].startswith("hub_api_server_url (from")


def test_values_convert_as_the_module_s_argument_spec_converts_them(inventory):
    """What the inventory gives as a number or text the module takes as its option's type: not refused for that."""
    assert _refusal("member_join", inventory, {"fleetops_cluster_name": 42, "member_join_kubefleet_heartbeat_period_seconds": "30",
                                               "fleetops_agent": '{"node_selector": {"pool": "infra"}}'}) is None
    refused = _refusal("member_join", inventory, {"fleetops_kubefleet_taints": "dedicated"})
    assert "taints (from fleetops_kubefleet_taints (member_join_kubefleet_taints)): item 0 needs a key" in refused


def test_files_are_checked_only_where_the_modules_read_them(inventory):
    """Over a connection that is not local the modules read the files on the other end: only the formats are checked."""
    files = {"fleetops_kubeconfig": "/nonexistent/member.yaml", "member_join_fleet_values_dest": "/nonexistent/d/v.yaml",
             "fleetops_kubefleet_member_agent_chart": "member-agent"}
    hub = {"fleetops_ca_file": "/nonexistent/ca.crt", "fleetops_kubeconfig": "/nonexistent/hub.yaml"}
    assert _refusal("member_join", inventory, files, hub, local_files=False) is None
    assert len(_refusal("member_join", inventory, files, hub, local_files=True).splitlines()) == 5
    formats = dict(files, fleetops_kubefleet_member_agent_chart="-x")
    assert "chart_ref (from fleetops_kubefleet_member_agent_chart" in _refusal("member_join", inventory, formats, local_files=False)


def test_a_local_chart_and_a_pem_ca_that_fit_are_taken(inventory):
    chart = inventory["dir"] / "member-agent"
    chart.mkdir()
    (chart / "Chart.yaml").write_text("name: member-agent\nversion: 0.14.0\n")
    host = {"fleetops_kubefleet_member_agent_chart": str(chart), "fleetops_kubefleet_member_agent_chart_version": "0.14.0"}
    ca_file = inventory["dir"] / "hub-ca.crt"
    ca_file.write_text(PEM)
    assert _refusal("member_join", inventory, host, {"fleetops_ca_file": PEM}) is None
    assert _refusal("member_join", inventory, host, {"fleetops_ca_file": str(ca_file)}) is None
    ca_file.write_text("not a certificate")
    assert "hub_api_server_ca (from the hub host's fleetops_ca_file (member_join_hub_ca_file)): is not a PEM certificate" in \
        _refusal("member_join", inventory, host, {"fleetops_ca_file": str(ca_file)})
    refused = _refusal("member_join", inventory, dict(host, fleetops_kubefleet_member_agent_chart_version="0.15.0"))
    assert "chart_version (from fleetops_kubefleet_member_agent_chart_version (member_join_kubefleet_agent_chart_version)): " \
           "the local chart %s is version 0.14.0, not 0.15.0" % chart in refused


def test_a_hub_nobody_named_is_refused_first_too(inventory):
    get, hub_get = _getters("member_join", inventory["host"], {})
    refused = role_values.host_refusal("member_join", lambda name: [] if name == "groups" else get(name), hub_get)
    assert refused == wiring.INVENTORY_HINT["member_join"]


def test_no_credential_the_values_hold_reaches_the_message(inventory):
    refused = _refusal("member_join", inventory, {"member_join_agent_secret_values": {"kubefleet": {"proxy": "Not_A_Name"}},
                                                  "fleetops_cluster_name": "Not_A_Name"},
                       {"fleetops_api_server_url": "http://admin:hub-pw@hub.example.com"})
    assert "hub-pw" not in refused and "Not_A_Name" not in refused and "'http://admin:********@hub.example.com'" in refused
    mapping = yaml.safe_load(Path(inventory["host"]["fleetops_kubeconfig"]).read_text())
    mapping["users"][0]["user"]["token"] = "member-token-value"
    refused = _refusal("member_leave", inventory, {"fleetops_kubeconfig": mapping, "fleetops_context": "member-token-value"})
    assert "member-token-value" not in refused and "context (from fleetops_context (member_leave_context))" in refused


def test_each_host_of_a_play_is_checked_with_its_own_variables_else_the_role_s_defaults(inventory):
    """step_args with all_hosts: one task for every member of the play, each host named with why it is refused."""
    hostvars = {"member1": dict(inventory["host"], fleetops_cluster_name="Member_1"),
                "member2": dict(inventory["host"], fleetops_cluster_name="member-2"),
                "member3": dict(inventory["host"], member_join_lock_namespace="Locks"),
                "hub": inventory["hub"]}
    task_vars = {"hostvars": hostvars, "groups": {"hub": ["hub"], "members": ["member1", "member2", "member3"]}}
    getters = role_values.host_getter("member_join", task_vars)
    assert getters("member2")("member_join_wait_timeout") == 300  # the role's fixed default
    assert getters("member2")("groups") == task_vars["groups"] and getters("member2")("nothing") is wiring.MISSING

    def hub_get(host, name):
        return hostvars.get(host, {}).get(name, wiring.MISSING)
    refused = role_values.play_refusals("member_join", ["member1", "member2", "member3"], getters, hub_get)
    assert sorted(refused) == ["member1", "member3"]
    lines = role_values.play_refusal(refused).splitlines()
    assert len(lines) == 2 and lines[0].startswith("member1: name (from fleetops_cluster_name") and "'Member_1'" in lines[0]
    assert lines[1] == ("member3: lock_namespace (from member_join_lock_namespace): 'Locks' is not a valid name. Use at most 63 "
                        "lower-case letters, digits and '-', starting and ending with a letter or digit")
    assert role_values.play_refusals("member_join", ["member2"], getters, hub_get) == {}
    assert role_values.play_refusal({}) is None


@pytest.mark.parametrize("refused, stop_on_any, stops", [
    ({}, False, False), ({}, True, False),
    ({"member1": "x"}, False, False),  # member1 fails alone at its first task; member2 joins
    ({"member1": "x"}, True, True),  # move_hub.yml: all or nothing
    ({"member1": "x", "member2": "y"}, False, True),  # no member left: nothing is read
])
def test_a_play_stops_before_any_read_only_when_no_member_is_left_or_it_is_all_or_nothing(refused, stop_on_any, stops):
    assert role_values.play_stops(refused, ["member1", "member2"], stop_on_any) is stops


@pytest.mark.parametrize("role", sorted(wiring.SETTINGS))
def test_each_check_s_error_is_worded_with_the_variable_its_value_came_from(role):
    """The option a check names is one inventory_terms words for the role (or the role variable itself)."""
    for setting in role_values.CHECKS:
        if not role_values.used(role, setting):
            continue
        module, option = role_values.wired_option(role, setting)
        worded = inventory_terms("%s: x" % option, role, module)
        assert worded.startswith("%s (from " % option) or (module is None and option == "%s_%s" % (role, setting)), (setting, worded)


def test_predefined_clusters_are_checked_by_the_rules_of_the_fleet_managers_they_go_to():
    hostvars = {"edge-1": {"fleetops_labels": {"env": "dev"}}, "Edge_2": {}, "edge.3": {}}
    assert [spec["name"] for spec in cluster_specs(["edge-1", "edge.3"], hostvars)] == ["edge-1", "edge.3"]  # not asked
    assert cluster_specs(["edge-1", "edge.3"], hostvars, backends=["rancher_fleet"])[0] == {"name": "edge-1", "labels": {"env": "dev"}}
    from ansible.errors import AnsibleFilterError
    with pytest.raises(AnsibleFilterError, match=r"fleetops_cluster_name of Edge_2: 'Edge_2' is not a valid name"):
        cluster_specs(["edge-1", "Edge_2"], hostvars, backends="rancher_fleet,kubefleet")
    with pytest.raises(AnsibleFilterError, match=r"fleetops_cluster_name of edge.3: 'edge.3' is not a valid member cluster name"):
        cluster_specs(["edge.3"], hostvars, backends=["kubefleet"])
    with pytest.raises(AnsibleFilterError, match=r"fleetops_cluster_name of edge.3: 'edge.3' is not a valid member cluster name"):
        cluster_specs(["edge.3"], hostvars, backends="")  # blank: both
    with pytest.raises(AnsibleFilterError, match="unknown fleet manager 'flux'"):
        cluster_specs(["edge-1"], hostvars, backends=["flux"])


def test_step_args_takes_all_hosts_as_a_small_argument():
    from ansible_collections.fleetops.registration.plugins.action.step_args import validated_args
    assert validated_args({"role": "member_join", "all_hosts": "yes"})["all_hosts"] is True
    assert validated_args({"role": "member_leave"})["all_hosts"] is False


def test_the_settings_a_check_reads_come_from_the_wiring_table(inventory):
    """role_values reads role_wiring.settings' result: every setting a check names is one the table works out."""
    get, hub_get = _getters("member_join", inventory["host"], inventory["hub"])
    found = wiring.settings("member_join", get, hub_get, backend_request)
    assert set(role_values.CHECKS) <= set(found)
