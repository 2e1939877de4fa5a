# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Many clusters in one module call: the hub is listed once per batch, then one runner per item.

A hub that keeps 100 clusters must not cost 100 module processes, each reading the same objects again
(a task per cluster in the first ``make bench``: 400 processes and an O(N^2) client-ID check). A module with a ``clusters`` option runs its
ordinary runner once per item over a ``ListedReads`` client, so an item costs its writes and nothing more.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import threading
import traceback
from concurrent.futures import ThreadPoolExecutor

from ansible_collections.fleetops.registration.plugins.module_utils.errors import ApiError, FleetOpsError, ParameterError

ITEMS = "clusters"
# Items in flight at once: an item's time is mostly the API server's round trip, so a few run side by side.
WORKERS = 8


class ListedReads:
    """A KubeClient whose reads of the kinds it listed come from that one LIST, kept current by its own writes.

    Anything not listed goes to the server. ``forget()`` drops every list: a wait must see the server change.

    ``get`` and ``list`` hand out copies. What every item of a batch looks through (all Clusters for a client ID, all of
    Fleet's namespaces for a Cluster's own) would then cost a copy of the whole list per item, O(N^2) over a batch:
    ``scan`` and ``derived`` give read-only access to the listed objects instead, and ``derived`` keeps what it builds
    from them (an index) until the listing changes.
    """

    def __init__(self, kube):
        self._kube = kube
        self._listed = {}
        self._refused = {}  # listing key: the 403 a read_all(forbidden_ok=True) got
        self._derived = {}
        self._lock = threading.Lock()  # the batch's items run in threads

    def __getattr__(self, name):
        return getattr(self._kube, name)

    def read_all(self, resource, namespace=None, label_selector=None, forbidden_ok=False):
        """List ``resource`` in ``namespace`` once; later get/list calls for it are answered from memory.

        With ``label_selector``, only list calls with that same selector are (until a write of the resource, which
        drops them: memory cannot tell whether the written object still matches).

        With ``forbidden_ok``, a 403 is kept instead of raised: each item's ``list`` and ``scan`` of it then get that
        same 403 without asking the server again, and handle it as they would a 403 of their own request.
        """
        key = (resource.path(namespace), label_selector)
        if key in self._listed or key in self._refused:
            return
        try:
            items = self._kube.list(resource, namespace, label_selector=label_selector)
        except ApiError as exc:
            if not forbidden_ok or exc.status != 403:
                raise
            self._refused[key] = exc
            return
        self._listed[key] = dict((item["metadata"]["name"], item) for item in items)

    def forget(self):
        with self._lock:
            self._listed.clear()
            self._derived.clear()

    def scan(self, resource, namespace=None, label_selector=None):
        """``list`` without the copies, for a caller that only reads them (never changes what it gets)."""
        with self._lock:
            memory = self._memory(resource, namespace, label_selector)
            items = None if memory is None else list(memory.values())
        if items is None:
            return self._kube.list(resource, namespace, label_selector=label_selector)
        return items

    def derived(self, resource, namespace, label_selector, build):
        """``build(listed objects)``, kept until the listing of ``resource`` changes; None when it is not listed.

        ``build`` must not change the objects, and the caller must not change what it returns."""
        key = (resource.path(namespace), label_selector)
        with self._lock:
            memory = self._listed.get(key)
            if memory is None:
                return None
            if (key, build) not in self._derived:
                self._derived[(key, build)] = build(list(memory.values()))
            return self._derived[(key, build)]

    def _memory(self, resource, namespace, label_selector=None):
        """What the listing holds; raises the 403 it got, if it was refused."""
        key = (resource.path(namespace), label_selector)
        if key in self._refused:
            refused = self._refused[key]
            raise ApiError(refused.msg, status=refused.status, reason=refused.reason, hint=refused.hint)
        return self._listed.get(key)

    def _forget_selected(self, resource, namespace):
        path = resource.path(namespace)
        for key in [k for k in self._listed if k[0] == path and k[1] is not None]:
            del self._listed[key]
        for key in [k for k in self._derived if k[0][0] == path]:
            del self._derived[key]

    def _remember(self, resource, namespace, obj, dry_run):
        with self._lock:
            memory = self._memory(resource, namespace)
            if memory is not None and obj and not dry_run:
                memory[obj["metadata"]["name"]] = obj
            if not dry_run:
                self._forget_selected(resource, namespace)

    def get(self, resource, name, namespace=None):
        with self._lock:
            memory = self._memory(resource, namespace)
            found = None if memory is None else memory.get(name)
        if memory is None:
            return self._kube.get(resource, name, namespace)
        return copy.deepcopy(found)

    def list(self, resource, namespace=None, label_selector=None):
        with self._lock:
            memory = self._memory(resource, namespace, label_selector)
            items = None if memory is None else list(memory.values())
        if items is None:
            return self._kube.list(resource, namespace, label_selector=label_selector)
        return [copy.deepcopy(item) for item in items]

    def create(self, resource, body, namespace=None, dry_run=False):
        created = self._kube.create(resource, body, namespace, dry_run=dry_run)
        self._remember(resource, namespace, created, dry_run)
        return created

    def patch(self, resource, name, patch, namespace=None, dry_run=False, subresource=None):
        patched = self._kube.patch(resource, name, patch, namespace, dry_run=dry_run, subresource=subresource)
        self._remember(resource, namespace, patched, dry_run)
        return patched

    def delete(self, resource, name, namespace=None, dry_run=False, propagation="Background"):
        gone = self._kube.delete(resource, name, namespace, dry_run=dry_run, propagation=propagation)
        with self._lock:
            memory = self._memory(resource, namespace)
            if memory is not None and not dry_run:
                memory.pop(name, None)
            if not dry_run:
                self._forget_selected(resource, namespace)
        return gone


