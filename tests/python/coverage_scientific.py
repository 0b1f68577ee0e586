"""The coverage test's cases for the scientific list (shapejit.coverage()
["scientific"]), the ufuncs' methods and the ndarray's later entries; they
register in coverage_support.RECIPES when test_coverage.py imports this."""
import numpy as np

from coverage_support import BOOLS, F32, F64, FLOATS, I32, I64, INTS, M, M32, RECIPES, X3, arr


# -- the scientific list (shapejit.coverage()["scientific"]) and the ndarray's
# in-place operators: NumPy's own answers on empty, one-element, strided and
# integer inputs, NaNs and infinities where a function treats them apart.
ODD = np.array([-3.5, -0.0, 0.0, 2.25, np.inf, -np.inf, np.nan])
NANS = np.array([[np.nan, 1.0, 2.0], [np.nan, np.nan, np.nan], [3.0, np.nan, -1.0]])
SQ = arr((3, 3), F64)
IA, IB = arr((6,), I32), np.array([2, -2, 3, 1, 5, -1], np.int32)
VEC3 = arr((4, 3), F64)
XP, FP = np.array([0.0, 1.0, 2.5, 4.0]), np.array([1.0, 3.0, 2.0, 0.0])
XI = np.array([-1.0, 0.0, 0.5, 1.0, 2.5, 3.0, 4.0, 5.0, np.nan])
for _n, _cases in {
    "fmod": [(lambda a: np.fmod(a, 1.5), (ODD,)), (lambda a, b: np.fmod(a, b), (IA, IB)), (lambda a: np.fmod(a, -2), (INTS[1],))],
    "divmod": [(lambda a, b: np.divmod(a, b), (IA, IB)), (lambda a: np.divmod(a, 2.0), (ODD,))],
    "modf": [(lambda a: np.modf(a), (ODD,)), (lambda a: np.modf(a), (IA,)), (lambda a: np.modf(a), (FLOATS[2],))],
    "heaviside": [(lambda a: np.heaviside(a, 0.5), (ODD,)), (lambda a: np.heaviside(a, 0.5), (IA,))],
    "ldexp": [(lambda a, e: np.ldexp(a, e), (np.array([1.0, 3.0, 1e-300, 5.0]), np.array([2, -3, 1100, 0]))),
              (lambda a, e: np.ldexp(a, e), (arr((3,), F32), np.array([1, 2, 3], np.int32)))],
    "sinc": [(lambda a: np.sinc(a), (np.array([0.0, 0.5, -1.25, 3.0]),)), (lambda a: np.sinc(a), (FLOATS[0],))],
    "isneginf": [(lambda a: np.isneginf(a), (ODD,)), (lambda a: np.isneginf(a), (IA,))],
    "isposinf": [(lambda a: np.isposinf(a), (ODD,)), (lambda a: np.isposinf(a), (IA,))],
    "isreal": [(lambda a: np.isreal(a), (ODD,))], "iscomplex": [(lambda a: np.iscomplex(a), (IA,))],
    "isrealobj": [(lambda a: a * np.isrealobj(a), (ODD,))], "iscomplexobj": [(lambda a: a + np.iscomplexobj(a), (IA,))],
    "angle": [(lambda a: np.angle(a), (ODD,)), (lambda a: np.angle(a, deg=True), (IA,)), (lambda a: np.angle(a), (FLOATS[0],))],
    "bitwise_not": [(lambda a: np.bitwise_not(a), (IA,)), (lambda a: np.bitwise_not(a), (BOOLS[0],))],
    "invert": [(lambda a: np.invert(a), (INTS[1],))],
    "left_shift": [(lambda a: np.left_shift(a, 3), (IA,)), (lambda a, b: np.left_shift(a, np.abs(b)), (IA, IB))],
    "right_shift": [(lambda a: np.right_shift(a, 1), (IA,))],
    "append": [(lambda a: np.append(a, [1.0, 2.0]), (M,)), (lambda a: np.append(a, a[:1], axis=0), (M,)), (lambda a: np.append(a, a), (FLOATS[2],))],
    "insert": [(lambda a: np.insert(a, 2, 7.5), (M,)), (lambda a: np.insert(a, 1, 9, axis=1), (M,)), (lambda a: np.insert(a, -1, 0), (IA,)),
               (lambda a: np.insert(a, 3, a[0], axis=0), (M,))],
    "delete": [(lambda a: np.delete(a, 3), (M,)), (lambda a: np.delete(a, -1, axis=1), (M,))],
    "resize": [(lambda a: np.resize(a, (5, 3)), (M,)), (lambda a: np.resize(a, (2, 2)), (FLOATS[2],)), (lambda a: np.resize(a, (0,)), (M,))],
    "rot90": [(lambda a, k=k: np.rot90(a, k), (M,)) for k in range(-1, 5)] + [(lambda a: np.rot90(a[None], 1, axes=(1, 2)), (M,))],
    "block": [(lambda a: np.block([[a, a], [a, a]]), (M,)), (lambda a: np.block([a[0], a[1]]), (M,)), (lambda a: np.block([[a, a[:, :1]]]), (M,))],
    "kron": [(lambda a: np.kron(a[:2, :2], a[:2, :3]), (M,)), (lambda a: np.kron(a[0], a[1]), (M,)), (lambda a, i: np.kron(a[0], i), (M, IA))],
    "ediff1d": [(lambda a: np.ediff1d(a), (M,)), (lambda a: np.ediff1d(a, to_end=[1, 2], to_begin=-1), (M,)), (lambda a: np.ediff1d(a), (IA,))],
    "diagflat": [(lambda a: np.diagflat(a[:2, :2], 1), (M,)), (lambda a: np.diagflat(a, -1), (IA,))],
    "indices": [(lambda a: np.indices(a.shape), (M,)), (lambda a: np.indices(a.shape, sparse=True), (M,))],
    "ix_": [(lambda a: a[np.ix_([0, 2], [1, 3])], (M,)), (lambda a, b: np.ix_(b[0], [1, 0]), (M, BOOLS[0]))],
    "tril_indices": [(lambda a: a[np.tril_indices(a.shape[0])], (SQ,)), (lambda a: np.tril_indices(a.shape[0], -1, a.shape[1]), (M,))],
    "triu_indices": [(lambda a: np.triu_indices(a.shape[0], 1, a.shape[1]), (M,))],
    "diag_indices": [(lambda a: a[np.diag_indices(a.shape[0])], (SQ,))],
    "tril_indices_from": [(lambda a: a[np.tril_indices_from(a, 1)], (M,))], "triu_indices_from": [(lambda a: np.triu_indices_from(a), (M,))],
    "diag_indices_from": [(lambda a: np.diag_indices_from(a), (SQ,))],
    "size": [(lambda a: a.reshape(-1)[: np.size(a) - 3] * np.size(a, 1), (M,))],
    "select": [(lambda a: np.select([a > 1, a < -1], [a * 2, -a], 0), (M,)), (lambda a: np.select([a > 0], [a]), (M32,)),
               (lambda i: np.select([i > 2], [i], default=0.5), (IA,))],
    "isin": [(lambda a: np.isin(np.round(a), [1.0, 2.0, -1.0]), (M,)), (lambda a, i: np.isin(a, i, invert=True), (IA, IB)),
             (lambda a: np.isin(a, a[::-1]), (ODD,))],
    "copyto": [(lambda a, b: (np.copyto(a, b), a)[1], (M.copy(), arr((6,), F64))), (lambda a, b: (np.copyto(a, b, where=b > 0), a)[1], (M.copy(), M * 2)),
               (lambda a, b: (np.copyto(a, b, casting="unsafe"), a)[1], (IA.copy(), arr((6,), F64)))],
    "copy": [(lambda a: np.copy(a) + 1, (x,)) for x in FLOATS], "asanyarray": [(lambda a: np.asanyarray(a) * 2, (M,))],
    "ascontiguousarray": [(lambda a: np.ascontiguousarray(a.T) * 2, (M,)), (lambda a: np.ascontiguousarray(a.sum()), (M,))],
    "asfortranarray": [(lambda a: np.asfortranarray(a) * 2, (M,)), (lambda a: np.asfortranarray(a.sum()), (M,))],
    "geomspace": [(lambda a: np.geomspace(1, 1000, a.shape[0]) * a[:, 0], (M,)), (lambda a: np.geomspace(-2, -0.5, a.shape[1], endpoint=False) + a, (M,)),
                  (lambda a: np.geomspace(3.0, 3.0, a.shape[0] - a.shape[0] + 1) * a, (M,))],
    "logspace": [(lambda a: np.logspace(0, 2, a.shape[0]) * a[:, 0], (M,)), (lambda a: np.logspace(1, 3, a.shape[1], base=2.0, endpoint=False) + a, (M,))],
    "nanprod": [(lambda a: np.nanprod(a), (NANS,)), (lambda a: np.nanprod(a, axis=1), (NANS,)), (lambda a: np.nanprod(a, axis=0), (INTS[0],))],
    "nancumsum": [(lambda a: np.nancumsum(a), (NANS,)), (lambda a: np.nancumsum(a, axis=1), (NANS,))],
    "nancumprod": [(lambda a: np.nancumprod(a, axis=0), (NANS,)), (lambda a: np.nancumprod(a), (IA,))],
    "nanvar": [(lambda a: np.nanvar(a, axis=1), (NANS,)), (lambda a: np.nanvar(a, axis=1, ddof=1), (NANS,)), (lambda a: np.nanvar(a, axis=0), (M32,))],
    "nanstd": [(lambda a: np.nanstd(a), (NANS,)), (lambda a: np.nanstd(a, axis=0, keepdims=True), (NANS,))],
    "nanmedian": [(lambda a: np.nanmedian(a, axis=1), (NANS,)), (lambda a: np.nanmedian(a), (NANS,)), (lambda a: np.nanmedian(a, axis=0), (M,)),
                  (lambda a: np.nanmedian(a, axis=0, keepdims=True), (NANS,)), (lambda a: np.nanmedian(a), (IA,))],
    "quantile": [(lambda a, q=q: np.quantile(a, q), (M,)) for q in (0.3, 0.5, 1.0, 0.0, [0.1, 0.9])] +
                [(lambda a: np.quantile(a, 0.3, axis=1), (M32,)), (lambda a: np.quantile(a, 0.5, axis=1), (NANS,)),
                 (lambda a: np.quantile(a, [0.3], axis=0, keepdims=True), (M,)), (lambda a: np.quantile(a, 0.3), (IA,))],
    "percentile": [(lambda a: np.percentile(a, [25, 50, 75], axis=0), (M,)), (lambda a: np.percentile(a, 40), (M32,))],
    "nanquantile": [(lambda a, q=q: np.nanquantile(a, q, axis=1), (NANS.astype(F32),)) for q in (0.3, [0.3, 0.6], 0.0, 1.0)] +
                   [(lambda a: np.nanquantile(a, 0.3), (NANS,))],
    "nanpercentile": [(lambda a: np.nanpercentile(a, 30), (NANS,)), (lambda a: np.nanpercentile(a, [30, 90], axis=0, keepdims=True), (NANS,))],
    "cov": [(lambda a: np.cov(a), (M,)), (lambda a: np.cov(a, rowvar=False), (M32,)), (lambda a: np.cov(a[0]), (M,)),
            (lambda a: np.cov(a[0], a[1]), (M,)), (lambda a: np.cov(a, bias=True), (M,)), (lambda i: np.cov(i), (IA,))],
    "corrcoef": [(lambda a: np.corrcoef(a), (M,)), (lambda a: np.corrcoef(a[0]), (M,)), (lambda a: np.corrcoef(a[0], a[1]), (M,))],
    "trapezoid": [(lambda a: np.trapezoid(a), (M,)), (lambda a: np.trapezoid(a, a[0], axis=1), (M,)), (lambda a: np.trapezoid(a, dx=0.5, axis=0), (M32,))],
    "cross": [(lambda a, b: np.cross(a, b), (VEC3, VEC3[::-1])), (lambda a: np.cross(a[:3].T, a[1:].T, axis=0), (VEC3,))],
    "polyval": [(lambda p, x: np.polyval(p, x), (np.array([1.0, -2.0, 3.0]), M)), (lambda p, x: np.polyval(p, x), (np.array([2, 1]), IA)),
                (lambda x: np.polyval([1, 2, 3], x), (M32,))],
    "polyder": [(lambda p: np.polyder(p), (M[0],)), (lambda p: np.polyder(p, 2), (IA,)), (lambda p: np.polyder(p, 0), (M[0],))],
    "polyadd": [(lambda a, b: np.polyadd(a, b), (M[0], M[1, :2])), (lambda a, b: np.polyadd(a, b), (IA, IB))],
    "polysub": [(lambda a, b: np.polysub(a[:2], b), (M[0], M[1]))],
    "correlate": [(lambda a, v: np.correlate(a, v), (M[0], M[1, :3])), (lambda a, v: np.correlate(a, v, "full"), (M[0, :2], M[1])),
                  (lambda a, v: np.correlate(a, v, "same"), (M[0], M[1, :2]))],
    "interp": [(lambda x, a, b: np.interp(x, a, b), (XI, XP, FP)), (lambda x, a, b: np.interp(x, a, b, left=-9, right=9), (XI, XP, FP)),
               (lambda x, a, b: np.interp(x, a[:1], b[:1]), (XI, XP, FP)), (lambda x, a, b: np.interp(x, a, b), (XI, XP, np.array([1.0, np.inf, 2.0, 0.0]))),
               (lambda x, a, b: np.interp(x, a, b), (XI.astype(F32), XP, FP))],
    "gradient": [(lambda a: np.gradient(a), (M,)), (lambda a: np.gradient(a[0], 0.5), (M,)), (lambda a: np.gradient(a, axis=1), (M32,)),
                 (lambda i: np.gradient(i), (IA,)), (lambda a: np.gradient(a, 2.0, 0.5), (M,))],
    "matvec": [(lambda a, v: np.matvec(a, v), (X3, X3[0, 0])), (lambda i: np.matvec(i.reshape(2, 3), i[:3]), (IA,))],
    "vecmat": [(lambda a, v: np.vecmat(v, a), (X3, X3[0, :, 0]))],
    "vander": [(lambda x: np.vander(x), (M[0],)), (lambda x: np.vander(x, 3, increasing=True), (M[0],)), (lambda i: np.vander(i, 4), (IA,)),
               (lambda x: np.vander(x, 0), (M[0],)), (lambda x: np.vander(x > 0), (M[0],))],
    "unwrap": [(lambda p: np.unwrap(p * 5), (M,)), (lambda p: np.unwrap(p * 5, axis=0), (M,)), (lambda p: np.unwrap(p * 5, period=4), (M,)),
               (lambda i: np.unwrap(i * 3, period=6), (IA,))],
    "real_if_close": [(lambda a: np.real_if_close(a) * 2, (M,))],
    "histogram": [(lambda a: np.histogram(a, 5, range=(-2, 2)), (M,)), (lambda a: np.histogram(a, 4, range=(-1, 1), weights=a * 2), (M,)),
                  (lambda a: np.histogram(a, 3, range=(0, 1), density=True), (M,)), (lambda i: np.histogram(i, 3, range=(0, 6)), (IA,)),
                  (lambda a: np.histogram(a, 2, range=(1, 1)), (M,)), (lambda a: np.histogram(a / 0, 3, range=(0, 1)), (M,))],
    "histogram_bin_edges": [(lambda a: np.histogram_bin_edges(a, 4, range=(-3, 3)), (M,))],
    "digitize": [(lambda x: np.digitize(x, [-1, 0, 1]), (M,)), (lambda x: np.digitize(x, np.array([-1.0, 0, 1]), right=True), (M,)),
                 (lambda x: np.digitize(x, [1, 0, -1]), (M,)), (lambda x: np.digitize(x, [1, 0, -1], right=True), (M,))],
    "lexsort": [(lambda a: np.lexsort((a[0], a[1] > 0)), (M,)), (lambda a: np.lexsort(np.round(a[:3])), (M,)), (lambda i: np.lexsort((i, i % 2)), (IA,))],
    "unique": [(lambda a, f=f: np.unique(a, *f), (x,)) for f in [(), (True,), (False, True), (False, False, True), (True, True, True)]
               for x in (np.array([[3.0, 1, np.nan], [2, 1, np.nan]]), np.array([5, 3, 1, 3, 9, 2, 100, 7, 50, 1], np.int32), FLOATS[2], np.ones(1))],
    **{name: (lambda f: [(lambda a: f(a), (x,)) for x in (np.array([[3.0, 1, np.nan], [2, 1, np.nan]]), np.array([5, 3, 1, 3, 9, 2], np.int32),
                                                          FLOATS[2], np.ones(1), np.zeros(0), np.array([[True, False], [True, True]]))])(getattr(np, name))
       for name in ("unique_counts", "unique_inverse", "unique_all")},
    "hanning": [(lambda a, d=d: np.hanning(a.shape[0] - d) * 1.0, (M,)) for d in (0, 3, 4)],
    "hamming": [(lambda a, d=d: np.hamming(a.shape[0] - d) * 1.0, (M,)) for d in (0, 3, 4)],
    "blackman": [(lambda a, d=d: np.blackman(a.shape[0] - d) * 1.0, (M,)) for d in (0, 3, 4)],
    "bartlett": [(lambda a, d=d: np.bartlett(a.shape[0] - d) * 1.0, (M,)) for d in (0, 3, 4)],
    "linalg.matmul": [(lambda a: np.linalg.matmul(a, a.swapaxes(-1, -2)), (X3,))],
    "linalg.outer": [(lambda x: np.linalg.outer(x, x[:3]), (M[0],))],
    "linalg.tensordot": [(lambda a: np.linalg.tensordot(a[0], a[1], axes=([1], [1])), (X3,))],
    "linalg.vecdot": [(lambda a: np.linalg.vecdot(a, a), (X3,))],
    "linalg.vector_norm": [(lambda a: np.linalg.vector_norm(a), (X3,)), (lambda a: np.linalg.vector_norm(a, axis=1, ord=1, keepdims=True), (X3,)),
                           (lambda a: np.linalg.vector_norm(a, keepdims=True), (X3,))],
    "linalg.matrix_norm": [(lambda a: np.linalg.matrix_norm(a), (X3,)), (lambda a: np.linalg.matrix_norm(a, keepdims=True), (X3,))],
    "linalg.matrix_transpose": [(lambda a: np.linalg.matrix_transpose(a), (X3,))],
    "linalg.diagonal": [(lambda a: np.linalg.diagonal(a, offset=1), (X3,))], "linalg.trace": [(lambda a: np.linalg.trace(a), (X3,))],
    "linalg.cross": [(lambda a: np.linalg.cross(a[..., :3], a[..., 1:4]), (X3,))],
    "linalg.matrix_power": [(lambda a, n=n: np.linalg.matrix_power(a, n), (SQ,)) for n in (0, 1, 2, 3, 5, 8)] +
                           [(lambda i: np.linalg.matrix_power(i.reshape(2, 3)[:, :2], 6), (IA,))],
    "cumulative_prod": [(lambda a: np.cumulative_prod(a, axis=1, include_initial=True), (M,)), (lambda i: np.cumulative_prod(i), (IA,))],
}.items():
    RECIPES[_n] = (lambda cases: lambda: cases)(_cases)


