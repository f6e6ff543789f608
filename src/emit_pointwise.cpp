// KernelWriter, pointwise kernels: a grid-stride loop over runs of 16 bytes (one vector access per
// operand read contiguously), then one over the elements left (docs/design-notes.md, "Pointwise
// kernels in runs").
#include <algorithm>

#include "emit_kernel.h"

namespace tg::emit {

// One element per iteration: the whole kernel, or what the run loop leaves.
std::string KernelWriter::element_body(const std::string& indent) {
  push(indent);
  for (ValueId v : k_.outs) {
    std::string var = value_at(v, identity_index(layout_.domain.size()));
    line("tg::store(" + ident(v) + ", i, " + var + ");");
  }
  return pop();
}

std::string KernelWriter::pointwise_body() {
  std::vector<int64_t> all(layout_.domain.size());
  for (size_t k = 0; k < all.size(); ++k) all[k] = int64_t(k);
  const std::string thread = "int64_t(blockIdx.x) * blockDim.x + threadIdx.x", stride = "int64_t(gridDim.x) * blockDim.x";
  std::string out = "  const int64_t n = " + std::to_string(numel(layout_.domain)) + ";\n";
  std::string runs = lanes_ > 1 ? run_loop(all, thread, stride) : "";
  if (runs.empty()) lanes_ = 1;  // one element per thread: the grid is sized for elements
  std::string element = element_body("    ");
  std::string first = runs.empty() ? thread : "runs * " + std::to_string(lanes_) + " + " + thread;
  out += runs;
  out += "  for (int64_t i = " + first + "; i < n; i += " + stride + ") {\n";
  out += dim_declarations(element, loop_dims_, all, "    ");
  out += element + "  }\n";
  return out;
}

// The 16-byte loop: each thread takes a run of lanes_ neighbouring elements, loads each
// contiguous operand's run with one access, computes the lanes, stores each result's run with
// one access. Only when all those pointers are 16-byte aligned; "" when nothing would be wide.
// A packed mask's run is lanes_ bits, which the warp gathers into whole words (no atomics); the
// loop then covers whole warps' worth of runs only, so every lane of a warp takes part.
std::string KernelWriter::run_loop(const std::vector<int64_t>& all, const std::string& thread, const std::string& stride) {
  in_run_ = true;
  run_loads_.clear();
  run_loads_of_.clear();
  run_arrays_.clear();
  lane_dims_.assign(layout_.domain.size(), IndexExpr());
  run_var_ = IndexExpr::named("run", 0, std::max<int64_t>(numel(layout_.domain) / lanes_ - 1, 0));
  define_dims(lane_dims_, run_var_ * lanes_ + IndexExpr::named("lane", 0, lanes_ - 1), layout_.domain, all);
  push("      ");
  std::vector<ValueId> run_stores, run_bits;
  for (ValueId v : k_.outs) {
    const Value& val = t_.value(v);
    std::string var = value_at(v, identity_index(layout_.domain.size()));
    if (val.bit_packed) {
      line(local(Role::run_bits, v) + " |= unsigned(" + var + ") << lane;");
      run_bits.push_back(v);
    } else {
      line(local(Role::run_out, v) + "[lane] = " + var + ";");
      run_stores.push_back(v);
    }
  }
  std::string lane_body = pop();
  in_run_ = false;
  if (run_loads_.empty() && run_stores.empty() && run_bits.empty()) return "";
  const std::string L = std::to_string(lanes_);
  std::vector<ValueId> wide;  // (each operand once, in the order of first use)
  for (size_t i = 0; i < run_loads_.size(); ++i)
    if (run_loads_of_.at(run_loads_[i].value).front() == i) wide.push_back(run_loads_[i].value);
  wide.insert(wide.end(), run_stores.begin(), run_stores.end());
  const std::string aligned = all_aligned(wide);
  std::string out;
  out += "  // Runs of " + L + " elements, one 16-byte (or narrower) access per operand, when aligned;\n";
  out += "  // the loop after this one takes the rest, or everything.\n";
  if (run_bits.empty()) {
    out += "  const int64_t runs = " + aligned + " ? n / " + L + " : 0;\n";
  } else {
    out += "  // Whole warps of runs only: their lanes gather each mask's bits into words together.\n";
    std::string whole_warps = "n / (32 * " + L + ") * 32";
    out += "  const int64_t runs = " + (aligned.empty() ? whole_warps : aligned + " ? " + whole_warps + " : 0") + ";\n";
  }
  out += "  for (int64_t run = " + thread + "; run < runs; run += " + stride + ") {\n";
  for (ValueId v : run_bits) out += "    unsigned " + local(Role::run_bits, v) + " = 0;\n";
  for (const RunLoad& r : run_loads_) {
    out += "    " + ctype(t_.value(r.value).dtype) + " " + r.array + "[" + L + "];\n";
    out += "    tg::load_run(" + ident(r.value) + ", " + r.start.text() + ", " + r.array + ");\n";
  }
  for (ValueId v : run_stores) out += "    " + ctype(t_.value(v).dtype) + " " + local(Role::run_out, v) + "[" + L + "];\n";
  out += "    TG_UNROLL for (int lane = 0; lane < " + L + "; ++lane) {\n";
  const std::string dims = dim_declarations(lane_body, loop_dims_, all, "      ");
  if (uses_word(dims + lane_body, "i")) out += "      const int64_t i = run * " + L + " + lane;\n";
  out += dims + lane_body + "    }\n";
  for (ValueId v : run_stores) out += "    tg::store_run(" + ident(v) + ", run * " + L + ", " + local(Role::run_out, v) + ");\n";
  for (ValueId v : run_bits)
    out += "    tg::store_run_bits<" + L + ">(" + ident(v) + ", run * " + L + ", " + local(Role::run_bits, v) + ");\n";
  out += "  }\n";
  return out;
}

// The array holding the run of v that starts at `start`, declared for the run loop.
const std::string& KernelWriter::run_array(ValueId v, const IndexExpr& start) {
  std::vector<size_t>& loads = run_loads_of_[v];
  for (size_t i : loads)
    if (run_loads_[i].start == start) return run_loads_[i].array;
  const std::string base = local(Role::run_in, v);
  std::string name = base;
  for (int k = 2; run_arrays_.count(name); ++k) name = base + "_" + std::to_string(k);
  run_arrays_.insert(name);
  loads.push_back(run_loads_.size());
  run_loads_.push_back({v, start, name});
  return run_loads_.back().array;
}

// In a pointwise kernel's run loop: the element of `val` where the run its lanes read at `index`
// starts, as code in `run`, when lane k reads element start + k and start is a multiple of the
// run length (so aligned where the pointer is), each element no wider than 16 bytes allow: an
// operand read at the kernel's own element (i, i + c, a contiguous reshape), or a row of a
// broadcast whose length is a multiple of the run's.
std::optional<IndexExpr> KernelWriter::run_start(const Value& val, const Index& index) const {
  if (val.bit_packed || lanes_ * dtype_bytes(val.dtype) > 16) return std::nullopt;
  if (val.shape == layout_.domain && is_identity(index)) return run_var_ * lanes_;
  const IndexExpr lane = IndexExpr::named("lane", 0, lanes_ - 1);
  const IndexExpr start = linear_index(index, val.shape).with_dims(lane_dims_) + lane * -1;
  // (Code the lanes compute, a pad's or cat's piece, may differ from lane to lane: only `run` may appear.)
  for (const std::string& name : start.names())
    if (name != "run") return std::nullopt;
  return start.multiple_of(lanes_) ? std::optional<IndexExpr>(start) : std::nullopt;
}

}  // namespace tg::emit
