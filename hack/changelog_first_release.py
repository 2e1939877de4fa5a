"""Prepare a staged copy of changelogs/ for the release notes of the collection's first release.

The fragments record the development of a collection that has not been released yet. Until changelogs/changelog.yaml
holds a release, the entries that describe a change against an earlier release - breaking changes, deprecations,
removals, bug and security fixes - describe versions no user ever had, so the first release's notes leave them out:
they are moved to the trivial section, which antsibull-changelog keeps out of CHANGELOG.rst. What the release offers
is said by the release summary (changelogs/fragments/0.1.0.yml), the major and minor changes and the new plugins.
Once a release is recorded, this does nothing and every section shows. Only the staged copy is changed (its
directory is the argument); the fragments in the checkout stay as the developers wrote them.
"""

import pathlib
import sys

import yaml

AGAINST_EARLIER = ("breaking_changes", "deprecated_features", "removed_features", "bugfixes", "security_fixes")


def first_release(changelogs):
    changes = yaml.safe_load((changelogs / "changelog.yaml").read_text()) or {}
    return not changes.get("releases")


def fold(fragment):
    """The fragment with its entries against an earlier release moved to ``trivial``; how many were moved."""
    moved = []
    for section in AGAINST_EARLIER:
        entries = fragment.pop(section, None)
        if entries:
            moved += entries if isinstance(entries, list) else [entries]
    if moved:
        fragment["trivial"] = list(fragment.get("trivial") or []) + moved
    return fragment, len(moved)


def main(stage):
    changelogs = pathlib.Path(stage) / "changelogs"
    if not first_release(changelogs):
        return 0
    total = 0
    for path in sorted((changelogs / "fragments").glob("*.y*ml")):
        fragment, moved = fold(yaml.safe_load(path.read_text()) or {})
        if moved:
            path.write_text(yaml.safe_dump(fragment, sort_keys=False, width=1000))
            total += moved
    if total:
        print("first release: %d entries against earlier (unreleased) versions left out of the release notes" % total)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
