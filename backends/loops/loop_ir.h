// The loop IR: what a graph becomes once it is fused, before any machine
// code. Backends (llvm, cuda) translate it; it knows nothing of either.
//
// A LoopProgram is a list of steps run in order. A loop step is a nest: outer
// loops, split across threads, and inside them a sequence of phases, each an
// inner nest that reduces into accumulators or stores results. A pointwise
// chain is one phase; softmax is three (max, sum of exponentials, store);
// layer_norm three (mean, variance, store). A matmul step calls a BLAS.
//
// Loop bounds and memory offsets are SymExprs. Their symbols are numbered:
//   [0, num_graph_symbols)  the graph's symbols (their values arrive per call);
//   then one per stride of a strided input ("params", read from the DLTensor);
//   then loop variables; then body indices (values a gather loaded).
// A specialized symbol was folded to a constant by shape inference, so a
// static kernel has constant trip counts and offsets.
#pragma once

#include <dlpack/dlpack.h>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/ir/graph.h"
#include "core/sym/expr.h"

namespace shapejit::backends::loops {

struct Buffer {
  // kScratch: a buffer of one task of an attention step (its score tile,
  // its rows' softmax state), placed by the kernel per task.
  enum class Kind : uint8_t { kInput, kOutput, kTemp, kScratch };
  Kind kind;
  int index;  // input, output or temp number
  ir::DType dtype;
  std::vector<sym::Expr> shape;
  std::vector<sym::Expr> strides;  // in elements
};

enum class InstKind : uint8_t {
  kLoad,        // buffer[offset]
  kConst,       // a scalar of `dtype`
  kIndex,       // the integer `expr` converted to `dtype`
  kOp,          // a pointwise graph op on `args`
  kAcc,         // accumulator `acc` of an earlier phase (part 1: argmax's index)
  kCheckIndex,  // args[0] as an index into [0, expr): binds body symbol `symbol`; out of range is an error
};

struct Inst {
  Inst(InstKind k, ir::DType t) : kind(k), dtype(t) {}
  InstKind kind;
  ir::DType dtype;  // the result's
  ir::Op op = ir::Op::kAdd;
  bool approximate_tanh = false;  // gelu
  bool nonpositive_arg = false;   // exp: the argument is <= 0 or NaN (x - max)
  std::vector<int> args;          // earlier instructions of the phase
  int buffer = -1;
  sym::Expr expr;  // kLoad: offset; kIndex: value; kCheckIndex: bound
  ir::Scalar value;
  int acc_phase = -1, acc = -1, acc_part = 0;
  int symbol = -1;
};

enum class Combine : uint8_t {
  kSum,         // float sums accumulate in f64, integer sums wrap in i64
  kProd,        // products: as sums, in f64 or wrapping in i64
  kMax,         // NaN propagates
  kMin,         // NaN propagates
  kMaxSkipNaN,  // softmax's max: NaN is skipped, -inf when empty
  kArgmax,      // first maximal index, NaN maximal
};

struct Reduction {
  Combine combine;
  int value;                // instruction reduced
  int index = -1;           // argmax: the index instruction (i64)
  ir::DType acc_dtype;      // accumulator's type
};

struct Store {
  int buffer;
  sym::Expr offset;
  int value;  // instruction; converted to the buffer's dtype by the producer
};

struct Phase {
  std::vector<int> vars;  // loop variable symbols, outermost first
  std::vector<sym::Expr> extents;
  std::vector<Inst> body;
  std::vector<Reduction> reductions;
  std::vector<Store> stores;
};

struct LoopStep {
  std::vector<int> outer_vars;  // split across threads; flattened row-major
  std::vector<sym::Expr> outer_extents;
  // Extents besides the outer ones whose 0 leaves the step nothing to do: a
  // pointwise step's innermost extent (before tiling, so in graph symbols).
  // A reduction's own axes are not here: empty, they still store identities.
  std::vector<sym::Expr> empty_if_zero;
  std::vector<Phase> phases;
  bool may_fail = false;  // has checks (gather bounds, integer pow)
  // Elements of work per outer iteration, for the thread grain.
  sym::Expr work_per_row = sym::Expr(1);
};

// A matmul operand as BLAS reads it: element `offset` into `buffer`, then
// strides per batch dim of the result (right-aligned; 0 where the operand
// broadcasts), per row and per column. Row or column stride is 1 (the other
// is BLAS's leading dimension, the operand transposed when rows are the
// contiguous ones), or the matrix has a single row or column.
struct MatmulOperand {
  int buffer = -1;
  sym::Expr offset = sym::Expr(0);
  std::vector<sym::Expr> batch_strides;
  sym::Expr row_stride = sym::Expr(0), col_stride = sym::Expr(1);
};

// C[b] = A[b] @ B[b], batch dims broadcast; C dense and row-major. B's
// buffer may hold the other float type than C's (float32 weights in a
// float64 product: LowerOptions::converting_operands): the backend
// converts B's elements as it reads them.
struct MatmulStep {
  MatmulOperand a, b;
  int c;
  std::vector<sym::Expr> batch;  // the result's batch dims
  sym::Expr m, n, k;
  // The next step is this product's epilogue: a pointwise step whose outer
  // loop is C's rows (batch and m, flattened) and whose inner loop is n, so
  // a CPU runs it on each block of rows right after BLAS wrote them, while
  // they are in cache. Other backends may run it as the step it is.
  bool epilogue = false;
  // What MatmulShape evaluates, in the order MatmulShape(step, evaluated)
  // reads it: m, n, k; per batch dim its size and the operands' strides;
  // the operands' offsets; their row and column strides.
  std::vector<sym::Expr> shape_exprs() const;
};

// A matmul step evaluated on a call: its sizes, each operand's offset,
// row and column strides, and per batch dim its stride (elements).
struct MatmulShape {
  int64_t m = 0, n = 0, k = 0;
  int64_t count = 1;  // batch matrices
  std::vector<int64_t> batch, a_stride, b_stride;
  int64_t a_offset = 0, b_offset = 0, a_row = 0, a_col = 1, b_row = 0, b_col = 1;
  MatmulShape(const MatmulStep& step, std::span<const int64_t> values);
  // From step.shape_exprs() evaluated, in their order (one value each).
  static MatmulShape evaluated(const MatmulStep& step, std::span<const int64_t> shape_values);
  // The operands' offsets (elements, `offset` included) for batch matrix
  // `index` of the first `dims` batch dims (row-major over them).
  std::pair<int64_t, int64_t> offsets(int64_t index, size_t dims) const;
  // The first of the trailing batch dims that one strided-batched product
  // covers: those whose operands' strides compose (a dense operand's do, a
  // broadcast one's are 0 along each) and whose sizes multiply to at most
  // `max_batch`; the last batch dim always (0 when there is none).
  size_t strided_batch_start(int64_t max_batch) const;