def _inplace(op):
    src = f"def f(x, y):\n    x {op} y\n    return x\n"
    scope = {}
    exec(src, scope)  # noqa: S102
    return scope["f"]


for _op, _ins in {"+=": None, "-=": None, "*=": None, "/=": [(arr((3, 4), F64), arr((4,), F64)), (arr((3, 4), F32), 1.5)], "//=": None, "%=": None, "**=": [(arr((3, 4), F64, 0.5, 2), 2.0)],
                  "@=": [(arr((3, 3), F64), arr((3, 3), F64))], "&=": [(arr((3, 4), I64), arr((4,), I64)), (BOOLS[0], BOOLS[0])],
                  "|=": [(arr((3, 4), I64), 6)], "^=": [(arr((3, 4), I32), arr((3, 4), I32))], "<<=": [(arr((4,), I64), 2)],
                  ">>=": [(arr((4,), I64), 1)]}.items():
    _pairs = _ins or [(arr((3, 4), F64), arr((4,), F64)), (arr((3, 4), F32), 1.5), (arr((5,), I64), np.array([2, 1, 3, 1, 2], np.int64))]
    RECIPES[f"x {_op} y"] = (lambda f, pairs: lambda: [(lambda a, b, f=f: f(a.copy(), b), (a, b)) for a, b in pairs])(_inplace(_op), _pairs)
