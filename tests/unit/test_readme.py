"""The README's quick starts are inventories that work as written, and its support matrix names what CI tests.

Each quick start's YAML block is read from README.md as users copy it (readme_quick_starts(), which
tests/integration/test_playbooks.py uses too, to join a lab member with one of them for real).
"""

import re
import sys

import pytest
import yaml

from modrun import REPO
from readme_inventories import QUICK_STARTS, README, readme_quick_start_commands, readme_quick_starts

# Variables Ansible itself reads; everything else an inventory sets must be one the roles read.
ANSIBLE_VARIABLES = {"ansible_connection", "ansible_python_interpreter"}


def role_variables():
    """What the roles read: their options (argument_specs) and the inventory variables the options default to."""
    names = set()
    for spec in REPO.glob("roles/*/meta/argument_specs.yml"):
        text = spec.read_text()
        for entry in yaml.safe_load(text)["argument_specs"].values():
            names.update(entry.get("options") or {})
        names.update(re.findall(r"\bfleetops_[a-z_]+", text))
    for defaults in REPO.glob("roles/*/defaults/main.yml"):
        names.update(re.findall(r"\bfleetops_[a-z_]+", defaults.read_text()))
    return names


def hosts_and_vars(group):
    """(host name, its variables merged over the group's) of an inventory group."""
    for name, host_vars in (group.get("hosts") or {}).items():
        yield name, dict(group.get("vars") or {}, **(host_vars or {}))


def variables_set(inventory):
    names = set(inventory["all"].get("vars") or {})
    for group in inventory["all"]["children"].values():
        names.update(group.get("vars") or {})
        for host_vars in (group.get("hosts") or {}).values():
            names.update(host_vars or {})
    return names


@pytest.fixture(scope="module")
def quick_starts():
    return readme_quick_starts()


@pytest.mark.parametrize("title", QUICK_STARTS)
def test_quick_start_inventory_has_the_contract_of_the_playbooks(quick_starts, title):
    inventory = quick_starts[title]
    assert set(inventory) == {"all"}
    common = inventory["all"]["vars"]
    # modules run on the controller with the Python that runs Ansible (it has the kubernetes client)
    assert common["ansible_connection"] == "local"
    assert common["ansible_python_interpreter"] == "{{ ansible_playbook_python }}"
    groups = inventory["all"]["children"]
    assert set(groups) == {"hub", "members"}
    assert len(groups["hub"]["hosts"]) == 1, "the group hub holds exactly one host"
    assert groups["members"]["hosts"], "a quick start joins at least one member"
    for name, host_vars in list(hosts_and_vars(groups["hub"])) + list(hosts_and_vars(groups["members"])):
        assert host_vars.get("fleetops_context"), "%s: each cluster names its context" % name
    hub_vars = dict(hosts_and_vars(groups["hub"]))
    assert all(v["fleetops_api_server_url"].startswith("https://") for v in hub_vars.values())


@pytest.mark.parametrize("title", QUICK_STARTS)
def test_quick_start_sets_only_variables_the_roles_read(quick_starts, title):
    unknown = sorted(variables_set(quick_starts[title]) - role_variables() - ANSIBLE_VARIABLES)
    assert not unknown, "%s sets variables no role reads (misspelt or renamed?): %s" % (title, unknown)
    documented = (REPO / "docs" / "inventory.md").read_text()
    undocumented = sorted(name for name in variables_set(quick_starts[title]) - ANSIBLE_VARIABLES
                          if "`%s`" % name not in documented and "`%s` (+" % re.sub(r"_(version|repo_url)$", "", name) not in documented)
    assert not undocumented, "%s sets variables docs/inventory.md does not describe: %s" % (title, undocumented)


def test_each_quick_start_names_the_charts_of_the_fleet_managers_it_joins(quick_starts):
    for title, inventory in quick_starts.items():
        common = inventory["all"]["vars"]
        members = inventory["all"]["children"]["members"]
        backends = set()
        for host_vars in dict(hosts_and_vars(members)).values():
            backends.update(host_vars.get("fleetops_backends") or ["rancher_fleet", "kubefleet"])
        if "rancher_fleet" in backends:
            assert common.get("fleetops_fleet_agent_chart") and common.get("fleetops_fleet_agent_chart_version"), title
        if "kubefleet" in backends:
            assert common.get("fleetops_kubefleet_member_agent_chart") and \
                common.get("fleetops_kubefleet_member_agent_chart_version"), title
    assert quick_starts["Rancher Fleet only"]["all"]["children"]["members"]["vars"]["fleetops_backends"] == ["rancher_fleet"]
    assert quick_starts["KubeFleet only"]["all"]["children"]["members"]["vars"]["fleetops_backends"] == ["kubefleet"]


