"""Nested containers of leaves: one walker for a call's arguments and results.

A tree is tuples, lists, dicts and namedtuples, to any depth, over leaves; a
caller says what a leaf is, and may give a leaf a spec of its own (a Python
int that the call passes as a size, apart from the arrays). `flatten` gives
the leaves in order and a hashable spec of everything else (a container's
kind and, for a dict, its keys; for a value that is neither, what `other`
makes of it); `unflatten` puts leaves back into a spec; `map_leaves`
replaces each leaf.
"""
from __future__ import annotations


def _kind(x):
    t = type(x)
    if t is tuple:
        return "tuple"
    if t is list:
        return "list"
    if t is dict:
        return "dict"
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return "namedtuple"
    return None


LEAF = ("leaf",)


def flatten(x, is_leaf, other, convert=None):
    """(leaves, spec). `is_leaf(x)` is falsy for a value that is not a leaf,
    True for a plain leaf, or the leaf's own spec (a tuple starting with
    "leaf"), whose value `convert` turns into the leaf. `other(x)` is the spec
    of a value that is neither a leaf nor a container (it may raise to refuse
    it)."""
    leaves = []
    return leaves, _walk(x, leaves, is_leaf, other, convert)


# The walkers recurse as module functions, not as closures over themselves: a
# closure that names itself is a reference cycle, which would hold a call's
# arrays (its leaves) until the cyclic collector ran.
def _walk(x, leaves, is_leaf, other, convert):
    leaf = is_leaf(x)
    if leaf is True:
        leaves.append(x)
        return LEAF
    if leaf:
        leaves.append(convert(x) if convert else x)
        return leaf
    kind = _kind(x)
    if kind is None:
        return ("other", other(x))
    if kind == "dict":
        return ("dict", tuple((k, _walk(v, leaves, is_leaf, other, convert)) for k, v in x.items()))
    if kind == "namedtuple":
        return ("namedtuple", type(x), tuple(_walk(e, leaves, is_leaf, other, convert) for e in x))
    return (kind, tuple(_walk(e, leaves, is_leaf, other, convert) for e in x))


def unflatten(spec, leaves, value_of=lambda v: v):
    """The tree of `spec` over `leaves` (an iterable, consumed in order);
    `value_of` turns an "other" spec entry back into its value."""
    return _build(spec, iter(leaves), value_of)


def _build(spec, it, value_of):
    kind = spec[0]
    if kind == "leaf":  # its own spec too
        return next(it)
    if kind == "other":
        return value_of(spec[1])
    if kind == "tuple":
        return tuple(_build(s, it, value_of) for s in spec[1])
    if kind == "list":
        return [_build(s, it, value_of) for s in spec[1]]
    if kind == "dict":
        return {k: _build(s, it, value_of) for k, s in spec[1]}
    if kind == "namedtuple":
        return spec[1](*(_build(s, it, value_of) for s in spec[2]))
    raise AssertionError(spec)


def map_leaves(fn, x, is_leaf):
    """x with each leaf replaced by fn(leaf); other values as they are."""
    if is_leaf(x):
        return fn(x)
    kind = _kind(x)
    if kind is None:
        return x
    if kind == "dict":
        return {k: map_leaves(fn, v, is_leaf) for k, v in x.items()}
    if kind == "namedtuple":
        return type(x)(*(map_leaves(fn, e, is_leaf) for e in x))
    return type(x)(map_leaves(fn, e, is_leaf) for e in x)