 private:
  MatmulShape(const MatmulStep& step, const int64_t* shape_values);
};

// out = softmax(f(q @ k)) @ v, with f pointwise (a scale, a mask by
// `where`, an additive bias: any fused chain that reads the scores at their
// own index), as one step: per batch matrix and tile of kTileQ queries, the
// scores of each tile of up to kTileK keys go to a scratch tile (BLAS), then
// `loops` (generated code) applies f there and updates the rows' online
// softmax, and BLAS adds the tile's probabilities times v into the rows'
// accumulators. No t x s buffer exists.
//
// `loops` runs over query rows (outer, absolute rows of the matrix) and
// reads five task symbols from `first_symbol` on: the flat batch index, the
// tile's first query row, its first key, its key count, and that count
// rounded up to a multiple of kKeyLanes. The probabilities' pass (exp)
// runs over the rounded count, so that its vector loop has no scalar
// remainder, reading cells past the keys that the runner set to -inf (exp
// gives 0 there, and the values' product reads only the keys). It leaves the
// tile's probabilities in the tile and, per row r of the tile, in `state`:
// [0][r] the running max, [1][r] the running sum, [2][r] the factor that
// rescales what was accumulated before, [3][r] the tile's own sum (0: the
// tile adds nothing).
struct AttentionStep {
  static constexpr int64_t kTileQ = 64, kTileK = 256;
  static constexpr int64_t kKeyLanes = 8;  // divides kTileK; a vector of f32, two of f64
  MatmulOperand q, k, v;  // q: t x d; k: d x s (the keys transposed); v: s x dv
  int out;                // [batch..., t, dv], dense
  int tile, state;        // kScratch buffers: kTileQ x kTileK scores, 4 x kTileQ
  int first_symbol;
  std::vector<sym::Expr> batch;
  sym::Expr t, s, d, dv;
};

// out = cumsum or cumprod of `in` along one dim, both dense: viewed as
// [outer, n, inner], each of the outer * inner lines of n elements is
// scanned in order, in the element type (NumPy's), integers wrapping; or
// the line sorted (sort: its values; argsort: their indices, i64). A
// backend runs it as a library routine, not generated code: a scan's
// loop-carried sum is nothing a loop vectorizer takes, nor is a sort.
struct ScanStep {
  ir::Op op = ir::Op::kCumsum;  // or kCumprod, kCummax, kCummin, kSort, kArgsort
  int in = -1, out = -1;
  sym::Expr outer, n, inner;
};

// A scatter along a dim, over dense buffers viewed as
// [outer, n, inner] (in, out) and [outer, m, inner] (values), index [m]
// (i32 or i64): out = in, then for each k in order, out's row index[k]
// set to (index_put: a repeated index keeps its last) or combined with
// (index_add, index_mul, index_max, index_min) values' row k. An index outside [0, n) fails the step (the
// reference then says which). A backend runs it as a routine.
struct ScatterStep {
  ir::Op op = ir::Op::kIndexPut;  // or kIndexAdd, kIndexMul, kIndexMax, kIndexMin
  int in = -1, index = -1, values = -1, out = -1;
  sym::Expr outer, n, m, inner;
};

// out = the elements of a domain that a mask sets, in row-major order:
// nonzero, their coordinates (i64, [count, rank]; the mask is any dtype,
// set where != 0); masked_select, the values there (a buffer of the
// values' dtype, [count]). Mask and values are read through their strides
// over the domain, 0 along a dim they broadcast. The count is a data-
// dependent size: it becomes the value of graph symbol `count` (unbacked,
// at most the domain's size), which later steps' extents and the buffers
// sized by it read. A backend runs it as a routine: a count per block of
// the domain, a prefix sum of the counts, then each block's fill.
struct CompactStep {
  // Elements of the domain per block (row-major), for counts and fills.
  static constexpr int64_t kBlock = int64_t{1} << 14;
  ir::Op op = ir::Op::kNonzero;  // or kMaskedSelect
  int mask = -1, values = -1;    // values: masked_select's only
  // Where a loop step before this one counted the mask (as it computed it,
  // from a chain folded into that step): i64, one count per block; -1 when
  // the backend counts.
  int counts = -1;
  std::vector<sym::Expr> shape;  // the domain
  std::vector<sym::Expr> mask_strides, value_strides;  // in elements
  int out = -1;
  int count = -1;  // the graph symbol it sets
  // The next step is this compaction's epilogue: a pointwise step whose
  // outer loop is the result's rows (the count) and that reads the result
  // only in the row it writes, so a CPU runs it on each block's rows right
  // after the block is filled, while they are in cache.
  bool epilogue = false;
};

struct Step {
  enum class Kind : uint8_t { kLoops, kMatmul, kAttention, kScan, kCompact, kScatter };
  explicit Step(Kind k) : kind(k) {}
  Kind kind;
  LoopStep loops;  // kLoops; kAttention: its tile's code
  MatmulStep matmul;
  AttentionStep attention;
  ScanStep scan;
  CompactStep compact;
  ScatterStep scatter;
  std::string label;  // the graph node it comes from, for messages
};

struct LoopProgram {
  int num_graph_symbols = 0;
  int num_symbols = 0;  // all numbered symbols, see above
  std::vector<Buffer> buffers;
  int num_inputs = 0, num_outputs = 0, num_temps = 0;
  // params[i] = (input, dim): symbol num_graph_symbols + i is that stride.
  std::vector<std::pair<int, int>> params;
  // Then symbols a step's runner sets per task (attention tiles), 0 elsewhere.
  int task_symbols = 0;
  // Per compact step, in order: the symbol its count sets and that count's
  // bound, over the graph's symbols (and earlier counts): the most elements
  // a buffer sized by it can need.
  std::vector<std::pair<int, sym::Expr>> count_bounds;
  std::vector<Step> steps;
  // Runtime checks whose failure the reference interpreter explains:
  // max/min/argmax over an empty axis, an error as in NumPy even where the
  // result is empty too (np.zeros((0, 0)).max(axis=0)).
  struct EmptyCheck {
    sym::Expr count;  // the reduced extent
  };
  std::vector<EmptyCheck> empty_checks;
  // A gather whose own result is empty reads none of its indices, which
  // NumPy checks all the same (np.zeros((0, 0))[[0]] is an IndexError):
  // with indices to check, the reference runs the call, and says which.
  struct UnreadIndices {
    sym::Expr elements, indices;  // the gather's result elements, its index count
  };
  std::vector<UnreadIndices> unread_indices;