def item_params(params, item):
    """The module's options for one item: the task's options, overridden by what the item gives."""
    merged = dict(params)
    merged[ITEMS] = None
    merged.update((key, value) for key, value in item.items() if value is not None)
    return merged


def check_unique_names(items):
    seen = set()
    for index, item in enumerate(items):
        if item["name"] in seen:
            raise ParameterError("%s[%d].name" % (ITEMS, index), "%r is given twice" % item["name"],
                                 "Give each cluster once; the last entry would silently win")
        seen.add(item["name"])


def run_batch(module, runner_class, prefetch, check_items=None):
    """Run ``runner_class(module, params).run()`` for each item of ``clusters``; ``prefetch(kube)`` lists what they read.

    Up to ``WORKERS`` items run at once over the one client (``check_items(items)`` first refuses what would collide
    between them). Returns ``{changed, clusters: [result per item, in order]}`` and, in diff mode, one diff per item.
    An item that fails stops the batch: no further item starts, the error names the item and the items that changed,
    and a re-run continues.
    """
    items = module.params[ITEMS]
    check_unique_names(items)
    if check_items is not None:
        check_items(items)
    kube = ListedReads(module.kube())
    module.use_client(kube)
    prefetch(kube)
    outcomes = [None] * len(items)
    failed = []

    def run_item(index):
        if failed:
            return
        try:
            outcomes[index] = runner_class(module, item_params(module.params, items[index])).run()
        except FleetOpsError as exc:
            failed.append((index, exc))
        except Exception as exc:  # pylint: disable=broad-except
            failed.append((index, FleetOpsError("unexpected error: %s" % exc, exception=traceback.format_exc())))

    with ThreadPoolExecutor(max_workers=min(WORKERS, len(items) or 1)) as pool:
        list(pool.map(run_item, range(len(items))))
    results = [dict(result, name=result.get("name") or items[index]["name"])
               for index, result in enumerate(outcomes) if result is not None]
    if failed:
        raise _batch_failure(items, results, *min(failed, key=lambda pair: pair[0]))
    diffs = [dict(result.pop("diff"), before_header=result["name"], after_header=result["name"])
             for result in results if "diff" in result]
    out = {"changed": any(r.get("changed") for r in results), ITEMS: results}
    if diffs:
        out["diff"] = diffs
    return out


def _batch_failure(items, results, index, exc):
    changed = [r["name"] for r in results if r.get("changed")]
    exc.msg = "%s[%d] (%s): %s" % (ITEMS, index, items[index]["name"], exc.msg)
    if changed:
        exc.msg += " (items changed before the batch stopped: %s)" % ", ".join(changed)
        exc.details["changed"] = True
    return exc
