"""The README's quick-start inventories, read as users copy them (tests/unit/test_readme.py checks them all;
tests/integration/test_playbooks.py joins a lab member with one of them)."""

import re
import shlex

import yaml

from modrun import REPO

README = REPO / "README.md"
QUICK_STARTS = ("Rancher Fleet only", "KubeFleet only", "Both on one hub", "From AWX")


def readme_quick_starts(text=None):
    """{quick start title: its inventory, as parsed YAML} for each '### <title>' section of the README's quick starts."""
    text = README.read_text() if text is None else text
    found = {}
    for title in QUICK_STARTS:
        match = re.search(r"^### %s\n(.*?)(?=^##)" % re.escape(title), text, re.M | re.S)
        assert match, "README.md has no section '### %s'" % title
        blocks = re.findall(r"^```yaml\n(.*?)^```", match.group(1), re.M | re.S)
        assert len(blocks) == 1, "'### %s' must show exactly one inventory (a yaml block), not %d" % (title, len(blocks))
        found[title] = yaml.safe_load(blocks[0])
    return found


def readme_quick_start_commands(text=None):
    """The commands the README's quick starts have users run, in the README's order: each as (argv, comment), from
    the one ```sh block of '## Quick starts on your own clusters' (the comment says what the line is for)."""
    text = README.read_text() if text is None else text
    match = re.search(r"^## Quick starts on your own clusters\n(.*?)(?=^### )", text, re.M | re.S)
    assert match, "README.md has no section '## Quick starts on your own clusters' before its first quick start"
    blocks = re.findall(r"^```sh\n(.*?)^```", match.group(1), re.M | re.S)
    assert len(blocks) == 1, "the quick starts' introduction must show exactly one sh block, not %d" % len(blocks)
    commands = []
    for line in blocks[0].splitlines():
        command, _sep, comment = line.partition("#")
        if command.strip():
            commands.append((shlex.split(command), comment.strip()))
    return commands
