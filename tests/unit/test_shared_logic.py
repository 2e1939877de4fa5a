"""Merge patches, the waiter's clock, chart sources, Helm storage, the release plan, API paths, argument specs."""

import base64
import gzip
import json
import os
import stat

import pytest
import yaml

from ansible_collections.fleetops.registration.plugins.module_utils import argspec, helm, k8s_client, waiter
from ansible_collections.fleetops.registration.plugins.module_utils.errors import HelmError, ParameterError, WaitTimeout


def test_merge_patch_only_what_differs():
    current = {"metadata": {"labels": {"a": "1", "b": "2"}, "name": "x"}, "spec": {"ttl": "1h", "other": 1}}
    desired = {"metadata": {"labels": {"a": "1", "b": None, "c": "3"}}, "spec": {"ttl": "1h"}}
    assert k8s_client.merge_patch(current, desired) == {"metadata": {"labels": {"b": None, "c": "3"}}}
    assert k8s_client.merge_patch(current, {"spec": {"ttl": "1h"}}) == {}


def test_clean_hides_secret_data_and_noise():
    obj = {"metadata": {"name": "s", "resourceVersion": "1", "managedFields": []}, "data": {"token": "abc"}}
    cleaned = k8s_client.clean(obj, hide_data=True)
    assert cleaned["metadata"] == {"name": "s"}
    assert cleaned["data"] == {"token": "VALUE_SPECIFIED_IN_NO_LOG_PARAMETER"}
    assert obj["data"]["token"] == "abc"


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds


def test_waiter_returns_first_value_that_satisfies():
    clock = FakeClock()
    values = iter([None, {"data": {}}, {"data": {"token": "x"}}])
    w = waiter.Waiter(30, 1, clock=clock, sleeper=clock.sleep)
    assert w.until(lambda: next(values), "service_account_token", "token") == {"data": {"token": "x"}}
    assert clock.now == 0.75  # looked again after 0.25 s and 0.5 s


def test_waiter_looks_soon_first_then_every_wait_sleep():
    clock = FakeClock()
    pauses = []
    w = waiter.Waiter(30, 2, clock=clock, sleeper=lambda s: (pauses.append(s), clock.sleep(s)))
    values = iter([None] * 7 + [{"data": {"token": "x"}}])
    w.until(lambda: next(values), "service_account_token", "token")
    assert pauses == [0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75]
    pauses[:] = []
    values = iter([None] * 10 + [{"data": {"token": "x"}}])
    w.until(lambda: next(values), "service_account_token", "a longer wait")
    assert pauses[-3:] == [2, 2, 2] and max(pauses) == 2
    pauses[:] = []
    values = iter([None, {"data": {"token": "x"}}])
    w.until(lambda: next(values), "service_account_token", "a second wait starts soon again")
    assert pauses == [0.25]


def test_waiter_checks_after_a_wait_that_paused_and_not_after_one_that_did_not():
    """after_wait (the member lock's renewal) runs before a value that took a pause is returned: a step acts on what it
    waited for only if its run still holds the member. A value there at once, or a wait that timed out, costs nothing."""
    clock = FakeClock()
    checks = []
    w = waiter.Waiter(10, 2, clock=clock, sleeper=clock.sleep, after_wait=lambda: checks.append(clock.now))
    assert w.until(lambda: {"data": {"token": "x"}}, "service_account_token", "there at once") and checks == []
    values = iter([None, None, {"data": {"token": "x"}}])
    assert w.until(lambda: next(values), "service_account_token", "a wait") and checks == [0.75]
    with pytest.raises(WaitTimeout):
        w.until(lambda: None, "service_account_token", "never there")
    assert checks == [0.75]


def test_a_shorter_wait_keeps_the_hooks_and_never_outlasts_the_run_s_clock():
    """A grace period (kubefleet_member_cluster's before it removes finalizers) is a wait like any other: the lock is
    renewed after it, and it ends with the run's wait_timeout at the latest."""
    clock = FakeClock()
    checks = []
    w = waiter.Waiter(10, 2, clock=clock, sleeper=clock.sleep, after_wait=lambda: checks.append(clock.now))
    clock.sleep(7)
    grace = w.within(30)
    assert grace.timeout == 3
    values = iter([None, {"data": {"token": "x"}}])
    assert grace.until(lambda: next(values), "service_account_token", "within the grace") and checks == [7.25]
    assert w.within(1).timeout == 1


