"""What the collection masks in options that are not secret as a whole (issue 31, item 4): the pure finders in
parsing.py and kubeconfig.py, and a FleetModule built as a module builds it - its syslog line, its result
(``invocation.module_args``, what ``-vvv`` prints and AWX stores), its warnings and its diff."""

import json

import pytest
from ansible.module_utils import _internal
from ansible.module_utils.common.parameters import PASS_VARS
from ansible.module_utils.testing import patch_module_args

from ansible_collections.fleetops.registration.plugins.module_utils import kubeconfig, parsing
from ansible_collections.fleetops.registration.plugins.module_utils.argspec import AGENT, HELM, HUB_AUTH, merge
from ansible_collections.fleetops.registration.plugins.module_utils.masking import invocation_secrets, result_secrets, secret_value_paths
from ansible_collections.fleetops.registration.plugins.module_utils.module import FleetModule, values_with_secrets


@pytest.mark.parametrize("text, passwords", [
    ("http://user:pw-1@proxy.corp:3128", ["pw-1"]),
    ("https://user:pa%40ss@proxy:3128/path", ["pa%40ss", "pa@ss"]),  # as written and percent-decoded
    ("user:pw-2@proxy.corp:3128", ["pw-2"]),  # no scheme: what Go's proxy variables take
    ("socks5://:tok-3@[::1]:1080", ["tok-3"]),  # no user
    ("--proxy=user:pw-4@10.0.0.1:3128", ["pw-4"]),
    ("HTTPS_PROXY=http://u:pw-5@h:1 NO_PROXY=.corp", ["pw-5"]),
    ("http://a:pw-6@h1,http://c:pw-7@h2", ["pw-6", "pw-7"]),  # a list: each one (and the run that spans both)
    ("http://user:p@ss-8@proxy:3128", ["p@ss-8"]),  # an unencoded @ in the password
    ("http://proxy.corp:3128", []),
    ("http://user@proxy.corp:3128", []),  # a user without a password
    ("git@github.com:org/repo.git", []),
    ("registry.corp:5000/agent:v1@sha256:0123abcd", []),  # a digest, not a password
    ("10:30", []),
])
def test_url_passwords_with_and_without_a_scheme(text, passwords):
    found = parsing.url_passwords(text)
    assert set(passwords) <= set(found)
    if not passwords:
        assert found == []


@pytest.mark.parametrize("args, secrets", [
    (["--token=tok-1"], ["tok-1"]),
    (["--password", "pw-2", "--cluster", "c1"], ["pw-2"]),
    (["-token", "tok-3"], ["tok-3"]),
    (["--client-secret=cs-4", "--api-key", "ak-5"], ["cs-4", "ak-5"]),
    (["--proxy-url", "http://u:pw-6@proxy:3128"], ["pw-6"]),
    (["API_TOKEN=tok-7"], ["tok-7"]),
    (["-H", "Authorization: Bearer tok-8"], ["tok-8"]),
    (["eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln"], ["eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln"]),
])
def test_argv_secrets_finds_flag_values(args, secrets):
    assert set(secrets) <= set(parsing.argv_secrets(args))


@pytest.mark.parametrize("args", [
    ["eks", "get-token", "--cluster-name", "prod"],
    ["--token-file", "/var/run/token", "--password-stdin", "--region", "eu"],  # pointers to a secret, not one
    ["--token"],
])
def test_argv_secrets_leaves_what_is_no_credential(args):
    assert parsing.argv_secrets(args) == []


@pytest.mark.parametrize("name, secret", [
    ("password", True), ("DB_PASSWORD", True), ("apiKey", True), ("api_key", True), ("--client-secret", True),
    ("AWS_SECRET_ACCESS_KEY", True), ("privateKey", True), ("token", True), ("hubToken", True), ("basicAuth", True),
    ("secret", True), ("clientSecret", True), ("DB_SECRET", True), ("--client-secret", True),
    ("kubeConfigSecret", False), ("kubeconfig_secret", False), ("hubSecret", False),
    ("tokenFile", False), ("passwordSecretName", False), ("tokenSecretName", False), ("secretNamespace", False),
    ("image_pull_secrets", False), ("key", False), ("value", False), ("proxy", False),
])
def test_secret_names(name, secret):
    assert parsing.secret_name(name) is secret


