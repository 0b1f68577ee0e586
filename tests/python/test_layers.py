"""The package's floors, checked as the C++ layers are (tests/layers):
no module imports one on a floor above its own, no two modules import each
other through any chain, and no module uses another's private names.

From the bottom (docs/python.md, The package):
    0  the extension and the one tree walker      _shapejit, _pytree
    1  the tracing values and the trace           _trace/
    2  NumPy's table, by family                   _np/
    3  indexing, and the ndarray interface        _indexing, _writes, _scatters, _methods
    4  the runtime boundary                       _runtime/
    5  the API                                    _jit, _frozen, _coverage, _functions, __init__
"""
import ast
import pathlib

import shapejit

PACKAGE = pathlib.Path(shapejit.__file__).resolve().parent
FLOORS = {"_shapejit": 0, "_pytree": 0, "_trace": 1, "_np": 2, "_indexing": 3, "_writes": 3, "_scatters": 3, "_methods": 3, "_runtime": 4,
          "_jit": 5, "_frozen": 5, "_coverage": 5, "_functions": 5, "__init__": 5}


def _modules():
    """{dotted name under the package: its syntax tree}, for every module of it."""
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
        name = ".".join(parts)
        out[name] = (ast.parse(path.read_text(), str(path)), parts[-1] == "__init__")
    return out


MODULES = _modules()


def _floor(name):
    return FLOORS[name.split(".")[0]]


def _resolve(module, is_package, node):
    """The package module an ImportFrom names (None: outside the package)."""
    if node.level == 0:
        if node.module and node.module.split(".")[0] == "shapejit":
            return node.module.split(".", 1)[1] if "." in node.module else "__init__"
        return None
    base = module.split(".")
    base = base if is_package else base[:-1]
    base = base[:len(base) - (node.level - 1)] if node.level > 1 else base
    base = [b for b in base if b != "__init__"]
    target = ".".join(base + (node.module.split(".") if node.module else []))
    return target or "__init__"


def _imports(module, tree, is_package):
    """(line, module imported, names taken from it) for each import of a package module."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            target = _resolve(module, is_package, node)
            if target is None:
                continue
            for alias in node.names:
                sub = f"{target}.{alias.name}" if target != "__init__" else alias.name
                if sub in MODULES or f"{sub}.__init__" in MODULES or alias.name == "_shapejit":
                    yield node.lineno, sub, None  # a module of the package, imported as a name
                else:
                    yield node.lineno, target, alias.name
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "shapejit":
                    yield node.lineno, alias.name.split(".", 1)[1] if "." in alias.name else "__init__", None


def _known(target):
    if target in MODULES or target == "_shapejit":
        return target
    if f"{target}.__init__" in MODULES:
        return f"{target}.__init__"
    raise AssertionError(f"an import of shapejit.{target}, which is no module of the package")


def test_every_module_has_a_floor():
    assert sorted({m.split(".")[0] for m in MODULES} - set(FLOORS)) == []


def test_no_module_imports_one_above_its_floor():
    wrong = []
    for module, (tree, is_package) in MODULES.items():
        for line, target, _ in _imports(module, tree, is_package):
            target = _known(target)
            if _floor(target) > _floor(module):
                wrong.append(f"{module}:{line} imports {target} (floor {_floor(target)} over {_floor(module)})")
    assert not wrong, "\n".join(wrong)


def test_no_import_circle():
    graph = {m: set() for m in MODULES}
    for module, (tree, is_package) in MODULES.items():
        for _, target, _ in _imports(module, tree, is_package):
            target = _known(target)
            if target in graph and target != module:
                graph[module].add(target)
    # A package's __init__ runs before its modules; its own imports of them are not a circle.
    state, circles = {}, []

    def visit(m, path):
        state[m] = "open"
        for t in sorted(graph[m]):
            if t.endswith("__init__") and m.startswith(t.rsplit(".", 1)[0] + "."):
                continue
            if state.get(t) == "open":
                circles.append(" -> ".join(path[path.index(t):] + [t]))
            elif t not in state:
                visit(t, path + [t])
        state[m] = "done"
    for m in sorted(graph):
        if m not in state:
            visit(m, [m])
    assert not circles, "\n".join(circles)


def test_no_module_uses_another_modules_private_names():
    wrong = []
    for module, (tree, is_package) in MODULES.items():
        aliases = {}  # a name bound to a package module -> that module
        for line, target, name in _imports(module, tree, is_package):
            if name is not None and name.startswith("_"):
                wrong.append(f"{module}:{line} imports {name} from {target}")
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and _resolve(module, is_package, node) is not None:
                for alias in node.names:
                    aliases[alias.asname or alias.name] = alias.name
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases
                    and node.attr.startswith("_") and not node.attr.startswith("__") and aliases[node.value.id] != "_shapejit"):
                wrong.append(f"{module}:{node.lineno} uses {node.value.id}.{node.attr}")
    assert not wrong, "\n".join(wrong)


def test_one_registry_entry_per_numpy_callable():
    """The table holds one implementation for each NumPy callable (a second
    registration is an error at import, which this import would have met)."""
    from shapejit._np import registry
    for table in (registry.UFUNCS, registry.FUNCTIONS):
        assert len({id(k) for k in table}) == len(table)
    import numpy as np
    assert registry.UFUNCS[np.floor].__module__ == "shapejit._np.elementwise"
    assert registry.UFUNCS[np.reciprocal].__module__ == "shapejit._np.elementwise"