_LEAST = np.iinfo(np.int64).min
_GCD_PAIRS = [(IA, IB), (np.array([_LEAST, _LEAST, _LEAST, 0, -4, 12, 2**40]), np.array([0, _LEAST, 6, 0, 6, -18, 2**40 + 1])),
              (arr((3, 4), I64), arr((4,), I32)), (arr((0, 2), I32), arr((2,), I32))]
RECIPES["gcd"] = lambda: [(lambda a, b: np.gcd(a, b), p) for p in _GCD_PAIRS] + [(lambda a: np.gcd(a, 6), (IA,))]
RECIPES["lcm"] = lambda: [(lambda a, b: np.lcm(a, b), p) for p in _GCD_PAIRS] + [(lambda a: np.lcm(a, -4), (IA,))]
_PARTS = np.array([5e-324, 2.2250738585072014e-308, 1.7976931348623157e308, 0.49999999999999994, 0.9999999999999999, 2**52 + 1.0, -1e-310])
RECIPES["frexp"] = lambda: [(lambda a: np.frexp(a), (x,)) for x in (ODD, _PARTS, _PARTS.astype(np.float32), FLOATS[0], FLOATS[2], INTS[1])]
RECIPES["nextafter"] = lambda: [(lambda a: np.nextafter(a, 0), (ODD,)), (lambda a, b: np.nextafter(a, b), (ODD, ODD[::-1])),
                                (lambda a: np.nextafter(a, np.float32(np.inf)), (FLOATS[0],)), (lambda a: np.nextafter(a, -1), (INTS[1],))]
