"""The collection's documented surface as a first release presents it: every version_added is the collection's own
version (no release before it exists), and the filters only the roles and playbooks use say they are internal."""

import pathlib
import re

import yaml

REPO = pathlib.Path(__file__).resolve().parents[2]
VERSION = yaml.safe_load((REPO / "galaxy.yml").read_text())["version"]
PUBLIC_FILTERS = {"cluster_specs", "survey_labels"}
INTERNAL = "(internal)"


def _filter_docs():
    return {path.stem: yaml.safe_load(path.read_text())["DOCUMENTATION"] for path in sorted((REPO / "plugins" / "filter").glob("*.yml"))}


def test_every_version_added_is_the_collection_version():
    wrong = []
    for path in sorted((REPO / "plugins").rglob("*")) + sorted((REPO / "roles").rglob("argument_specs.yml")):
        if path.is_file() and path.suffix in (".py", ".yml"):
            wrong += ["%s: %s" % (path.relative_to(REPO), found)
                      for found in re.findall(r"version_added: *['\"]?([0-9.]+)", path.read_text()) if found != VERSION]
    assert not wrong, "version_added other than %s: %s" % (VERSION, wrong)


def test_filters_only_the_roles_use_say_they_are_internal():
    docs = _filter_docs()
    assert PUBLIC_FILTERS <= set(docs)
    for name, doc in docs.items():
        marked = doc["short_description"].startswith(INTERNAL) and "not part of the public API" in " ".join(doc["description"])
        assert marked == (name not in PUBLIC_FILTERS), name


def test_user_docs_use_no_internal_filter():
    internal = [name for name in _filter_docs() if name not in PUBLIC_FILTERS]
    texts = [REPO / "README.md"] + sorted((REPO / "docs").glob("*.md")) + sorted((REPO / "plugins" / "modules").glob("*.py"))
    used = ["%s: %s" % (path.name, name) for path in texts for name in internal
            if re.search(r"fleetops\.registration\.%s\b" % name, path.read_text())]
    assert not used, "user-facing docs show internal filters: %s" % used
