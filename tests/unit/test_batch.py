"""The batch helpers: reads answered from one list and kept current by the batch's own writes; item options."""

import pytest

from ansible_collections.fleetops.registration.plugins.module_utils import batch
from ansible_collections.fleetops.registration.plugins.module_utils.errors import ApiError, ParameterError
from ansible_collections.fleetops.registration.plugins.module_utils.k8s_client import SECRET, Resource

THING = Resource("example.io/v1", "Thing", "things")


class RecordingKube:
    """Answers like an API server holding ``objects`` and records every call (the batch's round trips)."""

    def __init__(self, objects):
        self.objects = dict(((o["metadata"]["namespace"], o["metadata"]["name"]), o) for o in objects)
        self.calls = []

    def list(self, resource, namespace=None, label_selector=None):
        self.calls.append(("list", resource.kind, namespace, label_selector))
        return [o for (ns, dummy), o in self.objects.items() if ns == namespace]

    def get(self, resource, name, namespace=None):
        self.calls.append(("get", resource.kind, name))
        return self.objects.get((namespace, name))

    def create(self, resource, body, namespace=None, dry_run=False):
        self.calls.append(("create", name_of(body), dry_run))
        obj = dict(body, created=True)
        if not dry_run:
            self.objects[(namespace, name_of(body))] = obj
        return obj

    def patch(self, resource, name, patch, namespace=None, dry_run=False, subresource=None):
        self.calls.append(("patch", name, dry_run))
        return dict(self.objects[(namespace, name)], **patch)

    def delete(self, resource, name, namespace=None, dry_run=False, propagation="Background"):
        self.calls.append(("delete", name, dry_run))
        return self.objects.pop((namespace, name), None) if not dry_run else self.objects.get((namespace, name))


def name_of(obj):
    return obj["metadata"]["name"]


def thing(name, **extra):
    return dict({"metadata": {"name": name, "namespace": "ns"}}, **extra)


def test_listed_reads_answer_gets_and_lists_from_one_list():
    kube = RecordingKube([thing("a"), thing("b")])
    listed = batch.ListedReads(kube)
    listed.read_all(THING, "ns")
    listed.read_all(THING, "ns")
    assert listed.get(THING, "a", "ns") == thing("a")
    assert listed.get(THING, "missing", "ns") is None
    assert sorted(name_of(o) for o in listed.list(THING, "ns")) == ["a", "b"]
    assert kube.calls == [("list", "Thing", "ns", None)]


def test_listed_reads_return_copies_and_keep_their_own_writes():
    kube = RecordingKube([thing("a")])
    listed = batch.ListedReads(kube)
    listed.read_all(THING, "ns")
    listed.get(THING, "a", "ns")["metadata"]["name"] = "mutated"
    assert name_of(listed.get(THING, "a", "ns")) == "a"
    listed.create(THING, thing("new"), "ns")
    assert listed.get(THING, "new", "ns")["created"] is True
    listed.create(THING, thing("dry"), "ns", dry_run=True)
    assert listed.get(THING, "dry", "ns") is None
    listed.patch(THING, "a", {"spec": 1}, "ns")
    assert listed.get(THING, "a", "ns")["spec"] == 1
    listed.delete(THING, "a", "ns")
    assert listed.get(THING, "a", "ns") is None
    assert [c[0] for c in kube.calls] == ["list", "create", "create", "patch", "delete"]


def test_listed_reads_go_to_the_server_for_what_was_not_listed_and_after_forget():
    kube = RecordingKube([thing("a")])
    listed = batch.ListedReads(kube)
    listed.read_all(THING, "ns")
    listed.get(SECRET, "s", "ns")
    listed.get(THING, "a", "other")
    listed.list(THING, "ns", label_selector="x=y")
    listed.forget()
    listed.get(THING, "a", "ns")
    assert [c[0] for c in kube.calls] == ["list", "get", "get", "list", "get"]


class RefusingKube(RecordingKube):
    """A credential that may not list things with a label selector (403)."""

    def list(self, resource, namespace=None, label_selector=None):
        if label_selector:
            self.calls.append(("list", resource.kind, namespace, label_selector))
            raise ApiError("things is forbidden", status=403, reason="Forbidden")
        return super().list(resource, namespace, label_selector)


def test_a_listing_refused_with_forbidden_ok_gives_each_reader_the_403_without_asking_again():
    kube = RefusingKube([thing("a")])
    listed = batch.ListedReads(kube)
    listed.read_all(THING, "ns", label_selector="x=y", forbidden_ok=True)
    for read in (listed.list, listed.scan, listed.list):
        with pytest.raises(ApiError) as refused:
            read(THING, "ns", label_selector="x=y")
        assert refused.value.status == 403 and "forbidden" in refused.value.msg
    assert listed.derived(THING, "ns", "x=y", len) is None
    assert kube.calls == [("list", "Thing", "ns", "x=y")]
    with pytest.raises(ApiError):
        batch.ListedReads(kube).read_all(THING, "ns", label_selector="x=y")