  // Whether a step has runtime checks (a loop step's may_fail, a scatter's indices).
  bool has_checks() const {
    for (const Step& s : steps) {
      if (s.kind == Step::Kind::kScatter || (s.kind != Step::Kind::kMatmul && s.loops.may_fail)) return true;
    }
    return false;
  }
  // Whether a call may end with the reference interpreter running it: a
  // check above, or a loop step's own.
  bool may_defer() const { return !empty_checks.empty() || !unread_indices.empty() || has_checks(); }
  // Whether `e` reads a data-dependent size (a symbol a compact step sets).
  bool is_data_dependent(const sym::Expr& e) const;
  // Whether a check above fails on a call's symbol values: of those on
  // data-dependent sizes (`on_counts`, made once the compactions ran), or
  // of the others (made before any step).
  bool check_fails(std::span<const int64_t> values, bool on_counts) const;
  // The symbols generated code reads from its `syms` argument.
  int num_read_symbols() const { return num_graph_symbols + static_cast<int>(params.size()) + task_symbols; }

  // Its buffers and steps, one per line; without the steps' labels (which
  // name graph values) when `labels` is false.
  std::string dump(bool labels = true) const;
};

// The values of the symbols a kernel's code reads on a call: the graph's
// (`symbols`), then each strided input's stride (`p.params`), then the task
// symbols (0; their runner sets them).
std::vector<int64_t> symbol_values(const LoopProgram& p, std::span<const DLTensor* const> args, std::span<const int64_t> symbols);

// A loop step's outer iterations on a call: 0 when a 0 among its extents
// leaves it nothing to do (checked before any product: beside a 0, an empty
// tensor's other dims may be as large as int64 allows), nullopt when the
// count passes int64.
std::optional<int64_t> outer_rows(const LoopStep& step, std::span<const int64_t> values);
// The same from the step's outer extents and empty_if_zero, evaluated.
std::optional<int64_t> outer_rows(std::span<const int64_t> extents, std::span<const int64_t> empty_if_zero);

// Per buffer, the first and the last step that reads or writes it, or
// {-1, -1}. A matmul's epilogue counts as its product's step: the two run
// interleaved (a block's epilogue while other blocks multiply).
std::vector<std::pair<int, int>> buffer_lifetimes(const LoopProgram& p);

// Whether `e` is never negative in `p`: sizes, loop variables and checked
// indices are not; strides (params) may be.
bool is_nonnegative(const LoopProgram& p, sym::Expr e);

}  // namespace shapejit::backends::loops