RECIPES["spacing"] = lambda: [(lambda a: np.spacing(a), (x,)) for x in (ODD, _PARTS, FLOATS[0], FLOATS[2], INTS[1])]
RECIPES["divmod(x, y)"] = lambda: [(lambda a, b: divmod(a, b), (IA, IB)), (lambda a: divmod(a, 1.5), (ODD,))]
RECIPES["x[I, J]"] = lambda: [(lambda a: a[np.array([0, 2, 1]), np.array([1, 3, 0])], (M,)), (lambda a: a[[[0], [2]], [1, 3]], (M,))]
RECIPES["x[I, :, J]"] = lambda: [(lambda a: a[np.array([0, 1]), :, np.array([2, 3])], (X3,))]
RECIPES["x[a:b] = v"] = lambda: [(lambda a: (a.__setitem__(slice(1, 3), 2.5), a)[1], (M.copy(),))]
RECIPES["x[a:b] += v"] = lambda: [(lambda a: (a[1:3].__iadd__(a[0]), a)[1], (M.copy(),))]
RECIPES["x[I, J] = v"] = lambda: [(lambda a: (a.__setitem__((np.array([0, 2, 0]), np.array([1, -1, 1])), a[0, :3] * 2), a)[1], (M.copy(),))]
RECIPES["x[I] += v"] = lambda: [(lambda a: (a[np.array([1, 1, 0])].__iadd__(1.5), a)[1], (M.copy(),)),
                                (lambda a, i: _iadd_at(a, i), (arr((5,), I32), np.array([4, -1, 0])))]