def test_waiter_shares_one_clock_across_waits():
    clock = FakeClock()
    w = waiter.Waiter(10, 2, clock=clock, sleeper=clock.sleep)
    with pytest.raises(WaitTimeout):
        w.until(lambda: None, "service_account_token", "first")
    assert clock.now == 10
    with pytest.raises(WaitTimeout) as err:
        w.until(lambda: {"status": {}}, waiter.condition_true("Joined"), "second")
    assert clock.now == 10  # no time left: fails after one look
    assert err.value.last == {"status": {}}


def test_nudge_touches_when_due_and_not_more_often():
    clock = FakeClock()
    touched = []
    later = waiter.Nudge(lambda: touched.append(clock.now), 20, clock=clock)
    for dummy in range(25):  # a wait polling every 2 s for 50 s
        later()
        clock.sleep(2)
    assert touched == [20.0, 40.0] and later.count == 2
    clock.now, touched[:] = 0.0, []
    at_once = waiter.Nudge(lambda: touched.append(clock.now), 10, at_once=True, clock=clock)
    for dummy in range(6):
        at_once()
        clock.sleep(4)
    assert touched == [0.0, 12.0]


def test_predicates():
    from ansible_collections.fleetops.registration.plugins.module_utils._kubefleet.views import member_joined
    from ansible_collections.fleetops.registration.plugins.module_utils._rancher_fleet.views import checked_in
    joined = {"status": {"conditions": [{"type": "Joined", "status": "True"}]}}
    assert member_joined(joined)
    assert not member_joined({"status": {"conditions": [{"type": "Joined", "status": "Unknown"}]}})
    assert checked_in({"status": {"agent": {"lastSeen": "2026-01-01T00:00:00Z"}}}) and not checked_in({"status": {}})
    assert waiter.PREDICATES["absent"](None) and waiter.PREDICATES["service_account_token"]({"data": {"token": "dA=="}})


def test_chart_source_kinds(tmp_path):
    (tmp_path / "Chart.yaml").write_text("name: fleet-agent\nversion: 0.16.0\n")
    local = helm.ChartSource(str(tmp_path), version="9.9.9")
    assert local.local and local.args() == [str(tmp_path)]
    assert local.local_metadata()["version"] == "0.16.0"
    repo = helm.ChartSource("fleet-agent", repo_url="https://charts.example", version="0.16.0")
    assert repo.args() == ["fleet-agent", "--repo", "https://charts.example", "--version", "0.16.0"]
    oci = helm.ChartSource("oci://registry.example/fleet-agent")
    assert oci.args() == ["oci://registry.example/fleet-agent"]
    with pytest.raises(ParameterError) as err:
        helm.ChartSource(str(tmp_path / "missing"))
    assert err.value.param == "chart_ref"


def test_helm_scrubs_secrets_from_errors():
    runner = helm.Helm(lambda argv, environ_update=None: (1, "", "bad token s3cr3t"), "/bin/helm", secrets=["s3cr3t"])
    with pytest.raises(Exception) as err:
        runner.run(["upgrade", "x"])
    assert "s3cr3t" not in str(err.value.message())


class RecordingHelm:
    """A run_command that records each Helm call (argv, what went to its stdin, the files it could read)."""

    def __init__(self, version="v3.21.4"):
        self.calls = []
        self.version = version

    def __call__(self, argv, environ_update=None, data=None):
        files = dict((arg, open(arg).read()) for arg in argv if arg.startswith("/") and os.path.isfile(arg))
        self.calls.append({"argv": list(argv), "data": data, "files": files})
        return 0, self.version if argv[1:2] == ["version"] else "", ""


def test_values_reach_helm_on_its_stdin_never_in_a_file_or_argv(tmp_path):
    recorder = RecordingHelm()
    runner = helm.Helm(recorder, "/bin/helm", kubeconfig="/k", context="c", workdir=str(tmp_path))
    chart = helm.ChartSource("fleet-agent", repo_url="https://charts.example/fleet", version="0.16.0")
    runner.upgrade_install("fleet-agent", chart, "cattle-fleet-system", {"token": "s3cr3t-token"})
    (call,) = recorder.calls
    assert call["argv"] == ["/bin/helm", "upgrade", "fleet-agent", "fleet-agent", "--repo", "https://charts.example/fleet",
                            "--version", "0.16.0", "--install", "--namespace", "cattle-fleet-system", "--values", "-",
                            "--create-namespace", "--kubeconfig", "/k", "--kube-context", "c"]
    assert yaml.safe_load(call["data"]) == {"token": "s3cr3t-token"}
    assert not any("s3cr3t-token" in arg for arg in call["argv"]) and list(tmp_path.iterdir()) == []


