# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""member_info's ``members``: many members' states in one process, the hub listed once per fleet manager.

A no-change re-run of join_cluster.yml used to start one member_info process per member, each listing the same hub
objects again; on a 2-CPU controller 12 members spent ~5 CPU s there. The role now reads its whole play batch in one
``run_once`` task: one process, one LIST per hub and fleet manager, the members' own reads side by side.

A member whose state cannot be read does not stop the others: its entry holds ``error`` and the role fails that host
alone. Only what concerns the whole batch (a name given twice, the module's own options) fails the task.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import traceback
from concurrent.futures import ThreadPoolExecutor

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.module_utils.errors import UnsupportedError

from ansible_collections.fleetops.registration.plugins.module_utils.cluster_identity import claimed_clusters, shared_clusters
from ansible_collections.fleetops.registration.plugins.module_utils.errors import FleetOpsError, ParameterError
from ansible_collections.fleetops.registration.plugins.module_utils.kubeconfig import kubeconfig_secrets
from ansible_collections.fleetops.registration.plugins.module_utils.member_state import MemberInfo
from ansible_collections.fleetops.registration.plugins.module_utils.module import connection_key
from ansible_collections.fleetops.registration.plugins.module_utils import registry

ITEMS = "members"
# Credentials an item cannot carry: an item is one value of the raw ``members`` option, which Ansible logs as given
# (only whole options can be no_log), so per-member credentials come as kubeconfig files.
SECRET_OPTIONS = ("api_key", "hub_api_key")
SHARED_HINT = "Point each member at its own cluster (its kubeconfig and context); a cluster joins a fleet under one name"
# Members read at once: each read is a few round trips to the member and to the hub, mostly waiting (on a 50 ms link,
# a batch of 12 in one round rather than two).
WORKERS = 16


def item_spec(spec):
    """The argument spec of one item: every option of the module but ``members``; ``name`` required."""
    spec = copy.deepcopy(spec)
    spec.pop(ITEMS, None)
    spec["name"]["required"] = True
    return spec


def canonical(spec):
    """``{alias or name: name}`` of ``spec``."""
    names = {}
    for name, option in spec.items():
        names[name] = name
        for alias in option.get("aliases") or ():
            names[alias] = name
    return names


def merged_item(task_params, spec, item):
    """The task's options (defaults included), overridden by what the item sets. An empty string in the item means
    "not set", as it does for the module's own options (role defaults pass ``""`` for what nobody filled in)."""
    names = canonical(spec)
    merged = dict((name, value) for name, value in task_params.items() if name in spec and name not in (ITEMS, "name"))
    for key, value in item.items():
        if value is not None and value != "":
            merged.pop(names.get(key, key), None)
            merged[key] = value
    return merged


def item_params(module, spec, index, item):
    """One item's validated options; ParameterError naming ``members[index]`` and the option when they are not."""
    where = "%s[%d]" % (ITEMS, index)
    if not isinstance(item, dict):
        raise ParameterError(where, "must be a mapping of member_info options, got %s" % type(item).__name__,
                             "Give each member as a mapping, for example {name: edge-07, kubeconfig: ~/.kube/edge-07.yaml}")
    refuse_credentials(module, where, item)
    result = ArgumentSpecValidator(spec).validate(merged_item(module.params, spec, item))
    if result.errors.errors:  # the error collection itself is always true
        raise ParameterError(where, "; ".join(describe(error) for error in result.errors.errors),
                             "Each member takes the options of member_info itself (see ansible-doc fleetops.registration.member_info)")
    return result.validated_parameters


def refuse_credentials(module, where, item):
    """Refuse a token or an inline kubeconfig in an item (SECRET_OPTIONS); the value is hidden from the result first."""
    for key in SECRET_OPTIONS:
        if item.get(key):
            module.hide(item[key])
            raise ParameterError("%s.%s" % (where, key), "a credential cannot be given per member",
                                 "Give each member a kubeconfig file (kubeconfig: <path>), or set %s on the task for all of them" % key)
    for key in ("kubeconfig", "hub_kubeconfig"):
        if isinstance(item.get(key), dict):
            module.hide(*kubeconfig_secrets(item[key]))
            raise ParameterError("%s.%s" % (where, key), "a kubeconfig mapping holds credentials and cannot be given per member",
                                 "Give its path instead (kubeconfig: <path>), or set %s on the task for all of them" % key)


def describe(error):
    """The validator's message; for an unknown option it starts with the option's name alone."""
    if isinstance(error, UnsupportedError):
        return "unsupported option %s" % error.msg
    return error.msg


def check_unique_names(items):
    seen = set()
    for index, item in enumerate(items):
        name = item.get("name") if isinstance(item, dict) else None
        if name is not None and name in seen:
            raise ParameterError("%s[%d].name" % (ITEMS, index), "%r is given twice" % name,
                                 "Give each member once (two inventory hosts with the same fleetops_cluster_name?)")
        seen.add(name)


def prepare(module, items, spec=None, member=True):
    """``(readers, errors)``: a connected MemberInfo per readable item, and ``{name: message}`` for the others. ``spec``:
    an item's argument spec (default: the module's own options but ``members``); ``member``: whether to connect to the
    member too (not only to the hub)."""
    spec = spec or item_spec(module.argument_spec)
    readers, errors = [], {}
    for index, item in enumerate(items):
        try:
            reader = MemberInfo(module, item_params(module, spec, index, item))
            reader.hub()
            if member:
                reader.member()  # clients are built here, one at a time, before the reads run side by side
            readers.append(reader)
        except FleetOpsError as exc:
            name = item.get("name") if isinstance(item, dict) else None
            errors[name or "%s[%d]" % (ITEMS, index)] = exc.message()
    return readers, errors


def list_hubs(readers):
    """``{(hub connection, manager, namespace): {member name: hub object} or FleetOpsError}``: one LIST each, of every
    member the hub knows (the batch's and the others, whose recorded clusters the batch is checked against)."""
    groups = {}
    for reader in readers:
        for manager, namespace in reader.hub_reads():
            key = (connection_key(reader.params, "hub_"), manager, namespace)
            groups.setdefault(key, []).append(reader)

    def read(key):
        try:
            return registry.manager(key[1]).read_hub(groups[key][0].hub(), namespace=key[2])
        except FleetOpsError as exc:
            return exc
    with ThreadPoolExecutor(max_workers=max(1, min(WORKERS, len(groups)))) as pool:  # the LISTs side by side
        return dict(zip(groups, pool.map(read, list(groups))))


def read_one(reader, listed):
    """One member's result: its state, or ``{name, error}``."""
    try:
        found = {}
        for manager, namespace in reader.hub_reads():
            found[manager] = listed[(connection_key(reader.params, "hub_"), manager, namespace)]  # or its error
        return reader.run(found)
    except FleetOpsError as exc:
        failed = {"name": reader.name, "error": exc.message()}
        if reader.known_identity:
            failed["identity"] = reader.known_identity  # so two names for one cluster are still found
        return failed
    except Exception as exc:  # pylint: disable=broad-except
        return {"name": reader.name, "error": "unexpected error: %s" % exc, "exception": traceback.format_exc()}


def refuse_shared_clusters(members, listed=None):
    """Members whose connections reach the same cluster get an error each, before anything changes, and so does a
    member whose cluster the hub records for another member (``listed``: list_hubs' result): one cluster joined under
    two names would have one agent taken over by the other registration - even with replace_rebuilt."""
    identities = dict((name, result.get("identity")) for name, result in members.items())
    for name, others in shared_clusters(identities).items():
        members[name] = {"name": name, "error": ParameterError(
            "kubeconfig", "member %s reaches the same cluster as %s (kube-system Namespace UID %s)"
            % (name, ", ".join(others), identities[name]["uid"]), SHARED_HINT).message()}
    claims = claimed_clusters(dict(enumerate(objects for objects in (listed or {}).values() if isinstance(objects, dict))))
    for name, identity in identities.items():
        others = sorted(claims.get((identity or {}).get("uid"), set()) - set([name]))
        if others and name in members and "reaches the same cluster" not in members[name].get("error", ""):
            members[name] = {"name": name, "error": ParameterError(
                "kubeconfig", "member %s reaches the cluster that joined as %s (kube-system Namespace UID %s)"
                % (name, ", ".join(others), identity["uid"]), SHARED_HINT).message()}


def read_members(module):
    """member_info with ``members``: ``{changed, members: {name: result}, unreadable: [names]}``."""
    items = module.params[ITEMS]
    check_unique_names(items)
    readers, errors = prepare(module, items)
    listed = list_hubs(readers)
    with ThreadPoolExecutor(max_workers=max(1, min(WORKERS, len(readers)))) as pool:
        results = list(pool.map(lambda reader: read_one(reader, listed), readers))
    members = dict((name, {"name": name, "error": message}) for name, message in errors.items())
    members.update((result["name"], result) for result in results)
    refuse_shared_clusters(members, listed)
    changing = sorted(name for name, result in members.items() if "error" not in result and result.get("pending"))
    return {
        "changed": False,
        "members": members,
        "unreadable": sorted(name for name, result in members.items() if "error" in result),
        "changing": changing,
        "lock_needed": bool(changing) and not module.check_mode,
    }
