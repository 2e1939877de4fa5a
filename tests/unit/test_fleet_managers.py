"""Every registered fleet manager implements the whole FleetManager interface (a third one must too)."""

import inspect

import pytest

from ansible_collections.fleetops.registration.plugins.module_utils import registry
from ansible_collections.fleetops.registration.plugins.module_utils.errors import ParameterError
from ansible_collections.fleetops.registration.plugins.module_utils.fleet_managers import FleetManager

# Have a default: a manager that leaves nothing on the hub, sets no host variable of its own, knows no member's URL,
# keeps no secret in its member object or
# whose rollback returns to its release alone, that adds no column to the status table, keeps no contact period or
# cannot tell whether its agent runs keeps it.
OPTIONAL = ["tidy_hub", "host_variables", "member_urls", "storable", "rollback_context", "status_columns", "contact", "overdue", "newest_contact",
            "reconnect_grace"]
# What follows from a manager's findings is one algorithm for every manager (findings.py): never overridden.
SHARED = ["decide", "hub_findings"]
METHODS = [name for name, member in vars(FleetManager).items() if inspect.isfunction(member) and name not in OPTIONAL + SHARED]
ATTRIBUTES = ["name", "title", "group_version", "member_resource", "hub_resources", "controller", "install_hint", "join_results",
              "leave_results", "summary_shape", "version_fix", "first_credential", "rollback_result"]


def test_the_interface_has_the_methods_the_roles_and_modules_use():
    assert sorted(METHODS) == ["agent_version", "agent_workload", "check_member_name", "desired", "host_view", "hub_view", "judge", "leave_summary",
                               "member_view", "placements", "read_hub", "running", "status_row", "unplaced"]


@pytest.mark.parametrize("name", registry.NAMES)
def test_no_manager_has_an_algorithm_of_its_own(name):
    """The action, the reasons and healthy follow from the findings the same way for every manager."""
    for method in SHARED:
        assert getattr(type(registry.MANAGERS[name]), method) is getattr(FleetManager, method), "%s overrides %s" % (name, method)


@pytest.mark.parametrize("name", registry.NAMES)
def test_registered_manager_implements_every_method(name):
    manager = registry.MANAGERS[name]
    assert isinstance(manager, FleetManager)
    for method in METHODS:
        implementation = getattr(type(manager), method)
        assert implementation is not getattr(FleetManager, method), "%s does not implement %s" % (name, method)
        assert inspect.signature(implementation).parameters.keys() == inspect.signature(getattr(FleetManager, method)).parameters.keys()
    for method in OPTIONAL:
        assert inspect.signature(getattr(type(manager), method)).parameters.keys() == inspect.signature(
            getattr(FleetManager, method)).parameters.keys()


def test_the_default_tidy_removes_nothing():
    assert FleetManager().tidy_hub(hub=None, namespace="ns") == []


@pytest.mark.parametrize("name", registry.NAMES)
def test_registered_manager_describes_itself(name):
    manager = registry.MANAGERS[name]
    assert manager.name == name
    for attribute in ATTRIBUTES:
        assert getattr(manager, attribute), "%s has no %s" % (name, attribute)
    namespace, deployment = manager.controller
    assert namespace and deployment and "/" in manager.group_version


def test_unknown_manager_is_a_parameter_error_listing_the_known_ones():
    with pytest.raises(ParameterError) as caught:
        registry.manager("ocm")
    assert caught.value.param == "backends"
    assert caught.value.message() == "backends: unknown fleet manager 'ocm'. Use one of: kubefleet, rancher_fleet"


def test_member_info_takes_each_manager_s_own_options_from_the_manager():
    """Issue 48 item 2: the shared argument spec names no manager's option; each manager brings the options its
    ``desired`` reads, and member_state imports no manager's package."""
    from ansible_collections.fleetops.registration.plugins.module_utils import member_state
    spec = member_state.member_info_argument_spec()
    for manager in registry.MANAGERS.values():
        assert manager.desired_options and all(spec[key] == value for key, value in manager.desired_options.items()), manager.name
    source = inspect.getsource(member_state)
    assert "_kubefleet" not in source and "_rancher_fleet" not in source


def test_no_shared_module_names_a_manager_or_imports_its_package():
    """Issue 48 item 2: what is Fleet's or KubeFleet's lives in its package; the shared module_utils reach a manager
    only through the registry (the one place that lists them)."""
    import ast
    import pathlib
    shared = pathlib.Path(registry.__file__).parent
    found = []
    for path in sorted(shared.glob("*.py")):
        if path.name == "registry.py":
            continue
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and node.value in registry.NAMES:
                found.append("%s:%d names %r" % (path.name, node.lineno, node.value))
            if isinstance(node, (ast.Import, ast.ImportFrom)) and any(
                    "._kubefleet" in text or "._rancher_fleet" in text or text in ("_kubefleet", "_rancher_fleet")
                    for text in [getattr(node, "module", None) or ""] + [alias.name for alias in node.names]):
                found.append("%s:%d imports a manager's package" % (path.name, node.lineno))
    assert not found, found