def test_uninstall_and_rollback_run_no_hook_a_stored_release_record_names():
    """A release record is a Secret anyone who may write Secrets in its namespace can plant; its hooks would run with
    the member's admin credential (issue 46): Helm is told to run none."""
    recorder = RecordingHelm()
    runner = helm.Helm(recorder, "/bin/helm", kubeconfig="/k")
    runner.uninstall("member-agent", "default")
    runner.uninstall("fleet-agent", "cattle-fleet-system", wait=True, timeout=60)
    runner.rollback("fleet-agent", "cattle-fleet-system", 3)
    assert [call["argv"][:6] for call in recorder.calls] == [
        ["/bin/helm", "uninstall", "member-agent", "--namespace", "default", "--no-hooks"],
        ["/bin/helm", "uninstall", "fleet-agent", "--namespace", "cattle-fleet-system", "--no-hooks"],
        ["/bin/helm", "rollback", "fleet-agent", "3", "--namespace", "cattle-fleet-system"]]
    assert recorder.calls[2]["argv"][6] == "--no-hooks"


def test_a_post_renderer_reaches_helm_with_each_argument_its_own_flag():
    recorder = RecordingHelm()
    runner = helm.Helm(recorder, "/bin/helm")
    runner.upgrade_install("fleet-agent", helm.ChartSource("oci://charts.example/fleet-agent", version="0.16.0"), "ns", {},
                           post_renderer=("/no/such/python3", "/t/render.py", "/t/spec.json", "fleet-agent"))
    (call,) = recorder.calls
    argv = call["argv"]
    start = argv.index("--post-renderer")
    assert argv[start:start + 8] == ["--post-renderer", "/no/such/python3", "--post-renderer-args", "/t/render.py",
                                     "--post-renderer-args", "/t/spec.json", "--post-renderer-args", "fleet-agent"]
    runner.upgrade_install("fleet-agent", helm.ChartSource("oci://charts.example/fleet-agent", version="0.16.0"), "ns", {})
    assert not any(arg.startswith("--post-renderer") for arg in recorder.calls[-1]["argv"])


@pytest.mark.parametrize("version, executable", [("v3.21.4+g1234", True), ("v3.9.0", True), ("v4.0.1+gabc", False)])
def test_only_helm_3_takes_an_executable_post_renderer(version, executable):
    assert helm.Helm(RecordingHelm(version), "/bin/helm").runs_post_renderer_executables is executable


def test_chart_repository_credentials_never_reach_helms_argv(tmp_path):
    recorder = RecordingHelm()
    runner = helm.Helm(recorder, "/bin/helm", workdir=str(tmp_path))
    chart = helm.ChartSource("fleet-agent", repo_url="https://alice:p%40ss-w0rd@charts.example/fleet", version="0.16.0")
    assert (chart.repo_url, chart.repo_username, chart.repo_password) == ("https://charts.example/fleet", "alice", "p@ss-w0rd")
    runner.upgrade_install("fleet-agent", chart, "ns", {}, dry_run=True)
    update, version, upgrade = recorder.calls
    config = str(tmp_path / "repositories.yaml")
    assert update["argv"] == ["/bin/helm", "repo", "update", helm.REPOSITORY_NAME, "--repository-config", config]
    assert version["argv"] == ["/bin/helm", "version", "--short"]
    assert upgrade["argv"][:7] == ["/bin/helm", "upgrade", "fleet-agent", helm.REPOSITORY_NAME + "/fleet-agent",
                                   "--repository-config", config, "--version"]
    for call in recorder.calls:
        assert not any("p@ss-w0rd" in arg or "p%40ss-w0rd" in arg or "alice" in arg for arg in call["argv"]), call["argv"]
    assert stat.S_IMODE(os.stat(config).st_mode) == 0o600
    assert yaml.safe_load(update["files"][config])["repositories"] == [{
        "name": helm.REPOSITORY_NAME, "url": "https://charts.example/fleet", "username": "alice", "password": "p@ss-w0rd"}]
    # Helm's own messages name the URL: the password is scrubbed in either spelling
    assert runner.scrub("failed https://alice:p%40ss-w0rd@x and p@ss-w0rd") == "failed https://alice:********@x and ********"


