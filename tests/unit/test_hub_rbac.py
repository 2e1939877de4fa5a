"""The shipped hub RBAC (extensions/rbac/hub.yml, hub-optin.yml, hub-forced-leave.yml) and the code agree (issue 31, item 3).

Every request the collection sends to the hub is read from the code itself: each call of the REST client's verbs
(get, list, read_all, create, patch, delete, ensure_object, request("METHOD", RESOURCE.path(...))) whose resource is
one of the modules' Resource constants, on a client that is the hub's. The namespace it goes to is judged from the
call: cluster-scoped, none (every namespace), fleet-member-<name> (member_namespace), the collection's own namespace
(KubeFleet identities, member locks) or the registration namespace (Rancher Fleet). A call inside a ``try`` whose
403 handler names the opt-in role (or a method only such a call reaches) needs the opt-in role, and the least role
must not grant it. A new hub call the role lacks fails here, before any lab.
"""

import ast
import importlib
import re
from pathlib import Path

import pytest
import yaml

from ansible_collections.fleetops.registration.plugins.module_utils.k8s_client import Resource
from ansible_collections.fleetops.registration.plugins.module_utils.labels import HUB_NAMESPACE

REPO = Path(__file__).resolve().parents[2]
PLUGINS = REPO / "plugins"
RBAC = REPO / "extensions" / "rbac"
VERBS = {"get": "get", "list": "list", "read_all": "list", "create": "create", "patch": "patch", "delete": "delete"}
METHODS = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}
# Files whose unnamed client (kube, self.kube, self.module.kube()) is the MEMBER's: the agent modules and the member
# side of member_info. Everywhere else an unnamed client is the hub's; a client named hub/member says which it is.
MEMBER_SIDE = {"module_utils/_kubefleet/agent.py", "module_utils/_rancher_fleet/agent.py", "module_utils/_rancher_fleet/member.py",
               "module_utils/_rancher_fleet/leave.py", "module_utils/_rancher_fleet/preflight.py", "module_utils/agent_flow.py",
               "module_utils/diagnosis.py", "module_utils/helm.py", "module_utils/leases.py", "module_utils/cluster_identity.py",
               "module_utils/_kubefleet/hub_access.py", "module_utils/_kubefleet/workloads.py", "module_utils/helm_records.py",
               "module_utils/_kubefleet/release_move.py", "module_utils/_rancher_fleet/agent_env.py",
               "module_utils/_kubefleet/leave.py"}
# Files whose hub calls in a namespace go to the collection's own namespace (identities, their token Secrets, locks); the registration
# namespace for Rancher Fleet's; hub.py's namespaced reads go to the controllers' own objects (granted by name).
OWN = ("module_utils/_kubefleet/", "module_utils/member_lock", "module_utils/fleet_status.py")
REGISTRATION = ("module_utils/_rancher_fleet/",)
CONTROLLERS = ("module_utils/hub.py", "module_utils/agent_versions.py")  # the controller Deployments, by name
# A parameter that carries a manager's Resource into a helper (the inventory's _list(client, resource)).
PARAMETERS = {"resource": "member_resource"}
CLIENT = re.compile(r"(^|\.)_?(kube|hub|member|client)(\(\w*\))?$")  # receivers that are REST clients
GENERIC = {"module_utils/k8s_client.py", "module_utils/batch.py"}  # the client and its batch cache: pass-throughs


def _module_name(path):
    return "ansible_collections.fleetops.registration.plugins." + ".".join(path.relative_to(PLUGINS).with_suffix("").parts)


def _resources():
    """Every Resource constant of the plugins, by the names the code uses for it; and class attributes such as
    ``member_resource`` that name one."""
    found, attributes = {}, {}
    for path in PLUGINS.rglob("*.py"):
        try:
            module = importlib.import_module(_module_name(path))
        except ImportError:
            continue
        for name, value in vars(module).items():
            if isinstance(value, Resource):
                assert (found.setdefault(name, value).plural, found[name].api_version) == (value.plural, value.api_version), name
            elif isinstance(value, type):
                for attr, item in vars(value).items():
                    if isinstance(item, Resource):
                        attributes.setdefault(attr, set()).add(item)
    return found, attributes