def test_secret_strings_finds_every_shape_in_nested_values():
    values = {
        "proxy": "http://user:values-proxy-pw@proxy:3128",
        "noProxy": "10.0.0.0/8,.svc",
        "global": {"registry": {"password": "reg-pw", "username": "robot"}},
        "auth": {"apiKey": "ak", "tokenSecretName": "hub-token"},
        "env": [{"name": "DB_PASSWORD", "value": "db-pw"}, {"name": "LOG_LEVEL", "value": "debug"}],
        "extraArgs": ["--client-secret", "cs", "--v", "2"],
        "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "edge"}],
        "replicas": 2, "enabled": True, "empty": {"token": ""},
    }
    found = parsing.secret_strings(values)
    assert set(found) == {"values-proxy-pw", "reg-pw", "ak", "db-pw", "cs"}
    assert parsing.secret_strings(values, urls_only=True) == ["values-proxy-pw"]
    assert parsing.secret_strings("agent:\n  env:\n    HTTPS_PROXY: me:text-pw@proxy:3128\n") == ["text-pw"]  # survey text


KUBECONFIG = {
    "apiVersion": "v1", "kind": "Config", "current-context": "hub",
    "clusters": [{"name": "hub", "cluster": {"server": "https://hub.example:6443",
                                             "proxy-url": "http://proxyuser:proxyurl-pw@proxy:3128"}}],
    "contexts": [{"name": "hub", "context": {"cluster": "hub", "user": "admin"}}],
    "users": [
        {"name": "admin", "user": {"token": "kc-token", "client-key-data": "kc-key"}},
        {"name": "oidc", "user": {"auth-provider": {"name": "oidc", "config": {"client-id": "kubectl", "refresh-token": "kc-rt"}}}},
        {"name": "exec", "user": {"exec": {"command": "cred", "args": ["get", "--token=exec-arg-tok", "--password", "exec-arg-pw"],
                                           "env": [{"name": "REGION", "value": "exec-env-value"}]}}},
    ],
}
KUBECONFIG_SECRETS = {"proxyurl-pw", "kc-token", "kc-key", "kc-rt", "exec-arg-tok", "exec-arg-pw", "exec-env-value"}


def test_kubeconfig_secrets_include_exec_args_and_the_proxy_url_password():
    found = kubeconfig.kubeconfig_secrets(KUBECONFIG)
    assert KUBECONFIG_SECRETS <= set(found)
    assert not {"kubectl", "cred", "get", "https://hub.example:6443", "admin"} & set(found)
    assert kubeconfig.kubeconfig_secrets({"users": ["not a mapping", {"user": None}], "clusters": [None]}) == []


def test_invocation_secrets_covers_every_option_shape():
    params = {
        "proxy": "http://u:option-proxy-pw@proxy:3128", "hub_proxy": "u:hub-proxy-pw@proxy:3128",
        "kubeconfig": KUBECONFIG, "chart_repo_url": "https://robot:repo-pw@charts.corp/fleet",
        "values": {"proxy": "http://u:values-pw@proxy:3128", "image": {"tag": "v1"}},
        "agent": {"env": {"HTTPS_PROXY": "me:agent-env-pw@proxy.corp:3128", "NO_PROXY": ".svc"}},
        "members": [{"name": "m1", "api_key": "item-key", "hub_kubeconfig": {"users": [{"user": {"token": "item-kc-token"}}]},
                     "agent_secret_values": {"kubefleet": {"note": "item-secret-value"}}}],
        "wait_timeout": 300, "wait": True, "labels": {"env": "prod"},
    }
    found = set(invocation_secrets(params, ["api_key", "agent_secret_values"]))
    assert {"option-proxy-pw", "hub-proxy-pw", "repo-pw", "values-pw", "agent-env-pw", "item-key", "item-kc-token",
            "item-secret-value"} <= found
    assert KUBECONFIG_SECRETS <= found
    assert not {"v1", "prod", ".svc", "m1", "300"} & found


