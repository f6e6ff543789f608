// KernelWriter, pointwise kernels: a grid-stride loop over runs of 16 bytes (one vector access per
// operand read contiguously), then one over the elements left; both call the kernel's element
// function, its element body written once (docs/design-notes.md, "Pointwise kernels in runs").
#include <algorithm>
#include <cctype>
#include <unordered_set>

#include "codegen/emit_kernel.h"

namespace tg::emit {

namespace {

// The identifiers (and numbers) in `text`, each once: which of many names a body uses, in one
// pass over it rather than one per name.
std::unordered_set<std::string> words_in(const std::string& text) {
  auto part = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  std::unordered_set<std::string> words;
  for (size_t at = 0; at < text.size();) {
    size_t end = at;
    while (end < text.size() && part(text[end])) ++end;
    if (end > at) words.emplace(text, at, end - at);
    at = end + 1;
  }
  return words;
}

}  // namespace

// Element i's results, written once as a function the run loop's lanes and the element loop both
// call (one element per thread: the element loop only). What the run loop reads a run at a time
// comes in as values (its lanes pass r_x[lane], the element loop the element it loads); the
// function reads everything else through the kernel's own parameters, and hands its results back
// through references (out_<name>), which the callers store.
std::string KernelWriter::element_function(bool in_runs) {
  const std::vector<int64_t> all = all_dims(layout_.domain);
  in_run_ = in_runs;
  run_loads_.clear();
  run_loads_of_.clear();
  run_arrays_.clear();
  if (in_runs) {
    lane_dims_.assign(layout_.domain.size(), IndexExpr());
    run_var_ = IndexExpr::named("run", 0, std::max<int64_t>(numel(layout_.domain) / lanes_ - 1, 0));
    define_dims(lane_dims_, run_var_ * lanes_ + IndexExpr::named("lane", 0, lanes_ - 1), layout_.domain, all);
  }
  push("  ");
  for (ValueId v : k_.outs) line(local(Role::result, v) + " = " + value_at(v, identity_index(layout_.domain.size())) + ";");
  std::string body = pop();
  in_run_ = false;
  body = dim_declarations(body, loop_dims_, all, "  ") + body;
  const std::unordered_set<std::string> used = words_in(body);
  element_takes_i_ = used.count("i") > 0;
  std::vector<std::string> params;
  if (element_takes_i_) params.push_back("int64_t i");
  for (const RunLoad& r : run_loads_) params.push_back(ctype(t_.value(r.value).dtype) + " " + r.param);
  element_args_.clear();
  for (const Arg& a : k_.args) {
    if (!used.count(ident(a.value))) continue;
    element_args_.push_back(a.value);
    params.push_back(parameter(a.value, false));
  }
  for (ValueId v : k_.outs) params.push_back(ctype(t_.value(v).dtype) + "& " + local(Role::result, v));
  const std::string head = "__device__ __forceinline__ void " + tg::ident(Role::element_function, k_.label) + "(";
  return wrapped_list("", head, params, ") {") + "\n" + body + "}\n";
}

// A call of the element function at element `i` (code), each value parameter `read(r)`, each
// result into `result(v)`, as a statement written after `indent`.
std::string KernelWriter::element_call(const std::string& indent, const std::string& i, const std::function<std::string(const RunLoad&)>& read,
                                       const std::function<std::string(ValueId)>& result) const {
  std::vector<std::string> args;
  if (element_takes_i_) args.push_back(i);
  for (const RunLoad& r : run_loads_) args.push_back(read(r));
  for (ValueId v : element_args_) args.push_back(ident(v));
  for (ValueId v : k_.outs) args.push_back(result(v));
  return wrapped_list(indent, tg::ident(Role::element_function, k_.label) + "(", args, ");");
}

std::string KernelWriter::pointwise_body() {
  const std::string thread = "int64_t(blockIdx.x) * blockDim.x + threadIdx.x", stride = "int64_t(gridDim.x) * blockDim.x";
  element_function_ = element_function(lanes_ > 1);
  std::string out = "  const int64_t n = " + std::to_string(numel(layout_.domain)) + ";\n";
  std::string runs = lanes_ > 1 ? run_loop(thread, stride) : "";
  if (runs.empty()) lanes_ = 1;  // one element per thread: the grid is sized for elements
  std::string first = runs.empty() ? thread : "runs * " + std::to_string(lanes_) + " + " + thread;
  out += runs;
  out += "  for (int64_t i = " + first + "; i < n; i += " + stride + ") {\n";
  out += element_loop_body("    ");
  return out + "  }\n";
}

// The element loop's iteration: element i's value parameters loaded, the call, its results stored.
std::string KernelWriter::element_loop_body(const std::string& indent) {
  push(indent);
  std::vector<std::string> reads;
  for (const RunLoad& r : run_loads_) reads.push_back("tg::load(" + ident(r.value) + ", " + offset(t_.value(r.value), r.index) + ")");
  for (ValueId v : k_.outs) line(ctype(t_.value(v).dtype) + " " + local(Role::element, v) + ";");
  size_t next = 0;
  line(element_call(indent, "i", [&](const RunLoad&) { return reads[next++]; }, [&](ValueId v) { return local(Role::element, v); }));
  for (ValueId v : k_.outs) line("tg::store(" + ident(v) + ", i, " + local(Role::element, v) + ");");
  std::string code = pop();
  return dim_declarations(code, loop_dims_, all_dims(layout_.domain), indent) + code;
}

// The 16-byte loop: each thread takes a run of lanes_ neighbouring elements, loads each
// contiguous operand's run with one access, computes the lanes, stores each result's run with
// one access. Only when all those pointers are 16-byte aligned; "" when nothing would be wide.
// A packed mask's run is lanes_ bits, which the warp gathers into whole words (no atomics); the
// loop then covers whole warps' worth of runs only, so every lane of a warp takes part.
std::string KernelWriter::run_loop(const std::string& thread, const std::string& stride) {
  std::vector<ValueId> run_stores, run_bits;
  for (ValueId v : k_.outs) (t_.value(v).bit_packed ? run_bits : run_stores).push_back(v);
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
  out += "    TG_UNROLL for (int lane = 0; lane < " + L + "; ++lane) {\n" + lane_body("      ") + "    }\n";
  for (ValueId v : run_stores) out += "    tg::store_run(" + ident(v) + ", run * " + L + ", " + local(Role::run_out, v) + ");\n";
  for (ValueId v : run_bits)
    out += "    tg::store_run_bits<" + L + ">(" + ident(v) + ", run * " + L + ", " + local(Role::run_bits, v) + ");\n";
  out += "  }\n";
  return out;
}

// A lane of the run loop: its element from the runs' elements, its results into the runs of
// results (w_<name>[lane]) or a mask's bits (b_<name>).
std::string KernelWriter::lane_body(const std::string& indent) const {
  std::string out;
  for (ValueId v : k_.outs)
    if (t_.value(v).bit_packed) out += indent + ctype(t_.value(v).dtype) + " " + local(Role::element, v) + ";\n";
  auto result = [&](ValueId v) { return t_.value(v).bit_packed ? local(Role::element, v) : local(Role::run_out, v) + "[lane]"; };
  out += indent + element_call(indent, "run * " + std::to_string(lanes_) + " + lane", [](const RunLoad& r) { return r.array + "[lane]"; }, result) + "\n";
  for (ValueId v : k_.outs)
    if (t_.value(v).bit_packed) out += indent + local(Role::run_bits, v) + " |= unsigned(" + local(Role::element, v) + ") << lane;\n";
  return out;
}

// The run of v that starts at `start`, loaded for the run loop (r_<name>, numbered where one
// operand is read at several starts); its element is a value parameter of the element function.
std::string KernelWriter::run_load(ValueId v, const IndexExpr& start, const Index& index) {
  std::vector<size_t>& loads = run_loads_of_[v];
  for (size_t i : loads)
    if (run_loads_[i].start == start) return run_loads_[i].param;
  const std::string base = local(Role::run_in, v);
  std::string name = base;
  for (int k = 2; run_arrays_.count(name); ++k) name = base + "_" + std::to_string(k);
  run_arrays_.insert(name);
  loads.push_back(run_loads_.size());
  run_loads_.push_back({v, start, name, fresh_name(v), index});
  return run_loads_.back().param;
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