RESOURCES, ATTRIBUTES = _resources()


def _group(resource):
    return resource.api_version.rpartition("/")[0]


def _resolve(node, loops, parameters=()):
    if isinstance(node, ast.Name) and node.id in RESOURCES:
        return [RESOURCES[node.id]]
    if isinstance(node, ast.Name) and node.id in loops:
        return loops[node.id]
    if isinstance(node, ast.Name) and node.id in parameters:
        return sorted(ATTRIBUTES[PARAMETERS[node.id]], key=repr)
    if isinstance(node, ast.Attribute) and node.attr in ATTRIBUTES:
        return sorted(ATTRIBUTES[node.attr], key=repr)
    return []


def _loop_bindings(tree):
    """``for resource, ... in [(SECRET, ...), (SERVICE_ACCOUNT, ...)]`` / ``for resource in VALUABLE``: what each loop
    variable may be."""
    bindings = {}
    for node in ast.walk(tree):
        if not isinstance(node, (ast.For, ast.comprehension)):
            continue
        target = node.target.elts[0] if isinstance(node.target, ast.Tuple) else node.target
        if not isinstance(target, ast.Name):
            continue
        names = [n.id for n in ast.walk(node.iter) if isinstance(n, ast.Name) and n.id in RESOURCES]
        for n in ast.walk(node.iter):
            if isinstance(n, ast.Name) and n.id not in RESOURCES:
                const = None
                for assign in ast.walk(tree):
                    if isinstance(assign, ast.Assign) and any(getattr(t, "id", None) == n.id for t in assign.targets):
                        const = assign.value
                names += [m.id for m in ast.walk(const) if isinstance(m, ast.Name) and m.id in RESOURCES] if const else []
        if names:
            bindings.setdefault(target.id, []).extend(RESOURCES[name] for name in names)
    return bindings


def _namespace_arg(call, position, keyword="namespace"):
    for kw in call.keywords:
        if kw.arg == keyword:
            return kw.value
    return call.args[position] if len(call.args) > position else None


OPT_IN_HANDLERS = {"optin": ("OPT_IN_ROLE", "opt_in_needed"), "forced_leave": ("FORCED_LEAVE_ROLE", "forced_leave_needed")}


def _handled_role(handlers):
    text = " ".join(ast.unparse(h) for h in handlers)
    return next((role for role, names in OPT_IN_HANDLERS.items() if any(name in text for name in names)), None)


def _opt_in_scopes(tree):
    """``[(first line, last line, role)]`` of the calls that need an opt-in role: try bodies whose handlers name it
    (``optin``: hub-optin.yml; ``forced_leave``: hub-forced-leave.yml), and the methods they call."""
    scopes, methods = [], {}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            methods[node.name] = node
    for node in ast.walk(tree):
        role = _handled_role(node.handlers) if isinstance(node, ast.Try) else None
        if role:
            todo = list(node.body)
            seen = set()
            while todo:
                item = todo.pop()
                scopes.append((item.lineno, item.end_lineno, role))
                for call in ast.walk(item):
                    if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr in methods \
                            and call.func.attr not in seen and ast.unparse(call.func.value) == "self":
                        seen.add(call.func.attr)
                        todo.append(methods[call.func.attr])
    return scopes


def _side(relative, receiver):
    if "hub" in receiver:
        return "hub"
    if "member" in receiver or relative in MEMBER_SIDE:
        return "member"
    return "hub"


BODY = ast.Name("the object's own metadata.namespace")  # ensure_object: the namespace the body names