def test_result_secrets_leaves_tokens_a_module_returns_when_asked():
    result = {"token": "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln", "values": "token: asked-for\n",
              "release": {"values": {"proxy": "http://u:release-pw@proxy:3128"}},
              "diff": {"before": {"values": {"password": "old-pw"}}, "after": {}}}
    found = set(result_secrets(result))
    assert {"release-pw", "old-pw"} <= found
    assert not {"eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln", "asked-for"} & found


def test_secret_values_are_merged_over_values():
    params = {"values": {"image": {"tag": "v1"}, "proxy": "http://proxy:3128"}, "secret_values": {"proxy": "http://u:pw@proxy:3128"}}
    assert values_with_secrets(params) == {"image": {"tag": "v1"}, "proxy": "http://u:pw@proxy:3128"}
    assert values_with_secrets({"values": None}) == {}


# -- a FleetModule: its syslog line, its result, its warnings -----------------------------------------------------

MARKED = {
    "kubeconfig": KUBECONFIG,
    "proxy": "http://u:option-proxy-pw@proxy:3128",
    "values": {"proxy": "http://u:values-pw@proxy:3128", "global": {"password": "values-key-pw"}},
    "secret_values": {"anything": "secret-values-value"},
    "agent": {"env": {"HTTPS_PROXY": "me:agent-env-pw@proxy.corp:3128"}},
    "chart_repo_url": "https://robot:repo-pw@charts.corp/fleet",
}
MARKERS = KUBECONFIG_SECRETS | {"option-proxy-pw", "values-pw", "values-key-pw", "secret-values-value", "agent-env-pw", "repo-pw"}
SPEC = merge(HUB_AUTH, HELM, AGENT, {"values": {"type": "dict"}, "secret_values": {"type": "dict", "no_log": True}})


@pytest.fixture
def logged(monkeypatch):
    # Warnings recorded as a module process records them (the test process counts as the controller otherwise).
    monkeypatch.setattr(_internal, "is_controller", False)
    lines = []
    monkeypatch.setattr(FleetModule, "log", lambda self, msg, log_args=None: lines.append(msg))
    return lines


def shown(text):
    return sorted(marker for marker in MARKERS if marker in text)


def test_the_logged_invocation_and_the_result_hold_no_marker(logged, capsys):
    # ansible-core 2.21 returns the module's arguments (invocation) only when asked; earlier releases always do.
    asked = {"_ansible_inject_invocation": True} if "inject_invocation" in PASS_VARS else {}
    with patch_module_args(dict(MARKED, **asked)):
        module = FleetModule(argument_spec=SPEC)
        assert logged[0].startswith("Invoked with") and "charts.corp" in logged[0]
        assert shown(logged[0]) == []
        with pytest.raises(SystemExit):
            module.exit_json(changed=False, values=values_with_secrets(module.params),
                             diff={"before": {"proxy": "http://u:old-release-pw@proxy:3128"}, "after": {}})
    result = json.loads(capsys.readouterr().out)
    text = json.dumps(result)
    assert shown(text) == [] and "old-release-pw" not in text
    assert result["invocation"]["module_args"]["values"]["proxy"] == "http://u:********@proxy:3128"


def test_a_warning_and_a_failure_hold_no_marker(logged, capsys):
    with patch_module_args(dict(MARKED)):
        module = FleetModule(argument_spec=SPEC)
        module.warn("the agent's proxy is me:warned-pw@proxy.corp:3128")
        assert "warned-pw" not in logged[-1]
        with pytest.raises(SystemExit):
            module.fail_json(msg="could not reach http://u:values-pw@proxy:3128 with --token=failed-tok")
    text = capsys.readouterr().out
    assert "me:********@proxy.corp:3128" in text and "--token=********" in text
    assert shown(text) == [] and "warned-pw" not in text and "failed-tok" not in text


