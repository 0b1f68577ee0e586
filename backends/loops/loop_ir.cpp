#include "backends/loops/loop_ir.h"

namespace shapejit::backends::loops {

std::string Program::dump() const {
  std::string s;
  for (size_t i = 0; i < buffers.size(); ++i) {
    const Buffer& b = buffers[i];
    static const char* kinds[] = {"input", "output", "temp"};
    s += "buffer " + std::to_string(i) + ": " + kinds[static_cast<int>(b.kind)] + " " + std::to_string(b.index) + " " + ir::dtype_name(b.dtype) + " [";
    for (size_t d = 0; d < b.shape.size(); ++d) s += (d ? ", " : "") + b.shape[d].str() + ":" + b.strides[d].str();
    s += "]\n";
  }
  for (const Step& st : steps) {
    s += "step " + st.label + (st.kind == Step::Kind::kMatmul ? " (blas)" : "") + "\n";
    if (st.kind != Step::Kind::kLoops) continue;
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

}  // namespace shapejit::backends::loops