def _where(relative, resource, namespace):
    if not resource.namespaced:
        return "cluster"
    text = ast.unparse(namespace) if namespace is not None else "None"
    if isinstance(namespace, ast.Name) and namespace.id.isupper() and namespace.id != "LEGACY_IDENTITY_NAMESPACE":
        return "controllers"  # a component's fixed namespace (cattle-fleet-system/fleet-controller): granted by name
    if text == "None":
        return "all"
    if "member_namespace" in text:
        return "member"
    if text == "cluster_namespace":
        return "fleet_cluster"  # a Fleet Cluster's own namespace (cluster-<...>, named by Fleet): granted cluster-wide
    if 'params["fleet_namespace"]' in text or text == "fleet_namespace":
        return "registration"  # the Fleet namespace a module is given: the registration namespace
    if "LEGACY_IDENTITY_NAMESPACE" in text:
        return "legacy"
    for prefixes, kind in ((OWN, "own"), (REGISTRATION, "registration"), (CONTROLLERS, "controllers")):
        if any(relative.startswith(prefix) for prefix in prefixes):
            return kind
    if relative.startswith("inventory/"):
        return "all"  # the inventory lists per namespace it is given, or every namespace
    raise AssertionError("%s: cannot tell which hub namespace %s goes to (%s)" % (relative, resource.plural, text))


UNRESOLVED = []


def _member_namespace_names(tree):
    """Local names assigned from member_namespace(...) (fleet-member-<name>)."""
    return {target.id for node in ast.walk(tree) if isinstance(node, ast.Assign) and "member_namespace(" in ast.unparse(node.value)
            for target in node.targets if isinstance(target, ast.Name)}


def _calls_of(path):
    relative = str(path.relative_to(PLUGINS))
    tree = ast.parse(path.read_text())
    member_names = _member_namespace_names(tree)
    parameters = [name for name, attribute in PARAMETERS.items() if "." + attribute in path.read_text()]
    loops, opt_in = _loop_bindings(tree), _opt_in_scopes(tree)
    for call in ast.walk(tree):
        if not isinstance(call, ast.Call) or not call.args:
            continue
        func = call.func
        found = []
        if isinstance(func, ast.Name) and func.id == "ensure_object" and len(call.args) > 1:
            receiver = ast.unparse(call.args[0])
            for resource in _resolve(call.args[1], loops, parameters):
                found += [(resource, verb, BODY) for verb in ("get", "create", "patch")]
        elif isinstance(func, ast.Attribute) and func.attr in VERBS:
            receiver = ast.unparse(func.value)
            position = {"get": 2, "delete": 2, "create": 2, "patch": 3, "list": 1, "read_all": 1}[func.attr]
            found = [(resource, VERBS[func.attr], _namespace_arg(call, position)) for resource in _resolve(call.args[0], loops, parameters)]
        elif isinstance(func, ast.Attribute) and func.attr == "request" and len(call.args) > 1 \
                and isinstance(call.args[0], ast.Constant) and isinstance(call.args[1], ast.Call) \
                and isinstance(call.args[1].func, ast.Attribute) and call.args[1].func.attr == "path":
            receiver = ast.unparse(func.value)
            path_args = call.args[1].args
            method = call.args[0].value
            verb = METHODS.get(method) or ("get" if len(path_args) > 1 else "list")
            for resource in _resolve(call.args[1].func.value, loops, parameters):
                if len(path_args) > 2:
                    resource = Resource(resource.api_version, resource.kind, "%s/%s" % (resource.plural, ast.literal_eval(path_args[2])))
                found.append((resource, verb, path_args[0] if path_args else None))
        if not found and isinstance(func, ast.Attribute) and func.attr in VERBS and \
                CLIENT.search(ast.unparse(func.value)) and not isinstance(call.args[0], ast.Constant) and \
                _side(relative, ast.unparse(func.value)) == "hub":  # a member-side call is no hub RBAC's business
            UNRESOLVED.append("%s:%d %s" % (relative, call.lineno, ast.unparse(call)[:100]))
        for resource, verb, namespace in found:
            if _side(relative, receiver) != "hub":
                continue
            needs_opt_in = next((role for start, end, role in opt_in if start <= call.lineno <= end), None)
            where = "member" if isinstance(namespace, ast.Name) and namespace.id in member_names else _where(relative, resource, namespace)
            yield {"file": relative, "line": call.lineno, "group": _group(resource), "resource": resource.plural,
                   "verb": verb, "where": where, "opt_in": needs_opt_in}


