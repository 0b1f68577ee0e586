#include "backends/loops/loop_ir.h"

#include <algorithm>

#include "core/support/status.h"

namespace shapejit::backends::loops {

std::string LoopProgram::dump(bool labels) const {
  std::string s;
  for (size_t i = 0; i < buffers.size(); ++i) {
    const Buffer& b = buffers[i];
    static const char* kinds[] = {"input", "output", "temp", "scratch"};
    s += "buffer " + std::to_string(i) + ": " + kinds[static_cast<int>(b.kind)] + " " + std::to_string(b.index) + " " + ir::dtype_name(b.dtype) + " [";
    for (size_t d = 0; d < b.shape.size(); ++d) s += (d ? ", " : "") + b.shape[d].str() + ":" + b.strides[d].str();
    s += "]\n";
  }
  for (const Step& st : steps) {
    s += "step " + (labels ? st.label : std::string()) + (st.kind == Step::Kind::kMatmul ? (st.matmul.epilogue ? " (blas, epilogue next)" : " (blas)") : "") + "\n";
    auto operand = [&](const char* name, const MatmulOperand& o) {
      s += std::string("  ") + name + " = b" + std::to_string(o.buffer) + "[" + o.offset.str() + " + batch(";
      for (size_t d = 0; d < o.batch_strides.size(); ++d) s += (d ? ", " : "") + o.batch_strides[d].str();
      s += ") rows:" + o.row_stride.str() + " cols:" + o.col_stride.str() + "]\n";
    };
    if (st.kind == Step::Kind::kMatmul) {
      operand("a", st.matmul.a);
      operand("b", st.matmul.b);
      continue;
    }
    if (st.kind == Step::Kind::kScan) {
      const ScanStep& c = st.scan;
      s += std::string("  ") + ir::op_name(c.op) + " b" + std::to_string(c.in) + " -> b" + std::to_string(c.out) + " [" + c.outer.str() + ", " +
           c.n.str() + ", " + c.inner.str() + "]\n";
      continue;
    }
    if (st.kind == Step::Kind::kScatter) {
      const ScatterStep& c = st.scatter;
      s += std::string("  ") + ir::op_name(c.op) + " b" + std::to_string(c.in) + " at b" + std::to_string(c.index) + " of b" + std::to_string(c.values) +
           " -> b" + std::to_string(c.out) + " [" + c.outer.str() + ", " + c.n.str() + " (" + c.m.str() + "), " + c.inner.str() + "]\n";
      continue;
    }
    if (st.kind == Step::Kind::kCompact) {
      const CompactStep& c = st.compact;
      s += std::string("  ") + ir::op_name(c.op) + " b" + std::to_string(c.mask) + (c.values >= 0 ? ", b" + std::to_string(c.values) : "") +
           (c.counts >= 0 ? ", counted in b" + std::to_string(c.counts) : "") +
           " -> b" + std::to_string(c.out) + ", count s" + std::to_string(c.count) + (c.epilogue ? ", epilogue next" : "") + ", over [";
      for (size_t d = 0; d < c.shape.size(); ++d) {
        s += (d ? ", " : "") + c.shape[d].str() + ":" + c.mask_strides[d].str() + (c.values >= 0 ? ":" + c.value_strides[d].str() : "");
      }
      s += "]\n";
      continue;
    }
    if (st.kind == Step::Kind::kAttention) {
      const AttentionStep& a = st.attention;
      s += "  attention into b" + std::to_string(a.out) + ", t " + a.t.str() + ", s " + a.s.str() + ", tile b" + std::to_string(a.tile) +
           ", state b" + std::to_string(a.state) + "\n";
      operand("q", a.q);
      operand("k", a.k);
      operand("v", a.v);
    }
    s += "  outer";
    for (size_t d = 0; d < st.loops.outer_vars.size(); ++d) s += " s" + std::to_string(st.loops.outer_vars[d]) + "<" + st.loops.outer_extents[d].str();
    s += "\n";
    for (const Phase& ph : st.loops.phases) {
      s += "  phase";
      for (size_t d = 0; d < ph.vars.size(); ++d) s += " s" + std::to_string(ph.vars[d]) + "<" + ph.extents[d].str();
      s += ": " + std::to_string(ph.body.size()) + " insts, " + std::to_string(ph.reductions.size()) + " reductions\n";
      for (const Inst& i : ph.body) {
        if (i.kind == InstKind::kLoad) s += "    load b" + std::to_string(i.buffer) + "[" + i.expr.str() + "]\n";
      }
      for (const Store& o : ph.stores) s += "    store b" + std::to_string(o.buffer) + "[" + o.offset.str() + "]\n";
    }
  }
  return s;
}

std::optional<int64_t> outer_rows(std::span<const int64_t> extents, std::span<const int64_t> empty_if_zero) {
  // A 0 wins over an overflow seen before it: the product is only reported
  // once every extent is known to be positive.
  int64_t rows = 1;
  bool overflow = false;
  for (const int64_t n : extents) {
    if (n <= 0) return 0;
    overflow |= __builtin_mul_overflow(rows, n, &rows);
  }
  for (const int64_t n : empty_if_zero) {
    if (n <= 0) return 0;
  }
  if (overflow) return std::nullopt;
  return rows;
}

std::optional<int64_t> outer_rows(const LoopStep& step, std::span<const int64_t> values) {
  std::vector<int64_t> extents, empty;
  for (const sym::Expr& e : step.outer_extents) extents.push_back(sym::evaluate(e, values));
  for (const sym::Expr& e : step.empty_if_zero) empty.push_back(sym::evaluate(e, values));
  return outer_rows(extents, empty);
}

std::vector<int64_t> symbol_values(const LoopProgram& p, std::span<const DLTensor* const> args, std::span<const int64_t> symbols) {
  std::vector<int64_t> values(symbols.begin(), symbols.begin() + p.num_graph_symbols);
  for (auto [input, dim] : p.params) {
    const DLTensor& t = *args[input];
    int64_t stride = 1;
    if (t.strides) {
      stride = t.strides[dim];
    } else {
      for (int d = t.ndim - 1; d > dim; --d) stride *= t.shape[d];
    }
    values.push_back(stride);
  }
  values.resize(static_cast<size_t>(p.num_read_symbols()), 0);
  return values;
}

std::vector<sym::Expr> MatmulStep::shape_exprs() const {
  std::vector<sym::Expr> e = {m, n, k};
  for (size_t i = 0; i < batch.size(); ++i) e.insert(e.end(), {batch[i], a.batch_strides[i], b.batch_strides[i]});
  e.insert(e.end(), {a.offset, b.offset, a.row_stride, a.col_stride, b.row_stride, b.col_stride});
  return e;
}

MatmulShape::MatmulShape(const MatmulStep& mm, std::span<const int64_t> values)
    : MatmulShape(mm, [&] {
        std::vector<int64_t> v;
        for (const sym::Expr& e : mm.shape_exprs()) v.push_back(sym::evaluate(e, values));
        return v;
      }().data()) {}

MatmulShape MatmulShape::evaluated(const MatmulStep& step, std::span<const int64_t> shape_values) {
  SJ_CHECK(shape_values.size() == 9 + 3 * step.batch.size(), "a matmul's shape from the wrong number of values");
  return MatmulShape(step, shape_values.data());
}

MatmulShape::MatmulShape(const MatmulStep& mm, const int64_t* e) : m(e[0]), n(e[1]), k(e[2]) {
  const size_t nb = mm.batch.size();
  batch.resize(nb);
  a_stride.resize(nb);
  b_stride.resize(nb);
  e += 3;
  for (size_t i = 0; i < nb; ++i, e += 3) {
    batch[i] = e[0];
    count *= batch[i];
    a_stride[i] = e[1];
    b_stride[i] = e[2];
  }
  a_offset = e[0];
  b_offset = e[1];
  a_row = e[2];
  a_col = e[3];
  b_row = e[4];
  b_col = e[5];
}

std::pair<int64_t, int64_t> MatmulShape::offsets(int64_t index, size_t dims) const {
  int64_t a = a_offset, b = b_offset;
  for (size_t i = dims; i-- > 0;) {
    const int64_t at = index % batch[i];
    index /= batch[i];
    a += at * a_stride[i];
    b += at * b_stride[i];
  }
  return {a, b};
}

size_t MatmulShape::strided_batch_start(int64_t max_batch) const {
  if (batch.empty()) return 0;
  size_t first = batch.size() - 1;
  int64_t inner = batch[first];
  const int64_t sa = a_stride[first], sb = b_stride[first];
  while (first > 0 && a_stride[first - 1] == sa * inner && b_stride[first - 1] == sb * inner && batch[first - 1] <= max_batch / std::max<int64_t>(inner, 1)) {
    inner *= batch[--first];
  }
  return first;
}

std::vector<std::pair<int, int>> buffer_lifetimes(const LoopProgram& p) {
  std::vector<std::pair<int, int>> life(p.buffers.size(), {-1, -1});
  auto use = [&](int buffer, int step) {
    if (buffer < 0) return;
    auto& [first, last] = life[buffer];
    if (first < 0) first = step;
    last = step;
  };
  auto use_loops = [&](const LoopStep& l, int step) {
    for (const Phase& ph : l.phases) {
      for (const Inst& in : ph.body) {
        if (in.kind == InstKind::kLoad) use(in.buffer, step);
      }
      for (const Store& st : ph.stores) use(st.buffer, step);
    }
  };
  int product = -1;  // the matmul or compaction whose epilogue is next
  for (int s = 0; s < static_cast<int>(p.steps.size()); ++s) {
    const Step& step = p.steps[s];
    const int at = product >= 0 ? product : s;
    product = -1;
    switch (step.kind) {
      case Step::Kind::kLoops: use_loops(step.loops, at); break;
      case Step::Kind::kMatmul:
        for (int b : {step.matmul.a.buffer, step.matmul.b.buffer, step.matmul.c}) use(b, at);
        if (step.matmul.epilogue) product = at;
        break;
      case Step::Kind::kAttention: {
        const AttentionStep& a = step.attention;
        for (int b : {a.q.buffer, a.k.buffer, a.v.buffer, a.out, a.tile, a.state}) use(b, at);
        use_loops(step.loops, at);
        break;
      }
      case Step::Kind::kScan:
        use(step.scan.in, at);
        use(step.scan.out, at);
        break;
      case Step::Kind::kScatter:
        for (int b : {step.scatter.in, step.scatter.index, step.scatter.values, step.scatter.out}) use(b, at);
        break;
      case Step::Kind::kCompact:
        for (int b : {step.compact.mask, step.compact.values, step.compact.counts, step.compact.out}) use(b, at);
        if (step.compact.epilogue) product = at;
        break;
    }
  }
  return life;
}

bool LoopProgram::is_data_dependent(const sym::Expr& e) const {
  const std::vector<int> used = sym::symbols_of(e);
  for (const Step& s : steps) {
    if (s.kind == Step::Kind::kCompact && std::binary_search(used.begin(), used.end(), s.compact.count)) return true;
  }
  return false;
}

bool LoopProgram::check_fails(std::span<const int64_t> values, bool on_counts) const {
  // On every call: without compactions no check reads a count, and none is
  // looked through for one.
  const bool counts = !count_bounds.empty();
  if (on_counts && !counts) return false;
  const auto on = [&](const sym::Expr& e) { return counts && is_data_dependent(e); };
  for (const EmptyCheck& c : empty_checks) {
    if (on(c.count) == on_counts && sym::evaluate(c.count, values) == 0) return true;
  }
  for (const UnreadIndices& c : unread_indices) {
    if (on(c.elements) == on_counts && sym::evaluate(c.elements, values) == 0 && sym::evaluate(c.indices, values) != 0) return true;
  }
  return false;
}

bool is_nonnegative(const LoopProgram& p, sym::Expr e) {
  using sym::Kind;
  switch (e.kind()) {
    case Kind::kConst: return e.const_value() >= 0;
    case Kind::kSymbol: {
      const int id = e.symbol_id();
      return id < p.num_graph_symbols || id >= p.num_graph_symbols + static_cast<int>(p.params.size());
    }
    case Kind::kAdd:
      if (e.add_constant() < 0) return false;
      for (size_t i = 0; i < e.num_args(); ++i) {
        if (e.coeff(i) < 0 || !is_nonnegative(p, e.arg(i))) return false;
      }
      return true;
    default:
      for (size_t i = 0; i < e.num_args(); ++i) {
        if (!is_nonnegative(p, e.arg(i))) return false;
      }
      return true;
  }
}

}  // namespace shapejit::backends::loops