RECIPES["x[I] = v"] = lambda: [(lambda a, i: (a.__setitem__(i, 7.0), a)[1], (M.copy(), np.array([2, 0]))),
                               (lambda a: (a.__setitem__([[0], [1]], a[2]), a)[1], (arr((3, 4), I64),))]
RECIPES["put"] = lambda: [(lambda a, i: (np.put(a, i, [2.5, -1]), a)[1], (arr((3, 4), F64), np.array([0, -1, 5]))),
                          (lambda a, i: (np.put(a, i, a[0] * 2, mode="clip"), a)[1], (arr((2, 3), I64), np.array([[9], [-9]]))),
                          (lambda a, i: (np.put(a, i, 7, mode="wrap"), a)[1], (arr((5,), I32), np.array([6, -8]))),
                          (lambda a, i: (np.put(a, i, 1.0), a)[1], (arr((4,), F32), np.array([], np.int64)))]
RECIPES["putmask"] = lambda: [(lambda a: (np.putmask(a, a > 0, [10.0, 20.0, 30.0]), a)[1], (arr((3, 5), F64),)),
                              (lambda a, m: (np.putmask(a, m, a * 2), a)[1], (arr((2, 6), I64), arr((3, 4), bool))),
                              (lambda a: (np.putmask(a, a < 0, 0), a)[1], (arr((0, 3), F32),))]