def test_a_repository_url_without_credentials_is_passed_as_it_is():
    assert helm.split_url_credentials("https://charts.example/fleet") == ("https://charts.example/fleet", None, None)
    assert helm.split_url_credentials("http://u:pw@127.0.0.1:8080/x?y=1") == ("http://127.0.0.1:8080/x?y=1", "u", "pw")
    assert not helm.ChartSource("fleet-agent", repo_url="https://charts.example").repo_credentials


@pytest.mark.parametrize("ref, words", [
    ("--post-renderer=/tmp/evil", "begins with '-'"), ("-fleet-agent", "begins with '-'"),
    ("oci://bob:hunter2@registry.example/fleet-agent", "holds a password"),
])
def test_a_chart_ref_helm_would_misread_is_refused_naming_the_option(ref, words):
    for param in ("chart_ref", "agent_chart"):
        with pytest.raises(ParameterError) as err:
            helm.ChartSource(ref, repo_url="https://charts.example", param=param)
        assert err.value.param == param and words in err.value.msg
        assert "hunter2" not in err.value.message()


def test_a_chart_repo_url_that_is_no_url_is_refused():
    with pytest.raises(ParameterError) as err:
        helm.ChartSource("fleet-agent", repo_url="alice:pw@charts.example")
    assert err.value.param == "chart_repo_url" and "pw" not in err.value.message().replace("https://", "")


def test_values_differ_ignores_key_order():
    assert not helm.values_differ({"a": 1, "b": {"c": "d"}}, {"b": {"c": "d"}, "a": 1})
    assert helm.values_differ({"a": 1}, {"a": "1"})


# -- Helm storage and the one release decision -------------------------------------------------

def _storage_secret(name, revision, status="deployed", chart="fleet-agent", version="0.16.0", config=None, compress=True):
    payload = {"name": name, "namespace": "cattle-fleet-system", "version": revision,
               "info": {"status": status, "last_deployed": "2026-01-02T03:04:05.123456789Z"},
               "chart": {"metadata": {"name": chart, "version": version, "appVersion": "v" + version}},
               "config": config if config is not None else {"token": "s3cret", "labels": {"env": "dev"}}}
    raw = json.dumps(payload).encode()
    if compress:
        raw = gzip.compress(raw)
    inner = base64.b64encode(raw)
    return {"metadata": {"name": "sh.helm.release.v1.%s.v%d" % (name, revision),
                         "labels": {"owner": "helm", "name": name, "version": str(revision), "status": status}},
            "type": "helm.sh/release.v1",
            "data": {"release": base64.b64encode(inner).decode()}}


class ListOnly:
    """A stand-in for KubeClient.list that records the calls (read_release must make exactly one)."""

    def __init__(self, items):
        self.items = items
        self.calls = []

    def list(self, resource, namespace=None, label_selector=None):
        self.calls.append((resource.plural, namespace, label_selector))
        return list(self.items)


def test_read_release_picks_the_newest_revision_in_one_list():
    kube = ListOnly([_storage_secret("fleet-agent", 1, "superseded", version="0.15.0"),
                     _storage_secret("fleet-agent", 10, "deployed"),
                     _storage_secret("fleet-agent", 2, "superseded", compress=False)])
    release = helm.read_release(kube, "fleet-agent", "cattle-fleet-system")
    assert kube.calls == [("secrets", "cattle-fleet-system", "owner=helm,name=fleet-agent")]
    assert release == {"name": "fleet-agent", "namespace": "cattle-fleet-system", "revision": 10, "status": "deployed",
                       "chart": "fleet-agent", "chart_version": "0.16.0", "app_version": "v0.16.0",
                       "values": {"token": "s3cret", "labels": {"env": "dev"}}, "updated": "2026-01-02T03:04:05.123456789Z"}


def test_read_release_none_and_uncompressed():
    assert helm.read_release(ListOnly([]), "fleet-agent", "x") is None
    release = helm.read_release(ListOnly([_storage_secret("a", 3, "failed", compress=False)]), "a", "x")
    assert (release["revision"], release["status"]) == (3, "failed")


