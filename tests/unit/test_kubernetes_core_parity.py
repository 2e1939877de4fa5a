"""The connection options against kubernetes.core's own: names, aliases, types, secrecy and environment variables.

kubernetes.core is read from the ``ansible`` package's wheel on PyPI (downloaded once into .cache/reference, never
installed), so a gap shows up here when either side changes. A difference is allowed only when listed below with
its reason."""

import ast
import os
import re
import subprocess
import sys
import zipfile

import pytest
import yaml

from ansible_collections.fleetops.registration.plugins.module_utils.argspec import AUTH, HUB_AUTH, PROXY_HEADERS
from ansible_collections.fleetops.registration.plugins.module_utils.k8s_transport import proxy_headers_from_environment

ANSIBLE_RELEASE = "12.0.0"  # ships kubernetes.core 6.1.0
REFERENCE = os.path.join(os.path.dirname(__file__), "..", "..", ".cache", "reference")
CORE = "ansible_collections/kubernetes/core/plugins/"

NOT_OFFERED = {
    "username": "Kubernetes removed basic authentication (1.19); no API server accepts it",
    "password": "Kubernetes removed basic authentication (1.19); no API server accepts it",
    "persist_config": "refreshed credentials are never written back into the user's kubeconfig",
}
NOT_SECRET_AS_A_WHOLE = {
    "kubeconfig": "a path is not secret; the credentials inside a mapping are masked one by one (kubeconfig_secrets)",
}


@pytest.fixture(scope="module")
def kubernetes_core():
    wheel = os.path.join(REFERENCE, "ansible-%s-py3-none-any.whl" % ANSIBLE_RELEASE)
    if not os.path.isfile(wheel):
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--dest", REFERENCE,
                        "ansible==%s" % ANSIBLE_RELEASE], check=True)
    with zipfile.ZipFile(wheel) as archive:
        args_common = archive.read(CORE + "module_utils/args_common.py").decode()
        fragment = archive.read(CORE + "doc_fragments/k8s_auth_options.py").decode()
    return auth_arg_spec(args_common), documented_environment(fragment)


def auth_arg_spec(source):
    """AUTH_ARG_SPEC as data, its proxy_headers suboptions resolved (read with ast; nothing of it is run)."""
    names = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            names[node.targets[0].id] = node.value

    def value(node):
        if isinstance(node, ast.Name):
            return value(names[node.id])
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "dict":
            return dict((kw.arg, value(kw.value)) for kw in node.keywords)
        if isinstance(node, ast.Dict):
            return dict((ast.literal_eval(k), value(v)) for k, v in zip(node.keys, node.values))
        if isinstance(node, ast.List):
            return [value(item) for item in node.elts]
        return ast.literal_eval(node)

    return value(names["AUTH_ARG_SPEC"])


def documented_environment(fragment):
    """Option (or ``proxy_headers.<suboption>``) -> the K8S_AUTH_* variables its documentation names."""
    options = yaml.safe_load(fragment.split('r"""', 1)[1].split('"""', 1)[0])["options"]
    found = {}
    for name, option in options.items():
        found[name] = set(re.findall(r"K8S_AUTH_[A-Z_]+", " ".join(option.get("description") or [])))
        for sub, suboption in (option.get("suboptions") or {}).items():
            found["%s.%s" % (name, sub)] = set(re.findall(r"K8S_AUTH_[A-Z_]+", " ".join(suboption.get("description") or [])))
    return found


def test_every_kubernetes_core_option_is_offered_with_its_aliases_and_type(kubernetes_core):
    spec, _environment = kubernetes_core
    for name, option in spec.items():
        if name in NOT_OFFERED:
            assert name not in AUTH, "%s is offered now: drop it from NOT_OFFERED" % name
            continue
        ours = AUTH.get(name)
        assert ours is not None, "kubernetes.core's %s is missing (offer it, or list it in NOT_OFFERED with the reason)" % name
        assert ours.get("type", "str") == option.get("type", "str"), name
        assert sorted(ours.get("aliases") or []) == sorted(option.get("aliases") or []), name
        assert ours.get("elements") == option.get("elements"), name
        if option.get("no_log") and name not in NOT_SECRET_AS_A_WHOLE:
            assert ours.get("no_log"), "%s is secret in kubernetes.core" % name
        hub = HUB_AUTH.get("hub_" + name)
        assert hub is not None and hub.get("type", "str") == ours.get("type", "str"), "no hub_%s" % name
        assert sorted(hub.get("aliases") or []) == sorted("hub_" + alias for alias in ours.get("aliases") or []), name
    assert spec["proxy_headers"]["options"] == PROXY_HEADERS
    assert set(AUTH) - set(spec) == set(), "an option kubernetes.core does not have: %s" % (set(AUTH) - set(spec))


def test_every_environment_variable_kubernetes_core_documents_is_read(kubernetes_core):
    spec, environment = kubernetes_core
    assert environment["host"] == {"K8S_AUTH_HOST"}, "the documentation parser found nothing"
    for name, variables in environment.items():
        option, _dot, sub = name.partition(".")
        if option in NOT_OFFERED:
            continue
        if sub:
            for variable in variables:
                assert proxy_headers_from_environment({variable: "x"}) == {sub: "x"}, variable
            continue
        if option == "proxy_headers":  # a dict: only its suboptions have variables
            continue
        fallback = AUTH[option].get("fallback")
        read = set(fallback[1]) if fallback else set()
        # kubernetes.core also reads K8S_AUTH_<option name> for every option (module_utils/k8s/client.py).
        assert variables | {"K8S_AUTH_" + option.upper()} <= read, "%s reads %s, not %s" % (option, read, variables)
    assert set(environment) >= set(spec) - {"proxy_headers"} - set(NOT_OFFERED)