def test_item_params_override_the_task_and_leave_unset_keys_alone():
    params = {"namespace": "ns", "labels": {"a": "1"}, "state": "present", "clusters": [{"name": "x"}], "name": None}
    merged = batch.item_params(params, {"name": "x", "labels": None, "state": "absent"})
    assert merged == {"namespace": "ns", "labels": {"a": "1"}, "state": "absent", "clusters": None, "name": "x"}
    assert params["clusters"] == [{"name": "x"}]


def test_a_name_given_twice_is_refused_naming_the_item():
    batch.check_unique_names([{"name": "a"}, {"name": "b"}])
    with pytest.raises(ParameterError) as err:
        batch.check_unique_names([{"name": "a"}, {"name": "b"}, {"name": "a"}])
    assert "clusters[2].name" in err.value.message()


class FakeModule:
    def __init__(self, items, **params):
        self.params = dict(params, clusters=items, name=None)
        self.client = RecordingKube([thing("old")])

    def kube(self):
        return self.client

    def use_client(self, kube):
        self.client = kube


class PutThing:
    """A runner: creates its item's Thing unless it exists; an item named "bad" fails."""

    def __init__(self, module, params):
        self.kube, self.params = module.client, params

    def run(self):
        from ansible_collections.fleetops.registration.plugins.module_utils.errors import ApiError
        if self.params["name"] == "bad":
            raise ApiError("refused")
        exists = self.kube.get(THING, self.params["name"], "ns") is not None
        if not exists:
            self.kube.create(THING, thing(self.params["name"]), "ns")
        return {"changed": not exists, "diff": {"before": {}, "after": {"n": self.params["name"]}}}


def test_run_batch_keeps_item_order_reads_once_and_reports_one_diff_per_item():
    module = FakeModule([{"name": "n%d" % i} for i in range(20)] + [{"name": "old"}])
    result = batch.run_batch(module, PutThing, lambda kube: kube.read_all(THING, "ns"))
    assert [r["name"] for r in result["clusters"]] == ["n%d" % i for i in range(20)] + ["old"]
    assert result["changed"] and result["clusters"][-1]["changed"] is False
    assert [d["before_header"] for d in result["diff"]] == [r["name"] for r in result["clusters"]]
    kinds = [call[0] for call in module.client._kube.calls]  # pylint: disable=protected-access
    assert kinds.count("list") == 1 and kinds.count("get") == 0 and kinds.count("create") == 20


def test_run_batch_stops_at_a_failing_item_and_names_it_and_what_changed():
    module = FakeModule([{"name": "a"}, {"name": "bad"}] + [{"name": "z%d" % i} for i in range(300)])
    with pytest.raises(Exception) as err:
        batch.run_batch(module, PutThing, lambda kube: kube.read_all(THING, "ns"))
    message = err.value.message()
    assert message.startswith("clusters[1] (bad): refused") and "a" in message.split("changed before the batch stopped:")[1]
    assert err.value.details["changed"] is True
    created = [call[1] for call in module.client._kube.calls if call[0] == "create"]  # pylint: disable=protected-access
    assert "a" in created and len(created) < 301


class Crash(PutThing):
    def run(self):
        if self.params["name"] == "bad":
            raise KeyError("boom")
        return PutThing.run(self)


def test_an_unexpected_error_in_an_item_still_reports_the_item_and_the_changes():
    module = FakeModule([{"name": "a"}, {"name": "bad"}])
    with pytest.raises(Exception) as err:
        batch.run_batch(module, Crash, lambda kube: kube.read_all(THING, "ns"))
    assert err.value.message().startswith("clusters[1] (bad): unexpected error: 'boom'")
    assert err.value.details["changed"] is True and "KeyError" in err.value.details["exception"]


def test_scan_and_derived_read_the_listed_objects_without_copies_until_a_write():
    kube = RecordingKube([thing("a"), thing("b")])
    listed = batch.ListedReads(kube)
    assert listed.derived(THING, "ns", None, len) is None  # not listed: nothing derived, nothing read
    listed.read_all(THING, "ns")
    scanned = listed.scan(THING, "ns")
    assert sorted(name_of(o) for o in scanned) == ["a", "b"] and any(o is kube.objects[("ns", "a")] for o in scanned)
    built = []

    def names(objects):
        built.append(len(objects))
        return sorted(name_of(o) for o in objects)
    assert listed.derived(THING, "ns", None, names) == ["a", "b"] and listed.derived(THING, "ns", None, names) == ["a", "b"]
    assert built == [2]
    listed.create(THING, thing("c"), "ns", dry_run=True)  # a dry run changes nothing
    assert listed.derived(THING, "ns", None, names) == ["a", "b"] and built == [2]
    listed.create(THING, thing("c"), "ns")
    assert listed.derived(THING, "ns", None, names) == ["a", "b", "c"] and built == [2, 3]
    assert [c[0] for c in kube.calls] == ["list", "create", "create"]
    listed.forget()
    assert listed.derived(THING, "ns", None, names) is None
    assert sorted(name_of(o) for o in listed.scan(THING, "ns")) == ["a", "b", "c"] and kube.calls[-1][0] == "list"
