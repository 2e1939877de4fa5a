"""The collection as ansible-galaxy builds and installs it (tests/modrun.py installs it from the tarball)."""

import json
import subprocess

from modrun import INSTALLED, REPO, collections_root

SHIPPED = ("plugins", "roles", "playbooks", "meta", "docs", "changelogs")
NOT_SHIPPED = ("lab", "tests", "bench", "hack", ".ci", ".lab", ".venv", ".cache", ".git", "Makefile",
               "requirements-dev.txt", "extensions/molecule")


def tracked(prefix):
    out = subprocess.run(["git", "ls-files", "--", prefix], cwd=str(REPO), capture_output=True, text=True, check=True).stdout
    return set(out.split())


def test_installed_copy_is_a_real_install_not_a_link():
    collections_root()
    assert not INSTALLED.is_symlink(), "the tests must use the installed tarball, not a link to the checkout"
    manifest = json.loads((INSTALLED / "MANIFEST.json").read_text())
    assert manifest["collection_info"]["namespace"] == "fleetops" and manifest["collection_info"]["name"] == "registration"


def test_every_tracked_plugin_role_and_playbook_is_installed():
    collections_root()
    files = set(f["name"] for f in json.loads((INSTALLED / "FILES.json").read_text())["files"] if f["ftype"] == "file")
    for prefix in SHIPPED:
        missing = sorted(p for p in tracked(prefix) if p not in files and "__pycache__" not in p)
        assert not missing, "build_ignore drops files users need: %s" % missing[:10]


def test_development_files_stay_out_and_the_tarball_is_small():
    collections_root()
    files = [f["name"] for f in json.loads((INSTALLED / "FILES.json").read_text())["files"]]
    leaked = sorted(f for f in files if any(f == p or f.startswith(p + "/") for p in NOT_SHIPPED))
    assert not leaked, "galaxy.yml build_ignore lets development files into the collection: %s" % leaked[:10]
    tarballs = list((REPO / ".cache" / "dist").glob("fleetops-registration-*.tar.gz"))
    assert len(tarballs) == 1
    assert tarballs[0].stat().st_size < 512 * 1024, "the collection tarball grew to %d bytes" % tarballs[0].stat().st_size


def test_test_modules_have_unique_basenames():
    # pytest imports test modules by basename (rootdir-relative, no packages): two of one name stop the whole run at
    # collection, as CI #2 and CI #10 of issue 19 found.
    names = sorted(path.name for path in (REPO / "tests").rglob("test_*.py") if "output" not in path.parts)
    assert sorted(set(names)) == names, [name for name in set(names) if names.count(name) > 1]
