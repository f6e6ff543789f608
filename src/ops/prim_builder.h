// PrimBuilder: the GradBuilder passes write prims with. It appends typed ops to a list (each
// output typed by its prim's own shape rule, named fresh from `prefix`), with the provenance
// (JSON pointer, tags) of the op being differentiated or lowered.
#pragma once
#include <unordered_map>
#include <set>
#include <string>
#include <vector>

#include "ops/op_table.h"

namespace tg {

class PrimBuilder : public GradBuilder {
 public:
  // `taken` holds every name in use in `t`; fresh names are added to it.
  PrimBuilder(Trace& t, NameSet& taken, std::string prefix) : t_(t), taken_(taken), prefix_(std::move(prefix)) {}

  const Trace& trace() const override { return t_; }
  Trace& mutable_trace() { return t_; }
  std::vector<ValueId> emit(std::string_view id, std::vector<Arg> args) override;

  // Provenance for what is emitted next: the op it differentiates or lowers.
  void differentiating(const Op& op);
  // Appends an op whose outputs are already typed values of the trace (an inlined body's).
  void append(Op op) { ops_.push_back(std::move(op)); }
  NameSet& taken() { return taken_; }
  std::string fresh(const std::string& base);
  std::string fresh_named(const std::string& name);
  std::vector<Op> take_ops() { return std::move(ops_); }

 private:
  Trace& t_;
  NameSet& taken_;
  std::string prefix_;
  std::vector<Op> ops_;
  int counter_ = 0;
  std::unordered_map<std::string, int> next_suffix_;  // fresh_named: the suffix to try next, by name
  std::string where_, rule_of_;
  std::vector<std::string> tags_;
};

// Lowers a composite (torch-level) op to prims named `<output>__<n>`, its outputs bound to the
// op's own output values; tags and provenance carried over.
std::vector<Op> lower_composite(Trace& t, NameSet& taken, const Op& op);

}  // namespace tg