def test_read_release_undecodable_names_the_secret():
    broken = _storage_secret("a", 1)
    broken["data"]["release"] = base64.b64encode(b"not base64 at all!").decode()
    with pytest.raises(HelmError) as err:
        helm.read_release(ListOnly([broken]), "a", "x")
    assert "sh.helm.release.v1.a.v1" in err.value.message()


DEPLOYED = {"status": "deployed", "chart": "fleet-agent", "chart_version": "0.16.0", "values": {"a": 1}}


@pytest.mark.parametrize("release,version,values,action,reason", [
    (None, "0.16.0", {"a": 1}, "install", "not installed"),
    (dict(DEPLOYED, status="uninstalled"), "0.16.0", {"a": 1}, "install", "uninstalled"),
    (DEPLOYED, "0.16.0", {"a": 1}, "none", None),
    (DEPLOYED, None, {"a": 1}, "none", None),
    (DEPLOYED, "0.17.0", {"a": 1}, "upgrade", "chart version 0.16.0 -> 0.17.0"),
    (DEPLOYED, "0.16.0", {"a": 2}, "upgrade", "values differ"),
    (dict(DEPLOYED, status="failed"), "0.16.0", {"a": 1}, "upgrade", "status is failed"),
    (dict(DEPLOYED, chart="other"), "0.16.0", {"a": 1}, "upgrade", "runs chart other"),
])
def test_release_plan(release, version, values, action, reason):
    plan = helm.ReleasePlan.decide(release, "fleet-agent", version, values)
    assert plan.action == action
    assert plan.changes == (action != "none")
    if reason:
        assert any(reason in text for text in plan.reasons)
    else:
        assert plan.reasons == []


def test_release_plan_reasons_never_carry_values():
    plan = helm.ReleasePlan.decide(dict(DEPLOYED, values={"token": "s3cret"}), "fleet-agent", "0.16.0", {"token": "n3w"})
    assert plan.action == "upgrade" and not any("s3cret" in r or "n3w" in r for r in plan.reasons)


def test_chart_identity_one_rule(tmp_path):
    (tmp_path / "Chart.yaml").write_text("name: fleet-agent\nversion: 0.16.0\n")
    assert helm.ChartSource(str(tmp_path)).identity() == ("fleet-agent", "0.16.0")
    assert helm.ChartSource(str(tmp_path), version="0.16.0").identity() == ("fleet-agent", "0.16.0")
    with pytest.raises(ParameterError) as err:
        helm.ChartSource(str(tmp_path), version="0.17.0").identity()
    assert err.value.param == "chart_version"
    assert helm.ChartSource("oci://r.example/charts/fleet-agent", version="1.2.3").identity() == ("fleet-agent", "1.2.3")
    assert helm.ChartSource("fleet-agent", repo_url="https://charts.example").identity() == ("fleet-agent", None)


# -- API paths, argument specs -----------------------------------------------------------------

@pytest.mark.parametrize("path,api", [
    ("/apis/fleet.cattle.io/v1alpha1/namespaces/x/clusters", ("fleet.cattle.io/v1alpha1", "clusters")),
    ("/apis/fleet.cattle.io/v1alpha1/namespaces/x/clusters/c1", ("fleet.cattle.io/v1alpha1", "clusters")),
    ("/apis/cluster.kubernetes-fleet.io/v1beta1/memberclusters", ("cluster.kubernetes-fleet.io/v1beta1", "memberclusters")),
    ("/apis/fleet.cattle.io/v1alpha1", None),
    ("/api/v1/namespaces/x/secrets/s", None),
    ("/apis/apps/v1/namespaces/x/deployments/d", None),
    ("/apis/authentication.k8s.io/v1/selfsubjectreviews", None),
])
def test_api_of_path(path, api):
    assert k8s_client.api_of_path(path) == api


def test_argspec_merge_later_wins_and_copies():
    spec = argspec.merge(argspec.AUTH, argspec.WAIT, {"wait": dict(type="bool", default=False)})
    assert spec["wait"]["default"] is False
    assert argspec.WAIT["wait"]["default"] is True
    assert "kubeconfig" in spec and "hub_kubeconfig" not in spec
    assert argspec.HUB_AUTH["hub_api_key"]["no_log"] is True
    assert "fallback" not in argspec.HUB_AUTH["hub_kubeconfig"]


