"""One argument-spec convention: every module's own options come from its module-level ``argument_spec()``, merged in
``main()`` with the shared fragments of ``module_utils/argspec.py`` (what ansible-doc shows and validate-modules checks
is then one function per module)."""

import ast
from pathlib import Path

import pytest

PLUGINS = Path(__file__).resolve().parents[2] / "plugins"
# Modules that are an action plugin's documentation only (the plugin checks its own arguments) are left out.
MODULES = sorted(path for path in (PLUGINS / "modules").glob("*.py") if not (PLUGINS / "action" / path.name).exists())


def _functions(tree):
    return dict((node.name, node) for node in tree.body if isinstance(node, ast.FunctionDef))


@pytest.mark.parametrize("path", MODULES, ids=[path.stem for path in MODULES])
def test_a_module_takes_its_own_options_from_argument_spec_and_the_rest_from_fragments(path):
    functions = _functions(ast.parse(path.read_text()))
    assert "argument_spec" in functions, "%s has no module-level argument_spec()" % path.name
    calls = [node for node in ast.walk(functions["main"]) if isinstance(node, ast.Call)
             and getattr(node.func, "id", None) == "merge"]
    assert len(calls) == 1, "%s: main() builds its spec with one argspec.merge(...)" % path.name
    fragments, own = calls[0].args[:-1], calls[0].args[-1]
    assert all(isinstance(arg, ast.Name) and arg.id.isupper() for arg in fragments), "%s: merge() takes fragments first" % path.name
    assert isinstance(own, ast.Call) and getattr(own.func, "id", None) == "argument_spec", \
        "%s: merge()'s last argument must be argument_spec(), not options written inline" % path.name
