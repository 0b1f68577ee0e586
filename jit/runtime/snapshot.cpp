#include "jit/runtime/snapshot.h"

#include <algorithm>

#include "jit/runtime/entry.h"

namespace shapejit::runtime {

std::unique_ptr<Snapshot> Snapshot::with(const Snapshot* base, const Entry& e) {
  auto next = std::make_unique<Snapshot>();
  if (base) *next = *base;
  ++next->version;
  next->tree.add(static_cast<int>(next->entries.size()), e.guards);
  next->entries.push_back(&e);
  // Adding may have changed the tree's flat layout: every entry's symbols
  // are placed again.
  next->flat_symbols.clear();
  if (const std::vector<int32_t>* offsets = next->tree.flat_offsets()) {
    for (const Entry* entry : next->entries) {
      std::vector<int32_t> flat;
      for (auto [input, dim] : entry->symbol_sources) flat.push_back(input < 0 ? -1 : (*offsets)[input] + dim);
      next->flat_symbols.push_back(std::move(flat));
    }
  }
  return next;
}

std::unique_ptr<Snapshot> Snapshot::replacing(const Entry* from, const Entry* to) const {
  auto next = std::make_unique<Snapshot>(*this);
  ++next->version;
  std::replace(next->entries.begin(), next->entries.end(), from, to);
  return next;
}

void SnapshotCell::publish(std::unique_ptr<Snapshot> next) {
  current_.store(next.get(), std::memory_order_seq_cst);
  if (live_) retired_.push_back(std::move(live_));
  live_ = std::move(next);
  // A reader that arrives after this load reads the new pointer (both are
  // seq_cst); none is left holding a retired one.
  if (readers_.load(std::memory_order_seq_cst) == 0) retired_.clear();
}

}  // namespace shapejit::runtime
