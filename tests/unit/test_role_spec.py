"""The roles' variables checked against their argument specs by step_args (plugin_utils/role_spec.py), for plays that
import a role with rolespec_validate: false: the same spec and validator as Ansible's own check, its message, and no
no_log value in it."""

from pathlib import Path

import pytest
import yaml

from ansible_collections.fleetops.registration.plugins.plugin_utils import role_spec
from ansible_collections.fleetops.registration.plugins.plugin_utils.role_wiring import MISSING

REPO = Path(__file__).resolve().parents[2]


def _get(variables):
    return lambda name: variables.get(name, MISSING)


@pytest.mark.parametrize("role", ["hub", "member_join", "member_leave"])
def test_the_spec_is_the_role_s_own_meta_argument_specs(role):
    specs = yaml.safe_load((REPO / "roles" / role / "meta" / "argument_specs.yml").read_text())["argument_specs"]
    assert role_spec.role_options(role) == specs["main"]["options"]


def test_variables_that_fit_the_spec_pass_and_unset_ones_are_not_asked_for():
    assert role_spec.variable_errors("member_join", "main", _get({}), MISSING) is None
    fitting = {"member_join_wait_timeout": "600", "member_join_labels_mode": "merge", "unrelated": object()}
    assert role_spec.variable_errors("member_join", "main", _get(fitting), MISSING) is None


def test_a_variable_that_does_not_fit_gets_ansible_s_message_naming_it():
    said = role_spec.variable_errors("member_join", "main", _get({"member_join_wait_timeout": "soon"}), MISSING)
    assert said.startswith("Validation of arguments failed:\n") and "member_join_wait_timeout" in said
    said = role_spec.variable_errors("member_join", "main", _get({"member_join_labels_mode": "sideways"}), MISSING)
    assert "member_join_labels_mode" in said and "sideways" in said


def test_the_rollback_entry_point_has_its_own_spec():
    assert role_spec.role_options("member_join", "rollback") != role_spec.role_options("member_join", "main")


def test_a_no_log_value_is_masked_in_the_message(monkeypatch):
    spec = {"member_join_token": {"type": "str", "no_log": True}, "member_join_mode": {"type": "str", "choices": ["a"]}}
    monkeypatch.setitem(role_spec._OPTIONS, ("fake", "main"), spec)  # pylint: disable=protected-access
    given = {"member_join_token": "s3cret-value", "member_join_mode": "s3cret-value"}
    said = role_spec.variable_errors("fake", "main", _get(given), MISSING)
    assert "member_join_mode" in said and "s3cret-value" not in said