RECIPES["unravel_index"] = lambda: [(lambda i, a: np.unravel_index(i, a.shape), (np.array([0, 5, 14]), arr((3, 5)))),
                                    (lambda i, a: np.unravel_index(i, (a.shape[0], 2), order="F"), (np.array([[1], [5]], np.int32), arr((3, 5)))),
                                    (lambda i: np.unravel_index(i, (4, 6)), (np.array([], np.int64),))]
RECIPES["ravel_multi_index"] = lambda: [(lambda i, j, a: np.ravel_multi_index((i, j), a.shape), (np.array([0, 2]), np.array([[4], [1]]), arr((3, 5)))),
                                        (lambda i, j: np.ravel_multi_index((i, j), (4, 3), mode="clip", order="F"), (np.array([9, -1]), np.array([5, 2]))),
                                        (lambda i, j: np.ravel_multi_index((i, j), (4, 3), mode="wrap"), (np.array([9, -1], np.int32), np.array([5, 2])))]
RECIPES["nanargmax"] = lambda: [(lambda a: np.nanargmax(a, axis=1), (NANS[[0, 2]],)), (lambda a: np.nanargmax(a), (M,)),
                                (lambda a: np.nanargmax(a, axis=0, keepdims=True), (arr((4, 3), I64),))]