def hub_calls():
    calls = []
    for path in sorted(PLUGINS.rglob("*.py")):
        if str(path.relative_to(PLUGINS)) not in GENERIC:
            calls += list(_calls_of(path))
    return calls


def _documents(name):
    """The objects of a shipped file: one v1 List (ansible-test's yamllint allows one YAML document per file)."""
    listed = yaml.safe_load((RBAC / name).read_text())
    assert (listed["apiVersion"], listed["kind"]) == ("v1", "List"), name
    return listed["items"]


# Where hub.yml keeps the collection's own ServiceAccounts: not HUB_NAMESPACE, where the credential issues tokens.
CREDENTIAL_NAMESPACE = "fleetops-credentials"


def grants(name):
    """``{where: [rule]}`` of the ServiceAccount fleetops-credentials/fleetops in the shipped file ``name``: cluster-wide
    (ClusterRoleBindings), in the collection's namespace and in the registration namespace (RoleBindings)."""
    docs = _documents(name)
    roles = dict(((doc["kind"], doc["metadata"].get("namespace"), doc["metadata"]["name"]), doc.get("rules") or [])
                 for doc in docs if doc["kind"] in ("Role", "ClusterRole"))
    found = {}
    for doc in docs:
        if doc["kind"] not in ("RoleBinding", "ClusterRoleBinding"):
            continue
        if {"kind": "ServiceAccount", "name": "fleetops", "namespace": CREDENTIAL_NAMESPACE} not in doc["subjects"]:
            continue
        namespace = doc["metadata"].get("namespace")
        ref = doc["roleRef"]
        rules = roles[(ref["kind"], namespace if ref["kind"] == "Role" else None, ref["name"])]
        where = "cluster-wide" if doc["kind"] == "ClusterRoleBinding" else namespace
        found.setdefault(where, []).extend(rules)
    return found


def allowed(rules, call):
    return any(call["group"] in rule["apiGroups"] and call["resource"] in rule["resources"] and call["verb"] in rule["verbs"]
               for rule in rules)


# Where each kind of namespace is granted: the collection's own by a RoleBinding there, the registration namespace by
# one in fleet-default (the default; one more RoleBinding per further namespace), the rest only cluster-wide.
SCOPES = {"cluster": ["cluster-wide"], "all": ["cluster-wide"], "controllers": ["cluster-wide"], "member": ["cluster-wide"],
          "fleet_cluster": ["cluster-wide"],
          "own": [HUB_NAMESPACE], "registration": ["fleet-default"]}


def test_the_code_sends_the_hub_requests_this_test_reads():
    del UNRESOLVED[:]
    calls = hub_calls()
    assert not UNRESOLVED, "calls whose resource this test cannot tell (teach _resolve):\n" + "\n".join(UNRESOLVED)
    seen = {(c["resource"], c["verb"]) for c in calls}
    # a sample from each part of the code, so that a blind analysis cannot pass
    for expected in [("memberclusters", "create"), ("leases", "patch"), ("leases", "update"), ("works", "patch"),
                     ("serviceaccounts", "create"), ("clusterregistrationtokens", "delete"), ("namespaces", "create"),
                     ("namespaces", "delete"), ("clusters", "list")]:
        assert expected in seen, expected
    assert all(c["opt_in"] == "forced_leave" for c in calls if c["resource"] == "works")


def test_the_least_hub_role_grants_every_request_the_code_sends_where_it_sends_it():
    least = grants("hub.yml")
    missing = ["%s:%d %s %s/%s in %s" % (c["file"], c["line"], c["verb"], c["group"] or "core", c["resource"], c["where"])
               for c in hub_calls() if not c["opt_in"] and c["where"] != "legacy"
               and not any(allowed(least.get(scope, []), c) for scope in SCOPES[c["where"]])]
    assert not missing, "extensions/rbac/hub.yml lacks:\n" + "\n".join(missing)


def _key(call):
    return call["group"], call["resource"], call["verb"]