@pytest.mark.parametrize("namespace, name", [
    ("default", "../../namespaces/kube-system/secrets/admin"), ("..", "x"), ("default", "a?watch=true"),
    ("default", "a#b"), ("default", "a%2Fb"), ("kube system", "x"), ("default", "a\\b"),
])
def test_a_name_that_would_leave_its_path_segment_is_refused(namespace, name):
    with pytest.raises(ParameterError) as err:
        k8s_client.SECRET.path(namespace, name)
    assert err.value.param in ("namespace", "name") and "not a valid Kubernetes object name" in err.value.msg


def test_ordinary_names_make_the_paths_kubectl_uses():
    assert k8s_client.SECRET.path("fleet-default", "import-token.x") == "/api/v1/namespaces/fleet-default/secrets/import-token.x"
    role = k8s_client.Resource("rbac.authorization.k8s.io/v1", "ClusterRole", "clusterroles", namespaced=False)
    assert role.path(name="system:fleet-agent") == "/apis/rbac.authorization.k8s.io/v1/clusterroles/system:fleet-agent"


@pytest.mark.parametrize("name", ["fleet-agent,owner!=helm", "a b", "", "A", "x" * 54])
def test_a_release_name_that_would_widen_the_label_selector_is_refused(name):
    with pytest.raises(ParameterError) as err:
        helm.read_release(None, name, "cattle-fleet-system")  # refused before any request
    assert err.value.param == "release_name"


def _history(*releases):
    return dict((release["revision"], release) for release in releases)


REV1 = dict(DEPLOYED, revision=1, status="superseded")
REV2 = dict(DEPLOYED, revision=2, values={"a": 2})


@pytest.mark.parametrize("history,revision,action,reason", [
    (_history(REV1, REV2), 1, "rollback", "values differ from revision 1's"),
    (_history(REV1, dict(REV2, chart_version="0.17.0", values={"a": 1})), 1, "rollback", "fleet-agent 0.17.0 -> fleet-agent 0.16.0"),
    (_history(REV1, dict(REV2, values={"a": 1}, status="failed")), 1, "rollback", "status is failed"),
    # a re-run after the rollback (revision 3 runs revision 1's chart and values): nothing to do
    (_history(REV1, REV2, dict(REV1, revision=3, status="deployed")), 1, "none", None),
    (_history(dict(REV1, status="deployed")), 1, "none", None),
])
def test_rollback_plan(history, revision, action, reason):
    plan = helm.ReleasePlan.rollback(history, revision)
    assert plan.action == action and plan.changes == (action != "none")
    assert any(reason in text for text in plan.reasons) if reason else plan.reasons == []


@pytest.mark.parametrize("history,revision,message", [
    ({}, 1, "not installed"),
    (_history(dict(REV2, status="uninstalled")), 1, "not installed"),
    (_history(REV1, REV2), 7, "has no revision 7; Helm keeps revisions 1, 2"),
    (_history(REV1, REV2), 0, "is not a release revision"),
    (_history(REV1, REV2), True, "is not a release revision"),
])
def test_rollback_plan_refuses_what_cannot_be_rolled_back_naming_the_option(history, revision, message):
    with pytest.raises(ParameterError) as err:
        helm.ReleasePlan.rollback(history, revision)
    assert err.value.param == "rollback_to_revision" and message in err.value.message()


def test_rollback_reasons_never_carry_values():
    plan = helm.ReleasePlan.rollback(_history(dict(REV1, values={"token": "s3cret"}), dict(REV2, values={"token": "n3w"})), 1)
    assert plan.action == "rollback" and not any("s3cret" in r or "n3w" in r for r in plan.reasons)


def test_release_history_reads_every_kept_revision_in_one_list():
    kube = ListOnly([_storage_secret("member-agent", 1, "superseded", version="0.15.0"),
                     _storage_secret("member-agent", 2, "deployed"), _storage_secret("other", 5, "deployed")])
    history = helm.read_release_history(kube, "member-agent", "default")
    assert kube.calls == [("secrets", "default", "owner=helm,name=member-agent")]
    assert sorted(history) == [1, 2] and history[1]["chart_version"] == "0.15.0" and history[2]["status"] == "deployed"
    with pytest.raises(ParameterError):
        helm.read_release_history(kube, "x,owner!=helm", "default")