def test_a_warning_or_exception_mentioning_a_hidden_value_is_masked_too(logged, capsys):
    # ansible-core 2.19 returns warnings and exception objects as structures its own masking of the result skips.
    with patch_module_args({"host": "https://hub.example:6443", "_ansible_verbosity": 3}):
        module = FleetModule(argument_spec={})
        module.hide("hidden-token-1")
        module.warn("the Secret still holds hidden-token-1")
        with pytest.raises(SystemExit):
            try:
                raise ValueError("rejected hidden-token-1")
            except ValueError as exc:
                module.fail_json(msg="failed", exception=exc)
    text = capsys.readouterr().out
    assert "the Secret still holds ********" in text and "hidden-token-1" not in text


def test_member_info_compares_the_secret_values_too():
    from ansible_collections.fleetops.registration.plugins.module_utils.member_state import desired_for
    from ansible_collections.fleetops.registration.plugins.module_utils.registry import KUBEFLEET, RANCHER_FLEET

    params = {"agent_values": {"kubefleet": {"image": {"tag": "v1"}}}, "agent_secret_values": {"kubefleet": {"registry": {"password": "pw"}}}}
    assert desired_for(KUBEFLEET, params)["values"] == {"image": {"tag": "v1"}, "registry": {"password": "pw"}}
    assert desired_for(RANCHER_FLEET, params)["values"] == {}


def test_secret_values_in_items_of_a_module_whose_spec_lacks_them_are_masked():
    # member_lock gets the role's requests, which carry agent_secret_values, without declaring the option
    params = {"members": [{"name": "m1", "agent_secret_values": {"kubefleet": {"registry": {"login": "robot-login-1"}}}}]}
    assert "robot-login-1" in invocation_secrets(params)


def test_an_older_secret_value_in_a_release_is_masked_where_the_secret_values_name_it():
    params = {"members": [{"name": "m1", "agent_secret_values": {"kubefleet": {"audit": {"note": "new-note"}}}}],
              "secret_values": {"registry": {"login": "new-login"}}}
    paths = secret_value_paths(params)
    assert paths == {("audit", "note"), ("registry", "login")}
    result = {"members": {"m1": {"release": {"values": {"audit": {"note": "old-note", "level": "info"}, "registry": {"login": "old-login"},
                                                        "old": {"password": "old-password"}, "secret": {"name": "hub-kubeconfig-secret"}}}}},
              "values": "token: returned-when-asked\n"}
    found = set(result_secrets(result, paths))
    assert {"old-note", "old-login", "old-password"} <= found
    assert not {"info", "hub-kubeconfig-secret", "returned-when-asked"} & found


def test_the_agent_modules_chart_values_are_searched_like_a_release_s_values():
    paths = secret_value_paths({"secret_values": {"registry": {"login": "new-login"}}})
    result = {"chart_values": {"registry": {"login": "old-login"}, "proxy": {"password": "chart-password"}, "logVerbosity": 2}}
    found = set(result_secrets(result, paths))
    assert {"old-login", "chart-password"} <= found


def test_a_value_already_masked_is_not_masked_again(logged, capsys):
    with patch_module_args({"host": "https://hub.example:6443"}):
        module = FleetModule(argument_spec={})
        with pytest.raises(SystemExit):
            module.exit_json(changed=True, diff={"before": {}, "after": {"secret": {"data": {"token": "VALUE_SPECIFIED_IN_NO_LOG_PARAMETER (changed)"}},
                                                                         "proxy": "http://u:********@proxy:3128"}})
    result = json.loads(capsys.readouterr().out)
    assert result["diff"]["after"]["secret"]["data"]["token"] == "VALUE_SPECIFIED_IN_NO_LOG_PARAMETER (changed)"
    assert result["diff"]["after"]["proxy"] == "http://u:********@proxy:3128"