def test_the_awx_quick_start_leaves_the_kubeconfigs_to_the_credentials(quick_starts):
    assert "fleetops_kubeconfig" not in variables_set(quick_starts["From AWX"])


def test_a_misspelt_variable_is_caught():
    """The checks above can fail: an inventory with a typo'd variable is reported."""
    text = README.read_text().replace("fleetops_labels: {env: prod, region: eu}", "fleetops_label: {env: prod}", 1)
    inventory = readme_quick_starts(text)["Rancher Fleet only"]
    assert "fleetops_label" in variables_set(inventory) - role_variables()


def matrix_rows():
    text = README.read_text()
    table = re.search(r"^### Support matrix\n(.*?)(?=^##)", text, re.M | re.S).group(1)
    return [[cell.strip() for cell in line.strip("|").split("|")] for line in table.splitlines()
            if line.startswith("| ") and not line.startswith("| ---") and not line.startswith("| component")]


def pinned(requirements, package):
    match = re.search(r"^%s==(\S+)$" % re.escape(package), (REPO / requirements).read_text(), re.M)
    assert match, "%s does not pin %s" % (requirements, package)
    return match.group(1)


def test_support_matrix_names_each_component_tested_or_expected():
    rows = matrix_rows()
    components = set(row[0] for row in rows)
    for component in ("ansible-core", "Python (controller)", "Kubernetes (hub and members)", "Rancher Fleet, standalone",
                      "KubeFleet API from Azure/fleet"):
        assert component in components, "the support matrix has no row for %s" % component
    for row in rows:
        assert len(row) == 3 and row[2].startswith(("tested", "expected")), row


def test_support_matrix_states_the_versions_ci_tests():
    """The tested rows name the pinned ansible-core of both virtualenvs and the lab's versions; requires_ansible
    claims no version older than the oldest tested one."""
    sys.path.insert(0, str(REPO / "lab"))
    from fleetlab.build import VERSIONS  # pylint: disable=import-outside-toplevel
    tested = "\n".join(" | ".join(row) for row in matrix_rows() if row[2].startswith("tested"))
    current, oldest = pinned("requirements-dev.txt", "ansible-core"), pinned("requirements-oldest.txt", "ansible-core")
    assert tuple(int(part) for part in current.split(".")[:2]) >= (2, 21), "the lab suite runs on ansible-core %s" % current
    for version in (current, oldest, VERSIONS["kubernetes"][1], VERSIONS["fleet"][1], VERSIONS["kubefleet"][1],
                    VERSIONS["helm"][1].lstrip("v"), pinned("requirements-dev.txt", "kubernetes")):
        assert version in tested, "the support matrix does not mark %s tested" % version
    runtime = yaml.safe_load((REPO / "meta" / "runtime.yml").read_text())
    assert runtime["requires_ansible"] == ">=%s.0" % oldest.rsplit(".", 1)[0], \
        "requires_ansible must claim the oldest tested ansible-core (requirements-oldest.txt: %s)" % oldest
    assert 'requires_ansible: ">=%s.0"' % oldest.rsplit(".", 1)[0] in README.read_text()


def test_the_quick_start_commands_run_the_collection_s_playbooks_on_the_quick_start_inventories(quick_starts):
    """What tests/integration/test_quick_start.py runs on the lab, in this order: a check, a join, the status, a leave
    of one host - each a playbook of the collection, on the inventory the quick starts save, and a limit that names a
    host of every quick start inventory."""
    commands = readme_quick_start_commands()
    playbooks = [argv[3] for argv, _comment in commands]
    expected = ("join_cluster", "join_cluster", "cluster_status", "leave_cluster")
    assert playbooks == ["fleetops.registration.%s" % name for name in expected], commands
    for argv, comment in commands:
        assert argv[:3] == ["ansible-playbook", "-i", "inventory.yml"] and comment, argv
        assert (REPO / "playbooks" / (argv[3].rsplit(".", 1)[1] + ".yml")).is_file(), argv
    assert commands[0][0][4:] == ["--check", "--diff"]
    limited = commands[-1][0][commands[-1][0].index("--limit") + 1]
    for title in ("Rancher Fleet only", "KubeFleet only", "Both on one hub"):
        assert limited in quick_starts[title]["all"]["children"]["members"]["hosts"], title
