# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""fleet_status: every member the fleet managers know, one LIST per manager, as rows and a table."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.fleetops.registration.plugins.module_utils import registry
from ansible_collections.fleetops.registration.plugins.module_utils.cluster_identity import recorded_identity
from ansible_collections.fleetops.registration.plugins.module_utils.findings import first, healthy, problems, status_cause
from ansible_collections.fleetops.registration.plugins.module_utils.member_lock import live_locks

NAME_WIDTH = 16


def merge_rows(views_by_manager, inventory_names=(), locks=None):
    """One row per member name known to a manager or listed in the inventory, sorted by name; ``locks`` (member_lock's
    ``live_locks``) adds the run that is changing a member."""
    inventory = [name for name in inventory_names or [] if name]
    names = set(inventory)
    for rows in views_by_manager.values():
        names.update(rows)
    merged = []
    for name in sorted(names):
        row = {"name": name, "in_inventory": name in inventory, "lock": (locks or {}).get(name)}
        for manager_name, rows in views_by_manager.items():
            row[manager_name] = rows.get(name)
        merged.append(row)
    return merged


def member_row(manager, hub_view, stale_after=None):
    """One member's cell for one manager, all from the findings the hub view alone gives (what member_info and the
    inventory plugin judge by): its ``status_row`` (the state word of ``findings.status_cause``, contact age,
    labels...), ``healthy`` by ``findings.healthy``, and ``diagnosis``: the findings that make it unhealthy, root cause
    first."""
    if hub_view is None:
        return None
    found = manager.hub_findings(hub_view, stale_after)
    return dict(manager.status_row(hub_view, status_cause(found)), healthy=healthy(found), diagnosis=problems(found))


def _yes_no(value):
    return "-" if value is None else ("yes" if value else "no")


def _labels_text(labels):
    return ",".join("%s=%s" % item for item in sorted((labels or {}).items())) or "-"


def _age_text(seconds):
    return "-" if seconds is None else "%ss" % seconds


def shown_labels(row, manager_names):
    """The labels once when every manager agrees, else each manager's own."""
    texts = [(name, _labels_text((row.get(name) or {}).get("labels"))) for name in manager_names if row.get(name)]
    if not texts:
        return "-"
    if len(set(text for dummy, text in texts)) == 1:
        return texts[0][1]
    return "; ".join("%s: %s" % pair for pair in texts)


def shown_cluster(row, manager_names):
    """The start of the kube-system UID the hub objects record for the member, or why there is none to show."""
    uids = set(((row.get(name) or {}).get("identity") or {}).get("uid") for name in manager_names if row.get(name))
    uids.discard(None)
    if not uids:
        return "-"
    return uids.pop()[:8] if len(uids) == 1 else "DIFFERS"


def shown_cause(row, manager_names):
    """The first cause the hub shows for the member, of the first manager that shows one (``-`` when none does)."""
    for name in manager_names:
        cause = first((row.get(name) or {}).get("diagnosis"))
        if cause:
            return cause["cause"]
    return "-"


def table(rows, manager_names):
    """Fixed-width lines: member, in inventory, then per manager its state, health and last contact age, then labels."""
    width = max([NAME_WIDTH] + [len(row["name"]) for row in rows])
    header = ["%-*s %-4s" % (width, "MEMBER", "INV")]
    for name in manager_names:
        header.append("%-14s %-7s %-9s" % (name.upper(), "HEALTHY", "CONTACT"))
    locked = any(row.get("lock") for row in rows)
    lines = [" | ".join(header + ["%-8s" % "CLUSTER", "%-16s" % "CAUSE", "LABELS"] + (["BEING CHANGED BY"] if locked else []))]
    for row in rows:
        cells = ["%-*s %-4s" % (width, row["name"], "yes" if row["in_inventory"] else "no")]
        for name in manager_names:
            status = row.get(name)
            if status is None:
                cells.append("%-14s %-7s %-9s" % ("absent", "-", "-"))
            else:
                cells.append("%-14s %-7s %-9s" % (status.get("state") or "-", _yes_no(status.get("healthy")),
                                                  _age_text(status.get("last_contact_age_seconds"))))
        lock = row.get("lock")
        changing = ["%s (run %s, until %s)" % (lock["by"], lock["holder"], lock["expires"]) if lock else "-"] if locked else []
        lines.append(" | ".join(cells + ["%-8s" % shown_cluster(row, manager_names), "%-16s" % shown_cause(row, manager_names),
                                         shown_labels(row, manager_names)] + changing))
    return lines


class FleetStatus:
    """Read each chosen manager's members from the hub once and lay them out."""

    def __init__(self, module):
        self.module = module
        self.params = module.params
        self.backends = [registry.manager(name).name for name in dict.fromkeys(self.params.get("backends") or [])]

    def rows_of(self, name):
        manager = registry.manager(name)
        hub = self.module.kube()
        found = manager.read_hub(hub, namespace=self.params.get("fleet_namespace"),
                                 label_selector=self.params.get("label_selector"))
        rows = {}
        for member, obj in found.items():
            rows[member] = dict(member_row(manager, manager.hub_view(obj), self.params.get("stale_after")), identity=recorded_identity(obj))
        self.add_columns(manager, hub, found, rows)
        return rows

    def add_columns(self, manager, hub, found, rows):
        """The manager's own columns of its members' rows (``FleetManager.status_columns``), each ``warning`` a column
        carries warned of."""
        for member, columns in manager.status_columns(hub, found).items():
            rows[member].update(columns)
            for column in columns.values():
                if isinstance(column, dict) and column.get("warning"):
                    self.module.warn("%s member %s: %s" % (manager.title, member, column["warning"]))

    def run(self):
        views = dict((name, self.rows_of(name)) for name in self.backends)
        rows = merge_rows(views, self.params.get("inventory_names"), live_locks(self.module.kube(), self.params["lock_namespace"]))
        return {"changed": False, "rows": rows, "table": table(rows, self.backends),
                "members": dict((row["name"], row) for row in rows)}