def _cluster_role(name, role):
    (doc,) = [doc for doc in _documents(name) if doc["kind"] == "ClusterRole" and doc["metadata"]["name"] == role]
    return doc["rules"]


def test_what_needs_more_is_the_opt_in_roles_and_not_the_least_role_s():
    """Issue 46 item 3: hub_prepare's namespace creation is hub-optin.yml's (bound cluster-wide: a create has no name
    to narrow); the forced leave's Works and namespace are hub-forced-leave.yml's, a ClusterRole the file binds
    nowhere (the error says to bind it in the member's namespace), and neither role grants the other's requests."""
    least = grants("hub.yml")
    roles = {"optin": grants("hub-optin.yml").get("cluster-wide", []),
             "forced_leave": _cluster_role("hub-forced-leave.yml", "fleetops-registration-hub-forced-leave")}
    assert [doc["kind"] for doc in _documents("hub-forced-leave.yml")] == ["ClusterRole"]
    calls = hub_calls()
    ordinary = {_key(c) for c in calls if not c["opt_in"]}
    assert {c["opt_in"] for c in calls if c["opt_in"]} == set(roles)
    for call in (c for c in calls if c["opt_in"]):
        what = "%s:%d %s %s in %s" % (call["file"], call["line"], call["verb"], call["resource"], call["where"])
        in_least = any(allowed(least.get(scope, []), call) for scope in SCOPES[call["where"]])
        assert in_least or allowed(roles[call["opt_in"]], call), "neither hub.yml nor %s's role grants %s" % (call["opt_in"], what)
        if _key(call) not in ordinary:  # only ever sent under an opt-in role: the least role must not grant it anywhere
            assert not any(allowed(rules, call) for rules in least.values()), "hub.yml grants the opt-in " + what
            other = [role for role in roles if role != call["opt_in"]]
            assert not any(allowed(roles[role], call) for role in other), "%s also grants %s" % (other, what)


def test_the_least_role_names_no_wildcard_and_no_rbac_impersonation_or_token_review_rights():
    for doc in _documents("hub.yml") + _documents("hub-optin.yml") + _documents("hub-forced-leave.yml"):
        for rule in doc.get("rules") or []:
            assert not any("*" in rule.get(key, []) for key in ("verbs", "resources", "apiGroups")), rule
            assert "rbac.authorization.k8s.io" not in rule["apiGroups"], rule
            assert not {"escalate", "bind", "impersonate"} & set(rule["verbs"]), rule


@pytest.mark.parametrize("name", ["hub.yml", "hub-optin.yml", "hub-forced-leave.yml"])
def test_the_shipped_files_are_what_kubectl_apply_takes(name):
    for doc in _documents(name):
        assert doc["apiVersion"] and doc["kind"] and doc["metadata"]["name"], doc
        if doc["kind"] in ("Role", "RoleBinding", "ServiceAccount"):
            assert doc["metadata"].get("namespace"), doc


def test_the_roles_defaults_and_the_shipped_files_name_the_one_hub_namespace():
    from ansible_collections.fleetops.registration.plugins.plugin_utils import role_wiring
    """labels.HUB_NAMESPACE owns the name; the roles' defaults (YAML cannot import it) and hub.yml must agree with it."""
    defaults = dict((role, yaml.safe_load((REPO / "roles" / role / "defaults" / "main.yml").read_text()))
                    for role in ("hub", "member_join", "member_leave"))
    assert defaults["member_join"]["member_join_lock_namespace"] == HUB_NAMESPACE
    assert defaults["member_leave"]["member_leave_lock_namespace"] == HUB_NAMESPACE
    assert "d('%s', true)" % HUB_NAMESPACE in defaults["hub"]["hub_kubefleet_namespace"]
    # member_join and member_leave take it from the role wiring table, which imports it.
    for role in ("member_join", "member_leave"):
        assert role_wiring.SETTINGS[role]["kubefleet_identity_namespace"]["default"] == HUB_NAMESPACE
    namespaces = [doc["metadata"]["name"] for doc in _documents("hub.yml") if doc["kind"] == "Namespace"]
    assert HUB_NAMESPACE in namespaces