RECIPES["nanargmin"] = lambda: [(lambda a: np.nanargmin(a, axis=0), (NANS[[0, 2]],)), (lambda a: np.nanargmin(a[:, ::2]), (M32,))]
RECIPES["place"] = lambda: [(lambda a: (np.place(a, a > 0, [10.0, 20.0]), a)[1], (arr((3, 5), F64),)),
                            (lambda a, m: (np.place(a, m, a[:1] * 2), a)[1], (arr((2, 6), I64), arr((3, 4), bool))),
                            (lambda a: (np.place(a, a < 0, [1.5]), a)[1], (arr((0, 3), F32),))]
RECIPES["x.put"] = lambda: [(lambda a, i: (a.put(i, [5, 6]), a)[1], (arr((2, 3), I32), np.array([1, 1, -2])))]
RECIPES["x[::s] = v"] = lambda: [(lambda a: (a.__setitem__(np.s_[::2, ::-3], 0.5), a)[1], (M.copy(),))]


def _iadd_at(a, i):
    a[i] += 3
    return a


def _ufunc_methods():
    pairs = [(arr((3,), F32), arr((2, 2), F32)), (arr((0,), F64), arr((4,), F64)), (arr((2,), I64), 3)]
    for name in ("add", "subtract", "multiply", "divide", "maximum", "equal"):
        u = getattr(np, name)
        RECIPES[f"{name}.outer"] = (lambda u: lambda: [(lambda a, b: u.outer(a, b), p) for p in pairs])(u)
    for name in ("add", "multiply", "maximum", "minimum", "logical_and", "logical_or"):
        u = getattr(np, name)
        RECIPES[f"{name}.reduce"] = (lambda u: lambda: [(lambda x: u.reduce(x), (x,)) for x in (arr((3, 5), F32), arr((4,), I32))] +
                                     [(lambda x: u.reduce(x, axis=1, keepdims=True), (arr((2, 3), F64),)),
                                      (lambda x: u.reduce(x, axis=None), (arr((4, 6), F64)[:, ::2],))])(u)
    for name in ("add", "multiply", "maximum"):
        u = getattr(np, name)
        RECIPES[f"{name}.accumulate"] = (lambda u: lambda: [(lambda x: u.accumulate(x), (x,)) for x in (arr((3, 5), F32), arr((0,), I64))] +
                                         [(lambda x: u.accumulate(x, axis=1), (arr((2, 3), F64),))] +
                                         ([(lambda x: u.accumulate(x), (x,)) for x in (ODD, BOOLS[0], arr((4, 3), I32)[::2])] if u is np.maximum else []))(u)
    RECIPES["add.reduceat"] = lambda: [
        (lambda x, i: np.add.reduceat(x, i), (arr((8,), F64), np.array([0, 4, 1, 5]))),
        (lambda x: np.add.reduceat(x, [0, 2, 2, 3], axis=1), (arr((3, 5), F32),)),
        (lambda x: np.add.reduceat(x, [1, 0]), (arr((3, 4), I32),)),
        (lambda x: np.add.reduceat(x, [0, 1]), (BOOLS[0],)),
        (lambda x: np.add.reduceat(x, [0, 3]), (ODD,)),
        (lambda x, i: np.add.reduceat(x, i), (arr((5,), F64), np.array([], np.int64))),
        (lambda x, i: np.add.reduceat(x, i), (arr((4, 2), F64)[::-1], np.array([3], np.int32)))]
    for name in ("add", "subtract", "multiply", "maximum"):
        u = getattr(np, name)
        RECIPES[f"{name}.at"] = (lambda u: lambda: [
            (lambda a, i: (u.at(a, i, 2.5), a)[1], (arr((5,), F64), np.array([0, 3, 3, -1]))),
            (lambda a, i, b: (u.at(a, (i, i % 2), b), a)[1], (arr((4, 3), F32), np.array([1, 1, 2]), arr((3,), F32))),
            (lambda a, i: (u.at(a, i, 1), a)[1], (arr((3, 2), I32), np.array([[0, 0], [2, 0]]))),
            (lambda a, i: (u.at(a, i, 1), a)[1], (arr((0,), F64), np.array([], np.int64)))] +
            ([(lambda a, i, b: (u.at(a, i, b), a)[1], (np.array([2.0, 2, 2]), np.array([0, 0, 2, 1]), np.array([3, -1, np.nan, 5])))]
             if u in (np.multiply, np.maximum) else []))(u)


_ufunc_methods()
RECIPES["x.real"] = lambda: [(lambda a: a.real * 2, (M,))]
RECIPES["x.imag"] = lambda: [(lambda a: a.imag + a, (M,))]
RECIPES["x.conjugate"] = lambda: [(lambda a: a.conjugate() * 2, (M,))]
RECIPES["x.itemsize"] = lambda: [(lambda a: a * a.itemsize, (M32,))]
RECIPES["x.nbytes"] = lambda: [(lambda a: a * a.nbytes, (M,))]
RECIPES["x.device"] = lambda: [(lambda a: a * (a.device == "cpu"), (M,))]
RECIPES["x.to_device"] = lambda: [(lambda a: a.to_device("cpu") * 2, (M,))]
RECIPES["x.__array_namespace__"] = lambda: [(lambda a: a.__array_namespace__().sum(a, axis=0), (M,))]
